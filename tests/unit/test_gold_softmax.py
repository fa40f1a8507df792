"""gold_log_softmax (onmt/fused/gold_softmax.py): log softmax(o W^T + b)[gold] and the row statistics,
against autograd over the plain log-softmax (Paulus et al. eq. 9, See et al. eq. 4), values and
gradients, in float64, in one or several row blocks."""
import pytest
import torch

from onmt.fused import gold_softmax
from onmt.fused.gold_softmax import gold_log_softmax


@pytest.mark.parametrize("block_elements", [None, 2 * 13])
def test_gold_log_softmax_against_autograd(block_elements, monkeypatch):
    if block_elements:
        monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", block_elements)  # blocks of 2 rows
    torch.manual_seed(0)
    N, D, V, S = 9, 5, 13, 4
    o = torch.randn(N, D, dtype=torch.float64, requires_grad=True)
    w = torch.randn(V, D, dtype=torch.float64, requires_grad=True)
    b = torch.randn(V, dtype=torch.float64, requires_grad=True)
    gold = torch.randint(0, V + 3, (N,))
    gold[0], gold[1] = V + 1, V - 1
    cols = torch.randint(0, V + 3, (N, S))
    z, lse, top, top_id, at_cols = gold_log_softmax(o, w, b, gold, cols, -1e4)
    logits = torch.nn.functional.linear(o, w, b)  # (N, V)
    ext = torch.cat([logits, torch.full((N, 3), -1e4, dtype=logits.dtype)], 1)  # (N, V + 3)
    ref = ext.gather(1, gold[:, None]).squeeze(1) - torch.logsumexp(logits, 1)
    assert torch.allclose(z, ref) and torch.allclose(lse, torch.logsumexp(logits, 1))
    assert torch.equal(top_id, logits.argmax(1)) and torch.allclose(top, logits.amax(1))
    assert torch.allclose(at_cols, ext.gather(1, cols))
    weights = torch.randn(N, dtype=torch.float64)
    got = torch.autograd.grad((z * weights).sum(), (o, w, b))
    want = torch.autograd.grad((ref * weights).sum(), (o, w, b))
    for g, r in zip(got, want):
        assert torch.allclose(g, r)
