"""onmt/fused/step_attention.py: a pass of fused attention steps equals the plain GlobalAttention."""
import pytest
import torch

from onmt.fused.step_attention import StepAttention, tanh_
from onmt.modules.global_attention import GlobalAttention


def _pass(attention, memory, mask, queries, coverage, fused):
    """T attention steps as the decoder makes them (coverage accumulates); returns outputs and align."""
    keys = attention.precompute_keys(memory)
    step = StepAttention(keys, memory) if fused else None
    cov = torch.zeros(mask.shape, dtype=memory.dtype) if coverage else None
    outs, aligns = [], []
    for q in queries.unbind(1):
        out, align, context = attention(q, memory, mask, keys=keys, coverage=cov, step=step)
        outs.append(out + context)
        aligns.append(align)
        cov = cov + align if coverage else None
    return torch.stack(outs, 1), torch.stack(aligns, 1)


@pytest.mark.parametrize("attn_type,coverage", [("mlp", True), ("mlp", False), ("general", True), ("dot", False)])
@pytest.mark.parametrize("block", [None, 2 * 5 * 8])  # one block, and row blocks of 2
def test_fused_pass_equals_the_plain_attention_values_and_gradients(attn_type, coverage, block, monkeypatch):
    if block is not None:
        monkeypatch.setattr("onmt.fused.step_attention.BLOCK", block)
    torch.manual_seed(0)
    B, S, H, T = 5, 7, 8, 4
    attention = GlobalAttention(H, attn_type, coverage=coverage).double()
    if coverage and attn_type != "mlp":
        torch.nn.init.normal_(attention.cover_weight)
    memory = torch.randn(B, S, H, dtype=torch.float64, requires_grad=True)
    queries = torch.randn(B, T, H, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(S)[None, :] < torch.tensor([7, 3, 5, 7, 1])[:, None]
    weights = torch.randn(B, T, H, dtype=torch.float64), torch.randn(B, T, S, dtype=torch.float64)
    results = []
    for fused in (False, True):
        out, align = _pass(attention, memory, mask, queries, coverage, fused)
        loss = (out * weights[0]).sum() + (align * weights[1]).sum()
        params = [memory, queries] + list(attention.parameters())
        results.append((out, align, torch.autograd.grad(loss, params, allow_unused=True)))
    (out_p, align_p, grads_p), (out_f, align_f, grads_f) = results
    assert torch.allclose(out_f, out_p, atol=1e-6) and torch.allclose(align_f, align_p, atol=1e-6)
    for g_f, g_p in zip(grads_f, grads_p):
        assert (g_f is None) == (g_p is None)
        if g_p is not None:
            assert torch.allclose(g_f, g_p, atol=1e-6)
    assert (align_f[~mask.unsqueeze(1).expand_as(align_f)] == 0).all()


def test_tanh_by_sigmoid_is_within_float32_rounding_of_tanh():
    x = torch.cat([torch.linspace(-30, 30, 100001), torch.tensor([0.0, 1e-30, -1e-8, 88.0, -88.0, 1e4, -1e4])])
    got = tanh_(x.clone())
    assert (got - torch.tanh(x)).abs().max() <= 2.5e-7
    assert got.abs().max() <= 1.0 and torch.isfinite(got).all()
