"""GlobalAttention (See et al. eqs. 1-3, 11) against scores written per example and position."""
import pytest
import torch

from onmt.modules.global_attention import GlobalAttention


def _naive(attn, query, memory, mask, coverage):
    """Scores written per example and position."""
    B, S, H = memory.shape
    out = torch.zeros(B, S)
    for b in range(B):
        for i in range(S):
            m, q = memory[b, i], query[b]
            if attn.attn_type == "dot":
                s = q @ m
            elif attn.attn_type == "general":
                s = q @ (attn.linear_in.weight @ m)
            else:
                pre = attn.linear_memory(m) + attn.linear_query.weight @ q
                if coverage is not None:
                    pre = pre + attn.linear_cover.weight[:, 0] * coverage[b, i]
                s = attn.v.weight[0] @ torch.tanh(pre)
            if coverage is not None and attn.attn_type != "mlp":
                s = s + attn.cover_weight[0] * coverage[b, i]
            out[b, i] = s
    return out


@pytest.mark.parametrize("attn_type", ["dot", "general", "mlp"])
@pytest.mark.parametrize("coverage", [False, True])
def test_attention_against_naive(attn_type, coverage):
    torch.manual_seed(0)
    B, S, H = 3, 5, 4
    attn = GlobalAttention(H, attn_type, coverage=coverage)
    if coverage and attn_type != "mlp":
        torch.nn.init.constant_(attn.cover_weight, 0.7)
    query, memory = torch.randn(B, H), torch.randn(B, S, H)
    lengths = torch.tensor([5, 3, 1])
    mask = torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)
    cov = torch.rand(B, S) * mask if coverage else None
    attn_h, align, context = attn(query, memory, mask, coverage=cov)
    with torch.no_grad():
        scores = _naive(attn, query, memory, mask, cov)
    expected = torch.zeros(B, S)
    for b in range(B):
        n = int(lengths[b])
        expected[b, :n] = torch.softmax(scores[b, :n], 0)
    assert torch.allclose(align, expected, atol=1e-6)
    assert (align[~mask] == 0).all()
    assert torch.allclose(context, (expected.unsqueeze(-1) * memory).sum(1), atol=1e-6)
    ref_h = torch.tanh(attn.linear_out(torch.cat([context, query], -1)))
    assert torch.allclose(attn_h, ref_h) and attn_h.shape == (B, H)


def test_unknown_attention_type():
    with pytest.raises(ValueError):
        GlobalAttention(4, "luong")


@pytest.mark.parametrize("attn_type,scorer", [("dot", "plain"), ("general", "plain"), ("mlp", "plain"),
                                              ("mlp", "blocked"), ("mlp", "compiled")])
@pytest.mark.parametrize("coverage", [False, True])
def test_one_source_for_several_queries_equals_the_naive_scores(attn_type, coverage, scorer, monkeypatch):
    """A beam's state keeps each source once for its G queries (memory, keys, mask (N, ...), queries and
    coverage (N G, ...)): the naive scores of each query against its source, for the plain formula, the
    fused blocked scorer (blocks of 2 sources) and translate -compile's scorer; the context, the
    attentional vector, and no gradients needed."""
    from onmt.fused.step_attention import compiled_mlp_scores, mlp_scores_blocked
    if scorer == "compiled":
        from onmt.hardware import compile_problem
        if compile_problem("cpu"):
            pytest.skip(compile_problem("cpu"))
    torch.manual_seed(0)
    N, G, S, H = 3, 4, 5, 4
    mlp_score = {"plain": None, "blocked": mlp_scores_blocked}.get(scorer) or compiled_mlp_scores()
    attn = GlobalAttention(H, attn_type, coverage=coverage, mlp_score=None if scorer == "plain" else mlp_score)
    if coverage and attn_type != "mlp":
        torch.nn.init.constant_(attn.cover_weight, 0.7)
    monkeypatch.setattr("onmt.fused.step_attention.BLOCK", 2 * G * S * H)
    query, memory = torch.randn(N * G, H), torch.randn(N, S, H)
    lengths = torch.tensor([5, 3, 1])
    mask = torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)  # (N, S)
    per_row_memory, per_row_mask = memory.repeat_interleave(G, 0), mask.repeat_interleave(G, 0)
    cov = torch.rand(N * G, S) * per_row_mask if coverage else None
    with torch.no_grad():
        attn_h, align, context = attn(query, memory, mask, coverage=cov)
        scores = _naive(attn, query, per_row_memory, per_row_mask, cov)
    expected = torch.zeros(N * G, S)
    for r in range(N * G):
        n = int(lengths[r // G])
        expected[r, :n] = torch.softmax(scores[r, :n], 0)
    assert align.shape == (N * G, S) and torch.allclose(align, expected, atol=1e-5)
    assert torch.allclose(context, (expected.unsqueeze(-1) * per_row_memory).sum(1), atol=1e-5)
    ref_h = torch.tanh(attn.linear_out(torch.cat([context, query], -1)))
    assert torch.allclose(attn_h, ref_h, atol=1e-6) and attn_h.shape == (N * G, H)
