"""onmt/fused/mixture_scores.py: a pointer-generator step's scores without the (R, X) log-probabilities
give what the dense log p gives: the same full distribution, the same bans, the same top K of a beam and
the same best token, against a slow reference that writes every value and ranks every candidate."""
import pytest
import torch
import torch.nn.functional as F

from onmt.constants import BOS, EOS, PAD
from onmt.fused.mixture_scores import MixtureScores, row_log_normalizer
from onmt.modules.copy_mixture import IMPOSSIBLE, first_occurrence

NEG_INF = float("-inf")


def dense_log_probs(logits, switch, attn, src_ex, n_oov):
    """The reference, one value at a time: log(p(u=0) softmax(logits)_y + p(u=1) sum_{i: src_i = y} a_i)
    over the extended vocabulary, IMPOSSIBLE where neither generation nor copying can give y."""
    logits, switch, attn = logits.double(), switch.double(), attn.double()
    R, V = logits.shape
    p_copy = torch.sigmoid(switch)                                        # (R, 1)
    gen = (1 - p_copy) * torch.softmax(logits, dim=1)                     # (R, V)
    out = torch.full((R, V + n_oov), IMPOSSIBLE, dtype=torch.float64)
    for r in range(R):
        p = torch.zeros(V + n_oov, dtype=torch.float64)
        p[:V] = gen[r]
        for i in range(src_ex.size(1)):
            p[src_ex[r, i]] += p_copy[r, 0] * attn[r, i]
        for y in range(V + n_oov):
            if p[y] > 0:
                out[r, y] = torch.log(p[y])
    return out


def dense_topk(logp, scores, k):
    """Every candidate of each example's W rows ranked: the plain (B, W*X) topk."""
    B, W = scores.shape
    return (logp + scores.reshape(B * W, 1).double()).view(B, -1).topk(k, dim=1)


def make_step(R, V, S, n_oov, seed, source_boost=0.0):
    """A step's inputs: logits (R, V), switch (R, 1), attention (R, S) 0 on padding, extended source ids with
    duplicates, OOV slots and padding. source_boost raises the source words' logits (their chunks then
    hold the rows' maxima)."""
    g = torch.Generator().manual_seed(seed)
    src_ex = torch.randint(4, V + n_oov, (R, S), generator=g)            # (R, S)
    src_ex[:, 1] = src_ex[:, 0]                                          # a duplicated word
    src_ex[: R // 3, S - 2:] = PAD                                       # padding
    logits = torch.randn(R, V, generator=g) * 3                          # (R, V)
    in_vocab = src_ex < V
    logits.scatter_add_(1, src_ex.clamp(max=V - 1), in_vocab.float() * source_boost)
    switch = torch.randn(R, 1, generator=g)                              # (R, 1)
    attn = torch.softmax(torch.randn(R, S, generator=g), dim=1).masked_fill(src_ex == PAD, 0.0)
    attn = attn / attn.sum(1, keepdim=True)                              # (R, S)
    return logits, switch, attn, src_ex


def scores_of(logits, switch, attn, src_ex, n_oov):
    return MixtureScores(logits.clone(), F.logsigmoid(-switch), F.logsigmoid(switch), attn, src_ex,
                         first_occurrence(src_ex), n_oov)


CASES = [  # R (B*W rows), W, V, S, n_oov, k, source_boost
    (15, 5, 1000, 9, 4, 5, 0.0),      # a short last chunk (1000 = 7 * 128 + 104)
    (6, 1, 1024, 7, 0, 5, 0.0),       # the first step: one row per example, no OOV slot
    (12, 4, 700, 6, 3, 4, 8.0),       # the source words hold the chunk maxima
    (10, 5, 300, 5, 2, 5, 0.0),       # 2 chunks a row, 10 an example
    (8, 4, 90, 5, 2, 4, 0.0),         # fewer columns than a chunk: the dense topk
]


@pytest.mark.parametrize("R,W,V,S,n_oov,k,boost", CASES)
def test_full_distribution_equals_the_reference(R, W, V, S, n_oov, k, boost):
    logits, switch, attn, src_ex = make_step(R, V, S, n_oov, seed=R + V, source_boost=boost)
    got = scores_of(logits, switch, attn, src_ex, n_oov).full()
    want = dense_log_probs(logits, switch, attn, src_ex, n_oov)
    assert got.shape == (R, V + n_oov)
    torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=1e-6)


@pytest.mark.parametrize("R,W,V,S,n_oov,k,boost", CASES)
@pytest.mark.parametrize("banning", [False, True])
def test_beam_topk_and_best_equal_the_ranking_of_every_candidate(R, W, V, S, n_oov, k, boost, banning):
    logits, switch, attn, src_ex = make_step(R, V, S, n_oov, seed=3 * R + V, source_boost=boost)
    want = dense_log_probs(logits, switch, attn, src_ex, n_oov)
    g = torch.Generator().manual_seed(V)
    running = torch.randn(R // W, W, generator=g) * 2                     # (B, W)
    scores = scores_of(logits, switch, attn, src_ex, n_oov)
    if banning:   # the rules' kinds of bans: the same tokens in every row, and per-row tokens where a mask says
        tokens = torch.tensor([PAD, BOS, EOS]).expand(R, 3)              # (R, 3)
        scores.ban_(tokens)
        want.scatter_(1, tokens, NEG_INF)
        picked = torch.cat([src_ex[:, :3], torch.randint(4, V + n_oov, (R, 4), generator=g)], dim=1)  # (R, 7)
        where = torch.rand(R, 7, generator=g) < 0.6
        scores.ban_(picked, where)
        for r, j in where.nonzero().tolist():
            want[r, picked[r, j]] = NEG_INF
        torch.testing.assert_close(scores.full().double(), want, atol=2e-5, rtol=1e-6)
    values, ids = scores.beam_topk(running, k)
    want_values, want_ids = dense_topk(want, running, k)
    torch.testing.assert_close(values.double(), want_values, atol=2e-5, rtol=1e-6)
    assert torch.equal(ids, want_ids)
    best_values, best_ids = scores.best()
    torch.testing.assert_close(best_values.double(), want.max(1).values, atol=2e-5, rtol=1e-6)
    assert torch.equal(best_ids, want.argmax(1))


def test_allow_only_keeps_one_token_with_its_log_prob():
    R, V, S, n_oov = 10, 400, 6, 3
    logits, switch, attn, src_ex = make_step(R, V, S, n_oov, seed=5)
    src_ex[0, 2] = EOS            # </s> also a source word of one row: its value is the mixture's
    want = dense_log_probs(logits, switch, attn, src_ex, n_oov)
    scores = scores_of(logits, switch, attn, src_ex, n_oov)
    scores.allow_only_(EOS)
    got = scores.full()
    assert torch.isneginf(got[:, torch.arange(V + n_oov) != EOS]).all()
    torch.testing.assert_close(got[:, EOS].double(), want[:, EOS], atol=2e-5, rtol=1e-6)
    values, ids = scores.beam_topk(torch.zeros(2, 5), 1)
    assert torch.equal(ids, torch.tensor([[EOS], [EOS]]))


@pytest.mark.parametrize("N,V", [(1, 10), (7, 300), (40, 17000), (3, 200000)])
def test_row_log_normalizer_is_the_logsumexp(N, V):
    x = torch.randn(N, V, generator=torch.Generator().manual_seed(V)) * 5 + 30
    got = row_log_normalizer(x)
    assert got.shape == (N, 1)
    torch.testing.assert_close(got.double(), torch.logsumexp(x.double(), dim=1, keepdim=True), atol=1e-5, rtol=1e-6)


def test_extended_slots_fill_the_beam_when_few_words_are_left():
    """With every vocabulary word but two banned, the top 5 holds those two, the source's OOV word (where
    attended) and extended slots at IMPOSSIBLE, as the dense log p ranks them (among ties: any slot)."""
    R, V, S, n_oov = 4, 1024, 3, 4
    logits, switch, attn, src_ex = make_step(R, V, S, n_oov, seed=11)
    src_ex[:] = torch.tensor([20, 21, V + 1])
    want = dense_log_probs(logits, switch, attn, src_ex, n_oov)
    scores = scores_of(logits, switch, attn, src_ex, n_oov)
    banned = torch.tensor([t for t in range(V) if t not in (10, 11)]).expand(R, V - 2)
    scores.ban_(banned)
    want.scatter_(1, banned, NEG_INF)
    values, ids = scores.beam_topk(torch.zeros(R, 1), 5)
    want_values, _ = dense_topk(want, torch.zeros(R, 1), 5)
    torch.testing.assert_close(values.double(), want_values, atol=2e-5, rtol=1e-6)
    torch.testing.assert_close(want.gather(1, ids), values.double(), atol=2e-5, rtol=1e-6)
    assert (values[:, 3:] == IMPOSSIBLE).all() and (ids[:, 3:] >= V).all()
