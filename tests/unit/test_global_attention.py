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
