"""onmt/fused/dropout.py: the CPU dropout drawn with torch.rand is nn.Dropout's distribution."""
import pytest
import torch
import torch.nn as nn

from onmt.fused.dropout import Dropout, dropout_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.75])
def test_the_mask_drops_with_probability_p_and_scales_the_rest(p):
    torch.manual_seed(0)
    mask = dropout_mask((200, 500), p, torch.empty(0, dtype=torch.float64))
    assert mask.dtype == torch.float64 and mask.shape == (200, 500)
    assert set(mask.unique().tolist()) == {0.0, 1 / (1 - p)}
    dropped = (mask == 0).double().mean().item()
    assert abs(dropped - p) < 4 * (p * (1 - p) / mask.numel()) ** 0.5  # four standard deviations
    assert abs(mask.mean().item() - 1.0) < 0.01  # expectation kept


def test_training_drops_and_its_gradient_is_the_mask():
    torch.manual_seed(0)
    drop = Dropout(0.3).train()
    x = torch.randn(64, 128, requires_grad=True)
    y = drop(x)
    kept = y != 0
    assert 0.25 < 1 - kept.double().mean().item() < 0.35
    assert torch.allclose(y[kept], x[kept] / 0.7)
    (g,) = torch.autograd.grad(y.sum(), x)
    assert torch.allclose(g, kept.double().float() / 0.7)


def test_evaluation_and_the_edge_probabilities_are_nn_dropout():
    x = torch.randn(8, 16)
    assert torch.equal(Dropout(0.3).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
    assert torch.equal(Dropout(1.0).train()(x), nn.Dropout(1.0).train()(x))
    assert isinstance(Dropout(0.3), nn.Dropout)
