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


@pytest.mark.parametrize("precision, tol", [("fp32", 1e-5), ("bf16", 0.05), ("int8", 0.05)])
def test_decoding_gates_are_one_prepared_product_per_layer(monkeypatch, precision, tol):
    """With the model's decoding precision set (translate.py, the API) and no autograd in eval mode, the
    gates come from [W_ih ; W_hh] prepared once in that precision: close to the plain step (float32:
    equal to rounding), built once per set of parameters, rebuilt after a parameter update; training
    mode and autograd keep the plain path."""
    from onmt.fused import low_precision
    from onmt.fused.packed_linear import set_decoding_precision
    torch.manual_seed(0)
    rnn = nn.LSTM(16, 32, num_layers=2, batch_first=True).eval()
    x, h, c = torch.randn(5, 16), torch.randn(2, 5, 32), torch.randn(2, 5, 32)
    with torch.no_grad():
        ref = lstm_step(rnn, x, (h, c))   # no precision set: the plain path
        built, original = [], low_precision.prepared_linear
        monkeypatch.setattr(low_precision, "prepared_linear",
                            lambda *a, **k: built.append(a[0].shape) or original(*a, **k))
        set_decoding_precision(rnn, precision)
        got = [lstm_step(rnn, x, (h, c)) for _ in range(3)]
        assert built == [(128, 48), (128, 64)]          # (4H, E+H), (4H, H+H): once each
        rnn.weight_hh_l1.add_(0.01)                     # an optimizer step: rebuilt once
        moved = lstm_step(rnn, x, (h, c))
        assert len(built) == 4
    for top, (h_new, c_new) in got:
        err = max((top - ref[0]).abs().max(), (c_new - ref[1][1]).abs().max()).item()
        assert err < tol and (precision == "fp32" or err > 1e-5), err   # really in that precision
        assert top.dtype == torch.float32
    assert not torch.allclose(moved[0], got[0][0])
    rnn.train()
    with torch.no_grad():
        lstm_step(rnn, x, (h, c))
    assert len(built) == 4
