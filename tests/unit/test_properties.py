"""Property tests (hypothesis) of the numerically delicate pieces, each against an obviously-correct
reference written here in plain Python / float64:

- the masked softmax both attentions use;
- the intra-temporal attention (its log-space running sum) and the intra-decoder attention over steps;
- the copy mixture (copy_mixture.py, CopyGenerator, PointerGenerator), its fused gold / argmax paths;
- the beam's n-gram blocking and per-step token rules (decoding.py).

Inputs include rows with one allowed position, rows with none, scores of +-1e4 and +-inf / NaN / 3e38
in padded positions, switch logits of +-1e4. The runs are derandomized, so CI is reproducible.
"""
import math

import pytest
import torch
import torch.nn as nn
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.references import masked_softmax_reference
from onmt.constants import BOS, EOS, PAD, UNK
from onmt.fused import step_mixture
from onmt.models.fused import copy_gold_log_prob
from onmt.models.rnn_decoder import DecoderOutput
from onmt.modules.copy_generator import CopyGenerator
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, first_occurrence, generation_log_probs
from onmt.modules.masked_softmax import masked_softmax
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.fused import FusedPointerGenerator
from onmt.reinforced.intra_attention import IntraDecoderAttention, IntraTemporalAttention
from onmt.translate.decoding import NEG_INF, apply_rules, block_ngrams_

INF, NAN = float("inf"), float("nan")

PROPS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MORE = settings(PROPS, max_examples=150)   # the cheap ones

# scores of allowed positions: anything finite up to +-1e4, the extremes themselves often
FINITE = st.one_of(st.floats(-1e4, 1e4, allow_nan=False, width=32), st.sampled_from([1e4, -1e4, 0.0]))
NEAR_LOW = st.floats(0, 50, width=32).map(lambda x: x - 1e4)
NEAR_HIGH = st.floats(0, 50, width=32).map(lambda x: 1e4 - x)
# scores of masked positions: anything at all
GARBAGE = st.one_of(FINITE, st.sampled_from([INF, -INF, NAN, 3e38, -3e38]))


@st.composite
def masks(draw, rows, cols, allow_empty=True):
    """(rows, cols) bool: each row all allowed, random, exactly one allowed, or (allow_empty) none."""
    kinds = ["all", "random", "one"] + (["none"] if allow_empty else [])
    out = []
    for _ in range(rows):
        kind = draw(st.sampled_from(kinds))
        if kind == "all":
            row = [True] * cols
        elif kind == "none":
            row = [False] * cols
        elif kind == "one":
            k = draw(st.integers(0, cols - 1))
            row = [i == k for i in range(cols)]
        else:
            row = draw(st.lists(st.booleans(), min_size=cols, max_size=cols))
            if not allow_empty and not any(row):
                row[draw(st.integers(0, cols - 1))] = True
        out.append(row)
    return torch.tensor(out, dtype=torch.bool)


@st.composite
def masked_scores(draw):
    B, S = draw(st.integers(1, 5)), draw(st.integers(1, 8))
    mask = draw(masks(B, S))
    values = []
    for row in mask.tolist():
        # a row of anything finite, or one whose allowed scores all sit near -1e4 / +1e4
        style = draw(st.sampled_from([FINITE, FINITE, NEAR_LOW, NEAR_HIGH]))
        values.append([draw(style if m else GARBAGE) for m in row])
    return torch.tensor(values, dtype=torch.float64), mask


# ---------------------------------------------------------------------------------------------------
# 1. masked softmaxes

TOL = {torch.float16: 2e-3, torch.float32: 2e-6, torch.float64: 1e-12}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@PROPS
@given(case=masked_scores(), transpose=st.booleans())
def test_masked_softmax_is_the_softmax_over_allowed_positions(dtype, case, transpose):
    scores, mask = case
    x = scores.to(dtype)
    ref = masked_softmax_reference(x.double(), mask)  # of the scores as the dtype rounds them
    x = x.requires_grad_(dtype != torch.float16)
    got = masked_softmax(x.t(), mask.t(), dim=0).t() if transpose else masked_softmax(x, mask)
    assert got.shape == scores.shape
    assert torch.isfinite(got).all()
    assert (got[~mask] == 0).all()                                       # exactly 0 where masked
    has_any = mask.any(1)
    assert (got[~has_any] == 0).all()                                    # empty row: zeros, no NaN
    tol = TOL[dtype]
    assert torch.allclose(got.double().sum(1)[has_any], torch.ones(int(has_any.sum()), dtype=torch.float64),
                          atol=tol * scores.size(1))
    assert torch.allclose(got.double(), ref, atol=tol, rtol=0)
    if dtype == torch.float16:
        return
    # gradient: finite, 0 where masked, the softmax Jacobian p_i (w_i - sum_j p_j w_j) where allowed
    w = torch.linspace(-1, 1, scores.numel(), dtype=torch.float64).view(scores.shape)
    (got * w.to(got.dtype)).sum().backward()
    grad = x.grad.double()
    assert torch.isfinite(grad).all() and (grad[~mask] == 0).all()
    ref_grad = ref * (w - (ref * w).sum(1, keepdim=True))
    assert torch.allclose(grad, ref_grad, atol=10 * tol, rtol=0)


# ---------------------------------------------------------------------------------------------------
# 2. intra-temporal and intra-decoder attention

@st.composite
def temporal_cases(draw):
    B, S = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    return dict(B=B, S=S, mask=draw(masks(B, S)), H=draw(st.integers(1, 4)),
                T=draw(st.integers(1, 6)), seed=draw(st.integers(0, 2 ** 16)),
                q_scale=draw(st.sampled_from([0.1, 1.0, 30.0, 3000.0])),   # scores up to ~1e4
                pad_key=draw(st.sampled_from([0.0, 1e4, -1e4, 1e30, INF, -INF, NAN])),
                temporal=draw(st.booleans()), dtype=draw(st.sampled_from([torch.float32, torch.float64])))


@PROPS
@given(case=temporal_cases())
@example(case=dict(B=2, S=3, mask=torch.tensor([[True, True, True], [True, True, False]]), H=2, T=4, seed=0,
                   q_scale=1.0, pad_key=INF, temporal=True, dtype=torch.float64))
def test_intra_temporal_attention_over_steps(case):
    B, S, H, T, dtype = case["B"], case["S"], case["H"], case["T"], case["dtype"]
    mask = case["mask"]
    g = torch.Generator().manual_seed(case["seed"])
    att = IntraTemporalAttention(H, temporal=case["temporal"]).to(dtype)
    with torch.no_grad():
        att.weight.copy_(torch.randn(H, H, generator=g, dtype=dtype))
    memory = torch.randn(B, S, H, generator=g, dtype=dtype)
    memory = memory.masked_fill(~mask.unsqueeze(-1), 1e6)   # padding states far outside the real ones
    memory.requires_grad_()
    # scores at padding: whatever the keys there give (huge, inf, NaN); real positions keep W m_i
    keys = att.keys(memory).masked_fill(~mask.unsqueeze(-1), case["pad_key"])
    queries = torch.randn(T, B, H, generator=g, dtype=dtype) * case["q_scale"]
    queries.requires_grad_()
    lse, total = None, 0.0
    has_any = mask.any(1)
    for t in range(T):
        context, attn, lse = att(queries[t], keys, memory, mask, lse)
        assert attn.shape == (B, S) and context.shape == (B, H)
        assert torch.isfinite(attn).all() and torch.isfinite(context).all()
        assert torch.isfinite(lse[mask]).all()
        assert (attn[~mask] == 0).all() and (attn[~has_any] == 0).all() and (context[~has_any] == 0).all()
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        assert torch.allclose(attn.sum(1)[has_any].double(),
                              torch.ones(int(has_any.sum()), dtype=torch.float64), atol=tol * S)
        # the context is a convex combination of the real states only (the padding ones are 1e6)
        for b in range(B):
            if has_any[b]:
                real = memory[b][mask[b]].detach()
                slack = 1e-4 * (1 + real.abs().max())
                assert (context[b] >= real.min(0).values - slack).all()
                assert (context[b] <= real.max(0).values + slack).all()
        # the paper's formula, from the whole score history (no running sum), in float64
        e = torch.einsum("bsh,tbh->tbs", keys.detach().double(), queries[:t + 1].detach().double())
        if case["temporal"] and t > 0:
            logits = e[t] - torch.logsumexp(e[:t], dim=0)
        else:
            logits = e[t]
        ref = masked_softmax_reference(logits.masked_fill(~mask, 0.0), mask)
        if dtype == torch.float64:
            assert torch.allclose(attn, ref, atol=1e-9, rtol=0)
        elif case["q_scale"] <= 1.0:   # float32 scores of ~1e4 are only known to ~1e-3
            assert torch.allclose(attn.double(), ref, atol=1e-4, rtol=0)
        total = total + (context * torch.arange(1, H + 1, dtype=dtype)).sum()
    if math.isfinite(case["pad_key"]):
        total.backward()
        assert torch.isfinite(queries.grad).all() and torch.isfinite(memory.grad).all()
        assert (memory.grad[~mask] == 0).all()   # padding states get no gradient (keys are replaced there)


@PROPS
@given(B=st.integers(1, 4), H=st.integers(1, 4), T=st.integers(1, 7), seed=st.integers(0, 2 ** 16),
       scale=st.sampled_from([0.1, 1.0, 10.0, 100.0, 1000.0]),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_intra_decoder_attention_over_steps(B, H, T, seed, scale, dtype):
    g = torch.Generator().manual_seed(seed)
    att = IntraDecoderAttention(H).to(dtype)
    with torch.no_grad():
        att.weight.copy_(torch.randn(H, H, generator=g, dtype=dtype))
    states = torch.randn(T, B, H, generator=g, dtype=dtype) * scale   # scores up to ~1e6
    history = None
    for t in range(T):
        context, attn = att(states[t], history, return_attn=True)
        assert attn.shape == (B, t) and context.shape == (B, H)
        assert torch.isfinite(context).all() and torch.isfinite(attn).all()
        if t == 0:
            assert (context == 0).all()   # c^d_1 = 0
        else:
            tol = 1e-5 if dtype == torch.float32 else 1e-12
            assert (attn >= 0).all() and torch.allclose(attn.sum(1).double(), torch.ones(B, dtype=torch.float64),
                                                        atol=tol * t)
            for b in range(B):
                prev = history[b]   # (t, H)
                assert (context[b] >= prev.min(0).values - 1e-4 * scale).all()
                assert (context[b] <= prev.max(0).values + 1e-4 * scale).all()
                if dtype == torch.float64:
                    e = prev @ (att.weight.detach().t() @ states[t, b])   # h_t . W^d h_t'
                    ref = masked_softmax_reference(e.unsqueeze(0), torch.ones(1, t, dtype=torch.bool))[0]
                    assert torch.allclose(attn[b], ref, atol=1e-9, rtol=0)
        new = states[t].unsqueeze(1)
        history = new if history is None else torch.cat([history, new], 1)


# ---------------------------------------------------------------------------------------------------
# 3. copy mixture

@st.composite
def copy_cases(draw):
    """A batch of sources in the extended vocabulary the way the data pipeline builds it: in-vocabulary
    ids, each example's OOV words numbered V, V+1, ... by first occurrence, PAD after its length."""
    B, S, V = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(5, 9))
    words = [UNK] + list(range(4, V))                     # what a real source position can hold
    n_types = draw(st.integers(0, 3))                     # OOV word types to draw from
    src_ex, n_oovs = [], []
    for _ in range(B):
        length = draw(st.integers(1, S))
        codes = draw(st.lists(st.integers(0, len(words) + n_types - 1), min_size=length, max_size=length))
        oov_ids = {}
        row = []
        for c in codes:
            if c < len(words):
                row.append(words[c])
            else:
                row.append(V + oov_ids.setdefault(c, len(oov_ids)))
        src_ex.append(row + [PAD] * (S - length))
        n_oovs.append(len(oov_ids))
    src_ex = torch.tensor(src_ex)
    mask = torch.arange(S).unsqueeze(0) < (src_ex != PAD).sum(1, keepdim=True)
    n_oov = max(n_oovs) + draw(st.integers(0, 1))        # (a spare slot no example uses)
    scores = torch.tensor([[draw(FINITE if m else GARBAGE) for m in row] for row in mask.tolist()],
                          dtype=torch.float64)
    return dict(src_ex=src_ex, mask=mask, n_oovs=n_oovs, n_oov=n_oov, V=V, scores=scores,
                switch_bias=draw(st.sampled_from([-1e4, -30.0, -1.0, 0.0, 1.0, 30.0, 1e4])),
                scale=draw(st.sampled_from([0.5, 1.0, 5.0])), seed=draw(st.integers(0, 2 ** 16)),
                T=draw(st.sampled_from([None, 1, 3])))


def mixture_reference(switch, gen_probs, attn, src_ex, mask, X):
    """p(y) = p_gen p_vocab(y) + p_copy sum_{i real, x_i = y} a_i, by loops, in float64.
    switch (N,): the logit of p_copy = sigmoid(switch), p_gen = sigmoid(-switch) (not 1 - p_copy: that
    cancels); gen_probs (N, V), attn / src_ex / mask (N, S)."""
    p_gen, p_copy = torch.sigmoid(-switch), torch.sigmoid(switch)
    N, V = gen_probs.shape
    out = torch.zeros(N, X, dtype=torch.float64)
    for n in range(N):
        out[n, :V] = p_gen[n] * gen_probs[n]
        for i in range(src_ex.size(1)):
            if mask[n, i]:
                out[n, int(src_ex[n, i])] += p_copy[n] * attn[n, i]
    return out


def check_mixture(logp, ref, rows_oov, V, exact_impossible, tol):
    """logp (N, X) against the reference: a distribution over X, finite, the right probabilities (also in
    log space where they are not negligible), nothing on OOV slots beyond each row's own list."""
    N, X = logp.shape
    assert torch.isfinite(logp).all()
    p = logp.double().exp()
    assert torch.allclose(p.sum(1), torch.ones(N, dtype=torch.float64), atol=tol)
    assert torch.allclose(p, ref, atol=tol, rtol=0)
    big = ref > 1e-30
    assert torch.allclose(logp.double()[big], ref[big].log(), atol=1e-3 if tol > 1e-9 else 1e-9, rtol=1e-5)
    for n in range(N):
        unused = logp[n, V + rows_oov[n]:]
        assert (unused.exp() == 0).all()
        if exact_impossible:
            assert (unused == IMPOSSIBLE).all()


def _attn(case):
    return masked_softmax(case["scores"], case["mask"])   # (B, S) float64, exactly 0 on padding


@PROPS
@given(case=copy_cases(), tied=st.booleans(), grad=st.booleans())
def test_pointer_generator_mixture(case, tied, grad):
    src_ex, mask, V, n_oov = case["src_ex"], case["mask"], case["V"], case["n_oov"]
    B = src_ex.size(0)
    torch.manual_seed(case["seed"])
    D, E = 4, 3
    full = nn.Embedding(V + 2, E, padding_idx=PAD).double()
    gen = FusedPointerGenerator(D, V, embedding=PartialEmbedding(full, V), tied=tied).double()
    with torch.no_grad():
        gen.switch.bias.fill_(case["switch_bias"])
    o = torch.randn(B, D, dtype=torch.float64) * case["scale"]
    attn = _attn(case)
    first_pos = first_occurrence(src_ex)
    with torch.set_grad_enabled(grad):
        logp, p_copy = gen(o, attn, src_ex, first_pos, n_oov, return_p_copy=True)
    assert logp.shape == (B, V + n_oov)
    with torch.no_grad():
        w, b = gen.out_weight()
        switch = gen.switch(o).squeeze(1)   # the logit of p(u=1)
        ref = mixture_reference(switch, torch.softmax(o @ w.t() + b, 1), attn, src_ex, mask, V + n_oov)
    assert torch.allclose(p_copy, torch.sigmoid(switch), atol=0, rtol=1e-12)
    check_mixture(logp.detach(), ref, case["n_oovs"], V, False, 1e-9)

    # the fused paths: log p(gold) of every producible id and the argmax, as the distribution says
    gold = torch.stack([torch.randint(0, V + k, ()) for k in case["n_oovs"]])
    ll, pred = gen.gold_log_prob(o, attn, src_ex, first_pos, gold)
    assert torch.allclose(ll, logp.detach().gather(1, gold[:, None]).squeeze(1), atol=1e-9, rtol=1e-12)
    best = logp.detach().max(1).values
    assert torch.equal(pred, gen.predict(o, attn, src_ex, first_pos))
    assert torch.allclose(logp.detach().gather(1, pred[:, None]).squeeze(1), best, atol=1e-9, rtol=0)


@settings(PROPS)
@given(case=copy_cases(), tied=st.booleans(), shift=st.sampled_from([-30.0, 1e3, -1e3, -2e4]))
def test_mixture_is_invariant_to_a_constant_added_to_the_generation_logits(case, tied, shift):
    """softmax(l + c) = softmax(l): adding c to every b_out changes no probability, in the full
    distribution as in the fused log p(gold) and argmax; an OOV word is never generated."""
    src_ex, V, n_oov = case["src_ex"], case["V"], case["n_oov"]
    B = src_ex.size(0)
    torch.manual_seed(case["seed"])
    full = nn.Embedding(V + 2, 3, padding_idx=PAD).double()
    gen = FusedPointerGenerator(4, V, embedding=PartialEmbedding(full, V), tied=tied).double()
    o, attn, first_pos = torch.randn(B, 4, dtype=torch.float64), _attn(case), first_occurrence(src_ex)
    gold = torch.stack([torch.randint(0, V + k, ()) for k in case["n_oovs"]])
    with torch.no_grad():
        before = gen(o, attn, src_ex, first_pos, n_oov)
        ll_before = gen.gold_log_prob(o, attn, src_ex, first_pos, gold)[0]
        (gen.bias if tied else gen.out.bias).add_(shift)
        after = gen(o, attn, src_ex, first_pos, n_oov)
        ll_after, pred = gen.gold_log_prob(o, attn, src_ex, first_pos, gold)
    assert torch.allclose(after.exp(), before.exp(), atol=1e-9, rtol=0)
    possible = ll_before > IMPOSSIBLE / 2
    assert torch.allclose(ll_after[possible], ll_before[possible], atol=1e-6, rtol=0)
    assert (ll_after[~possible] <= IMPOSSIBLE / 2).all()
    assert torch.allclose(after.gather(1, pred[:, None]).squeeze(1), after.max(1).values, atol=1e-9, rtol=0)


@PROPS
@given(case=copy_cases(), grad=st.booleans())
def test_copy_generator_mixture(case, grad):
    src_ex, mask, V, n_oov, T = case["src_ex"], case["mask"], case["V"], case["n_oov"], case["T"]
    B, S = src_ex.shape
    torch.manual_seed(case["seed"])
    H, E = 3, 2
    gen = CopyGenerator(H, V, E)
    with torch.no_grad():
        gen.switch.bias.fill_(case["switch_bias"])
    steps = () if T is None else (T,)
    attn = _attn(case).float()
    if T is not None:
        attn = attn.unsqueeze(1).expand(B, T, S).contiguous()

    def rnd(d):
        return torch.randn(B, *steps, d) * case["scale"]
    dec = DecoderOutput(out=rnd(H), rnn_out=rnd(H), context=rnd(H), emb=rnd(E), attn=attn)
    with torch.set_grad_enabled(grad):
        logp = gen(dec, src_ex, n_oov)
    assert logp.shape == (B, *steps, V + n_oov)
    N = B * (T or 1)
    rows = (lambda x: x) if T is None else (lambda x: x.unsqueeze(1).expand(B, T, *x.shape[1:]).reshape(N, -1))
    with torch.no_grad():
        feats = torch.cat([dec.context, dec.rnn_out, dec.emb], -1).double().reshape(N, -1)
        gen_logit = (feats @ gen.switch.weight.double().t() + gen.switch.bias.double()).squeeze(1)
        logits = dec.out.double().reshape(N, H) @ gen.linear.weight.double().t() + gen.linear.bias.double()
        logits[:, PAD] = -INF   # the generator never produces <blank>
        ref = mixture_reference(-gen_logit, torch.softmax(logits, 1), attn.double().reshape(N, S), rows(src_ex),
                                rows(mask), V + n_oov)
    n_oovs = [k for k in case["n_oovs"] for _ in range(T or 1)]
    flat = logp.detach().reshape(N, -1)
    check_mixture(flat, ref, n_oovs, V, True, 2e-6)
    assert (flat[:, PAD].exp() == 0).all()   # padding positions copy nothing onto <blank>
    if T is None:
        return
    # the fused training path against the full distribution, for producible gold ids
    gold = torch.stack([torch.randint(0, V + k, (T,)) for k in case["n_oovs"]])   # (B, T)
    gold = gold.masked_fill(gold == PAD, UNK)
    ll, pred = copy_gold_log_prob(gen, dec, src_ex, first_occurrence(src_ex), gold)
    want = logp.detach().gather(2, gold.unsqueeze(2)).squeeze(2)
    possible = want > IMPOSSIBLE / 2
    assert torch.allclose(ll[possible], want[possible], atol=1e-4, rtol=1e-5)
    # an OOV gold with no copy mass (attention underflowed to 0, or p_copy = e^-1e4) is impossible on
    # both paths, though not with the same value (test_fused_path_equals_forward_for_impossible_gold)
    assert (ll[~possible] <= IMPOSSIBLE / 2).all()
    picked = logp.detach().gather(2, pred.unsqueeze(2)).squeeze(2)
    assert torch.allclose(picked, logp.detach().max(2).values, atol=1e-5, rtol=0)


def test_fused_path_equals_forward_for_impossible_gold():
    """copy_gold_log_prob promises forward(...) gathered at gold, values and gradients: also for
    an OOV gold whose attention underflowed to exactly 0 (a score gap of > 104 in float32)."""
    torch.manual_seed(0)
    V, H, E = 6, 3, 2
    gen = CopyGenerator(H, V, E)
    src_ex = torch.tensor([[V, 4]])                                     # the OOV word, then word 4
    attn = masked_softmax(torch.tensor([[0.0, 120.0]]), torch.ones(1, 2, dtype=torch.bool))
    assert attn[0, 0] == 0                                             # underflow: no copy mass on it
    dec = DecoderOutput(out=torch.randn(1, 1, H), rnn_out=torch.randn(1, 1, H), context=torch.randn(1, 1, H),
                        emb=torch.randn(1, 1, E), attn=attn.view(1, 1, 2))
    gold = torch.tensor([[V]])
    want = gen(dec, src_ex, 1).gather(2, gold.unsqueeze(2)).squeeze(2)
    ll, _ = copy_gold_log_prob(gen, dec, src_ex, first_occurrence(src_ex), gold)
    assert torch.allclose(ll, want, atol=1e-3)


@PROPS
@given(case=copy_cases())
def test_duplicated_source_words_accumulate_their_attention(case):
    src_ex, attn = case["src_ex"], _attn(case)
    first = first_occurrence(src_ex)
    copy = copy_at_sources(attn, first)
    B, S = src_ex.shape
    for b in range(B):
        for i in range(S):
            same = [j for j in range(S) if src_ex[b, j] == src_ex[b, i]]
            assert int(first[b, i]) == same[0]
            assert math.isclose(float(copy[b, i]), sum(float(attn[b, j]) for j in same), abs_tol=1e-12)


@PROPS
@given(N=st.integers(1, 5), V=st.integers(4, 9), n_oov=st.integers(0, 3), seed=st.integers(0, 2 ** 16),
       scale=st.sampled_from([1.0, 1e2, 1e4]), switch=st.sampled_from([-1e4, -5.0, 0.0, 5.0, 1e4]),
       block=st.integers(1, 24))
def test_generation_log_probs_decoding_path_equals_training_path(N, V, n_oov, seed, scale, switch, block):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(N, V, generator=g) * scale
    log_gen_switch = torch.nn.functional.logsigmoid(torch.full((N, 1), switch) + torch.randn(N, 1, generator=g))
    train = generation_log_probs(logits, log_gen_switch, n_oov)
    saved = step_mixture.SOFTMAX_BLOCK
    step_mixture.SOFTMAX_BLOCK = block   # several row blocks
    try:
        with torch.no_grad():
            decode = step_mixture.generation_log_probs(logits, log_gen_switch, n_oov)
    finally:
        step_mixture.SOFTMAX_BLOCK = saved
    assert torch.allclose(train, decode, atol=1e-3, rtol=1e-6)
    assert torch.isfinite(decode).all() and (decode[:, V:] == IMPOSSIBLE).all()
    # p(u=0) p(y | u=0) sums to p(u=0) over the vocabulary
    assert torch.allclose(torch.logsumexp(decode[:, :V].double(), 1), log_gen_switch.squeeze(1).double(),
                          atol=1e-3, rtol=1e-6)


# ---------------------------------------------------------------------------------------------------
# 4. n-gram blocking and the per-step rules

def blocked_reference(history, n, X, ignore):
    """Token t is blocked when (last n-1 tokens, t) is an n-gram of the history without an ignored token;
    </s> never is."""
    out = []
    for h in history:
        blocked = set()
        if n > 0 and len(h) >= n:
            tail = tuple(h[len(h) - n + 1:]) if n > 1 else ()
            for j in range(len(h) - n + 1):
                gram = tuple(h[j:j + n])
                if not any(t in ignore for t in gram) and gram[:-1] == tail:
                    blocked.add(gram[-1])
        blocked.discard(EOS)
        out.append([t in blocked for t in range(X)])
    return torch.tensor(out, dtype=torch.bool).view(len(history), X)


@st.composite
def histories(draw, n=None):
    """(X, rows of produced ids, ignore_ids list or None); with n, lengths around n are frequent."""
    X = draw(st.integers(5, 8))   # a small vocabulary: repeats are frequent
    alphabet = st.sampled_from([UNK, EOS] + list(range(4, X)))   # what a hypothesis can produce
    # with n: often exactly n tokens (the first step the rule applies at) or one more / fewer
    near = st.one_of(st.just(max(0, n)), st.integers(max(0, n - 1), max(0, n + 1))) if n is not None else st.nothing()
    R, L = draw(st.integers(1, 4)), draw(st.one_of(near, st.integers(0, 12)))
    history = draw(st.lists(st.lists(alphabet, min_size=L, max_size=L), min_size=R, max_size=R))
    ignore = draw(st.one_of(st.none(), st.lists(alphabet, max_size=3, unique=True)))
    return X, history, ignore


NGRAM = st.one_of(st.integers(1, 3), st.integers(-1, 5))


def _ignore_tensor(ignore):
    return None if ignore is None else torch.tensor(ignore, dtype=torch.long)


@MORE
@given(case=histories(), n=NGRAM)
def test_blocked_ngrams_against_enumeration(case, n):
    X, history, ignore = case
    R = len(history)
    h = torch.tensor(history, dtype=torch.long).view(R, -1)
    logp = torch.randn(R, X)
    before = logp.clone()
    out = block_ngrams_(logp, h, n, _ignore_tensor(ignore))
    assert out is logp                                     # in place
    got = torch.isneginf(logp)
    assert torch.equal(got, blocked_reference(history, n, X, set(ignore or ())))
    assert not got[:, EOS].any()
    assert torch.equal(logp[~got], before[~got])           # nothing else changed


@st.composite
def rule_cases(draw):
    block = draw(st.one_of(NGRAM, st.just(0)))
    return (block, *draw(histories(block)), draw(st.integers(0, 12)), draw(st.integers(0, 14)),
            draw(st.integers(0, 2 ** 16)))


@MORE
@given(case=rule_cases())
@example(case=(1, 6, [[4]], None, 0, 5, 0))                 # the first step a rule applies at
@example(case=(2, 6, [[4, 4], [0, 4]], [], 0, 5, 0))
@example(case=(2, 7, [[4, 5, 4, 5, 4]], [6], 3, 9, 1))
def test_apply_rules_against_the_documented_rules(case):
    block, X, history, ignore, min_length, max_length, seed = case
    R = len(history)
    step = len(history[0])
    h = torch.tensor(history, dtype=torch.long).view(R, step)
    logp = torch.log_softmax(torch.randn(R, X, generator=torch.Generator().manual_seed(seed)), 1)
    before = logp.clone()
    out = apply_rules(logp, h, step, min_length=min_length, max_length=max_length,
                      block_ngram_repeat=block, ignore_ids=_ignore_tensor(ignore))
    assert out is logp   # written in place
    ref = before.clone()
    ref[:, PAD] = NEG_INF
    ref[:, BOS] = NEG_INF
    if step < min_length:
        ref[:, EOS] = NEG_INF
    if block > 0:
        ref[blocked_reference(history, block, X, set(ignore or ()))] = NEG_INF
    if step >= max_length:   # </s> is the only choice, with its own log-probability
        ref.fill_(NEG_INF)
        ref[:, EOS] = before[:, EOS]
    assert torch.equal(out, ref)
