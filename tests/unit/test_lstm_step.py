"""onmt/modules/lstm_step.py: one step from the cell equations equals a one-step nn.LSTM call."""
import pytest
import torch
import torch.nn as nn

from onmt.modules.lstm_step import lstm_step


@pytest.mark.parametrize("layers", [1, 2])
def test_lstm_step_matches_the_module_values_and_gradients(layers):
    torch.manual_seed(0)
    rnn = nn.LSTM(6, 12, num_layers=layers, batch_first=True).double()
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    h, c = (torch.randn(layers, 3, 12, dtype=torch.float64, requires_grad=True) for _ in range(2))
    out, (h_ref, c_ref) = rnn(x.unsqueeze(1), (h, c))
    top, (h_new, c_new) = lstm_step(rnn, x, (h, c))
    assert torch.allclose(top, out[:, 0]) and torch.allclose(h_new, h_ref) and torch.allclose(c_new, c_ref)
    weights = torch.randn(3, 12, dtype=torch.float64)
    ref = torch.autograd.grad((out[:, 0] * weights).sum() + c_ref.sum(), [x, h, c, rnn.weight_hh_l0])
    got = torch.autograd.grad((top * weights).sum() + c_new.sum(), [x, h, c, rnn.weight_hh_l0])
    assert all(torch.allclose(a, b) for a, b in zip(got, ref))
