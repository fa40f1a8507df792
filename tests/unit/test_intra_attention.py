"""Intra-temporal and intra-decoder attention (Paulus et al. eqs. 2-8) against naive float64 step-by-step
references."""
import math

import torch

from onmt.reinforced.intra_attention import IntraDecoderAttention, IntraTemporalAttention


def _identity_attention(H, temporal=True):
    att = IntraTemporalAttention(H, temporal=temporal).double()
    with torch.no_grad():
        att.weight.copy_(torch.eye(H, dtype=torch.float64))  # e_ti = q_t . h_i
    return att


def _run(att, queries, memory, mask):
    """queries (T, B, H) -> attentions (T, B, S), contexts (T, B, H), final lse."""
    keys, lse, attns, ctxs = att.keys(memory), None, [], []
    for q in queries:
        c, a, lse = att(q, keys, memory, mask, lse)
        attns.append(a)
        ctxs.append(c)
    return torch.stack(attns), torch.stack(ctxs), lse


def _reference_temporal(queries, memory, mask, temporal=True):
    """The paper's formula literally: e' = exp(e) at t = 1, else exp(e_ti) / sum_{j<t} exp(e_ji)."""
    T, B, _ = queries.shape
    S = memory.size(1)
    attn = torch.zeros(T, B, S, dtype=torch.float64)
    for b in range(B):
        past = [0.0] * S
        for t in range(T):
            e = [float(queries[t, b] @ memory[b, i]) for i in range(S)]
            ep = [math.exp(e[i]) if (t == 0 or not temporal) else math.exp(e[i]) / past[i] for i in range(S)]
            ep = [ep[i] if mask[b, i] else 0.0 for i in range(S)]
            z = sum(ep)
            for i in range(S):
                attn[t, b, i] = ep[i] / z
                past[i] += math.exp(e[i])
    return attn


def test_temporal_attention_matches_the_papers_formula():
    torch.manual_seed(0)
    T, B, S, H = 5, 3, 6, 4
    memory = torch.randn(B, S, H, dtype=torch.float64)
    queries = torch.randn(T, B, H, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], dtype=torch.bool)
    for temporal in (True, False):
        attn, ctx, _ = _run(_identity_attention(H, temporal), queries, memory, mask)
        ref = _reference_temporal(queries, memory, mask, temporal)
        assert torch.allclose(attn, ref, atol=1e-10)
        assert torch.allclose(ctx, torch.einsum("tbs,bsh->tbh", ref, memory), atol=1e-10)
        assert (attn[:, ~mask] == 0).all()


def test_penalizes_positions_attended_before():
    torch.manual_seed(0)
    memory = torch.randn(1, 4, 3, dtype=torch.float64)
    q = torch.randn(1, 3, dtype=torch.float64)
    attn, _, _ = _run(_identity_attention(3), torch.stack([q, q]), memory, torch.ones(1, 4, dtype=torch.bool))
    assert torch.allclose(attn[1], torch.full((1, 4), 0.25, dtype=torch.float64))  # same scores: uniform


def test_extreme_scores_one_live_position_and_empty_rows_stay_finite():
    torch.manual_seed(0)
    B, S, H = 3, 5, 2
    att = IntraTemporalAttention(H)
    with torch.no_grad():
        att.weight.copy_(torch.eye(H))
    memory = torch.randn(B, S, H, requires_grad=True)
    mask = torch.zeros(B, S, dtype=torch.bool)
    mask[0] = True
    mask[1, 2] = True                       # every position but one masked; row 2 all masked
    lse, total = None, 0.0
    for t in range(4):
        q = torch.full((B, H), 1e4 if t % 2 == 0 else -1e4)  # scores of about +-1e4
        c, a, lse = att(q, att.keys(memory), memory, mask, lse)
        assert torch.isfinite(a).all() and torch.isfinite(c).all() and torch.isfinite(lse).all()
        assert torch.allclose(a[:2].sum(1), torch.ones(2)) and (a[2] == 0).all()
        assert a[1, 2] == 1
        total = total + c.sum()
    total.backward()
    assert torch.isfinite(memory.grad).all()


def test_a_thousand_steps_of_accumulation_stay_finite():
    torch.manual_seed(0)
    B, S, H = 2, 7, 4
    att = IntraTemporalAttention(H)
    memory = torch.randn(B, S, H)
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 5:] = False
    q = torch.randn(B, H, requires_grad=True)
    keys, lse = att.keys(memory), None
    for _ in range(1000):
        c, a, lse = att(q * 10, keys, memory, mask, lse)
    assert torch.isfinite(lse).all() and torch.isfinite(a).all()
    assert torch.allclose(a.sum(1), torch.ones(B)) and (a[1, 5:] == 0).all()
    c.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_intra_decoder_attention_matches_a_loop():
    torch.manual_seed(0)
    T, B, H = 5, 2, 3
    att = IntraDecoderAttention(H).double()
    states = torch.randn(T, B, H, dtype=torch.float64)
    history = None
    for t in range(T):
        got = att(states[t], history)
        for b in range(B):
            if t == 0:
                ref = torch.zeros(H, dtype=torch.float64)
            else:
                e = torch.tensor([float(states[t, b] @ att.weight.detach() @ states[u, b]) for u in range(t)])
                w = torch.exp(e - e.max()) / torch.exp(e - e.max()).sum()
                ref = sum(w[u] * states[u, b] for u in range(t))
            assert torch.allclose(got[b], ref, atol=1e-10)
        new = states[t].unsqueeze(1)
        history = new if history is None else torch.cat([history, new], 1)


def test_score_scale_is_the_papers_formula_with_the_scaled_matrix():
    """scale s: e = s * h^d . W h, in both attentions: the reference formulas with W replaced by s W."""
    torch.manual_seed(1)
    T, B, S, H, s = 5, 2, 6, 4, 0.5
    memory = torch.randn(B, S, H, dtype=torch.float64)
    queries = torch.randn(T, B, H, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    att = IntraTemporalAttention(H, scale=s).double()
    with torch.no_grad():
        att.weight.copy_(torch.eye(H, dtype=torch.float64))
    attn, _, _ = _run(att, queries, memory, mask)
    assert torch.allclose(attn, _reference_temporal(queries * s, memory, mask), atol=1e-10)
    assert not torch.allclose(attn, _reference_temporal(queries, memory, mask), atol=1e-3)
    dec, plain = IntraDecoderAttention(H, scale=s).double(), IntraDecoderAttention(H).double()
    with torch.no_grad():
        plain.weight.copy_(dec.weight * s)
    history = queries[:3].transpose(0, 1)  # (B, 3, H)
    assert torch.allclose(dec(queries[3], history), plain(queries[3], history), atol=1e-12)
