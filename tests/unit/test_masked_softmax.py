"""masked_softmax (onmt/modules/masked_softmax.py), the softmax of both attentions (See et al. eq. 2,
Paulus et al. eq. 4), against a naive per-row reference: values, gradients, all-masked rows, garbage
in masked positions, half precision."""

import pytest
import torch

from helpers.references import masked_softmax_reference
from onmt.modules.masked_softmax import masked_softmax


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_against_the_naive_reference_values_and_gradient(dtype):
    torch.manual_seed(0)
    B, S = 6, 9
    scores = (torch.randn(B, S, dtype=torch.float64) * 4).to(dtype)
    mask = torch.rand(B, S) < 0.6
    mask[0] = True                 # every position allowed
    mask[1] = False                # all masked
    mask[2] = False
    mask[2, 4] = True              # exactly one allowed
    scores[3, ~mask[3]] = float("nan")  # garbage where masked
    scores[4, ~mask[4]] = float("inf")
    x = scores.clone().requires_grad_()
    got = masked_softmax(x, mask)
    assert got.dtype == (dtype if dtype in (torch.float32, torch.float64) else torch.float32)
    ref = masked_softmax_reference(scores.double(), mask)  # of the scores as the dtype rounds them
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    assert torch.allclose(got.double(), ref, atol=tol, rtol=0)
    assert (got[~mask] == 0).all() and (got[1] == 0).all() and got[2, 4] == 1
    # gradient: the softmax Jacobian p_i (w_i - sum_j p_j w_j) on allowed entries, 0 elsewhere
    w = torch.linspace(-1, 1, B * S, dtype=torch.float64).view(B, S)
    (got * w.to(got.dtype)).sum().backward()
    grad = x.grad.double()
    assert torch.isfinite(grad).all() and (grad[~mask] == 0).all() and (grad[1] == 0).all()
    ref_grad = ref * (w - (ref * w).sum(1, keepdim=True))
    # the gradient comes back in the scores' dtype: rounded to 8 (bfloat16) or 11 (float16) bits
    rtol = {torch.float16: 1e-3, torch.bfloat16: 8e-3}.get(dtype, 0)
    assert torch.allclose(grad, ref_grad, atol=10 * tol if dtype == torch.float64 else 1e-5, rtol=rtol)


def test_any_dim():
    torch.manual_seed(1)
    scores, mask = torch.randn(4, 5), torch.rand(4, 5) < 0.7
    assert torch.allclose(masked_softmax(scores.t(), mask.t(), dim=0).t(), masked_softmax(scores, mask), atol=1e-7)


def test_masked_softmax_extreme_scores_no_nan():
    scores = torch.tensor([[1e4, -1e4, 1e4, -1e4], [-1e4, -1e4, -1e4, 1e4], [1e4, 1e4, 1e4, 1e4]])
    mask = torch.tensor([[False, True, False, False], [True, False, False, False], [False] * 4])
    p = masked_softmax(scores, mask)
    assert not torch.isnan(p).any()
    assert torch.equal(p[0], torch.tensor([0.0, 1.0, 0.0, 0.0]))
    assert torch.equal(p[1], torch.tensor([1.0, 0.0, 0.0, 0.0]))
    assert torch.equal(p[2], torch.zeros(4))  # all masked: zeros, not NaN


def test_masked_softmax_half_precision_and_gradient():
    scores = torch.randn(2, 5).half().requires_grad_()
    mask = torch.tensor([[True, True, False, False, False], [True] * 5])
    p = masked_softmax(scores, mask)
    assert p.dtype == torch.float32 and torch.allclose(p.sum(-1), torch.ones(2))
    p[:, 0].sum().backward()
    assert not torch.isnan(scores.grad).any()


def test_masked_softmax_all_masked_row_has_zero_gradient():
    x = torch.randn(2, 3, requires_grad=True)
    p = masked_softmax(x, torch.tensor([[True, False, True], [False, False, False]]))
    (p * torch.arange(3.0)).sum().backward()
    assert (p[1] == 0).all() and p[0, 1] == 0 and torch.isfinite(x.grad).all()
