"""-amp: the attention scores are a float32 island (onmt/modules/global_attention.py, issue 56).

Under `torch.autocast("cpu", dtype=torch.bfloat16)` (what CUDA's -amp does, on the CPU) the products
W_q h, W_m m and W_a m run in bfloat16; the scores computed from them must equal the float32 formula
on those (widened) products, to float32 rounding. Before the fix the sum keys + q, its tanh and the
scores themselves were bfloat16: a sharp score of 40 was known to +-0.125, and See et al.'s copy
attention (and its gradient) with it.
"""
import pytest
import torch

from onmt.modules.global_attention import GlobalAttention
from onmt.modules.masked_softmax import masked_softmax

BF16 = torch.bfloat16


def _attention(attn_type, coverage, seed=0, H=32):
    """A GlobalAttention whose scores are as sharp as a trained copy model's (|score| ~ 10-60)."""
    torch.manual_seed(seed)
    att = GlobalAttention(H, attn_type, coverage=coverage)
    with torch.no_grad():
        if attn_type == "mlp":
            att.v.weight.mul_(40.0)
            att.linear_memory.weight.mul_(3.0)
            if coverage:
                att.linear_cover.weight.normal_(0, 2.0)
        else:
            for p in att.parameters():
                p.mul_(4.0)
    return att


def _inputs(B=4, S=23, H=32, seed=1):
    g = torch.Generator().manual_seed(seed)
    query, memory = torch.randn(B, H, generator=g), torch.randn(B, S, H, generator=g)  # (B, H), (B, S, H)
    mask = torch.ones(B, S, dtype=torch.bool)  # (B, S)
    mask[1, 17:] = False
    coverage = torch.rand(B, S, generator=g) * 3.0  # (B, S) a few steps' sum of attention
    return query, memory, mask, coverage


def _reference_scores(att, query, keys, coverage, low=True):
    """The scores in float32 (no autocast) from the products autocast gives (`low`: q, and keys, in
    bfloat16, widened) or from float32 ones."""
    if att.attn_type == "mlp":
        with torch.autocast("cpu", dtype=BF16, enabled=low):
            q = att.linear_query(query)  # (B, H) bfloat16 with low
        w_c = att.linear_cover.weight.view(-1) if att.coverage else None
        return GlobalAttention.mlp_score(q.float(), keys.float(), coverage if att.coverage else None,
                                         att.v.weight.view(-1), w_c)  # (B, S)
    return att._product_score(query, keys.float(), coverage)  # (B, S)


@pytest.mark.parametrize("attn_type,coverage", [("mlp", True), ("mlp", False), ("general", True),
                                                ("dot", False)])
def test_scores_under_bf16_autocast_are_the_float32_formula(attn_type, coverage):
    att = _attention(attn_type, coverage)
    query, memory, mask, cov = _inputs()
    with torch.no_grad():
        with torch.autocast("cpu", dtype=BF16):
            keys = att.precompute_keys(memory)  # (B, S, H) the product in bfloat16, widened
            got = att.score(query, keys, cov)  # (B, S)
            _, align, _ = att(query, memory, mask, keys=keys, coverage=cov)  # (B, S)
        assert keys.dtype == torch.float32 and got.dtype == torch.float32
        ref = _reference_scores(att, query, keys, cov)
        assert ref.abs().max() > 10  # sharp scores: bfloat16 rounds them by up to 0.03 and more
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(align, masked_softmax(ref, mask), rtol=1e-5, atol=1e-6)
        # what the fix removed: the same scores rounded to bfloat16 are far outside the tolerance
        assert (ref.to(BF16).float() - ref).abs().max() > 1e-2


def test_scores_without_autocast_unchanged():
    """Without autocast the island is a no-op: the keys are the product itself (no copy)."""
    att = _attention("mlp", True)
    query, memory, mask, cov = _inputs()
    keys = att.precompute_keys(memory)
    assert keys.dtype == torch.float32
    torch.testing.assert_close(att.score(query, keys, cov),
                               _reference_scores(att, query, keys, cov, low=False), rtol=0, atol=0)
