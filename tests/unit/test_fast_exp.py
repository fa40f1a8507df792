"""onmt/fused/fast_exp.py: exp(x - shift) through exp2 against torch.exp."""
import torch

from onmt.fused.fast_exp import exp_shifted_


def test_exp_shifted_is_exp_of_the_shifted_values_in_place():
    torch.manual_seed(0)
    x = torch.cat([torch.randn(3, 1000) * 8, torch.tensor([[0.0, -1e-30, -88.0, -104.0, -1e4] + [0.0] * 995])])
    shift = x.amax(1, keepdim=True)
    want = torch.exp(x.double() - shift.double())  # (4, 1000)
    got = x.clone()
    assert exp_shifted_(got, shift).data_ptr() == got.data_ptr()
    close = want > 2e-9  # x - shift > -20: relative error within 2e-6
    assert ((got.double() - want).abs() / want)[close].max() < 2e-6
    assert (got.double() - want).abs().max() < 1e-8 and (got >= 0).all() and torch.isfinite(got).all()
    assert torch.allclose(got.double().sum(1), want.sum(1), rtol=3e-7)
    x64 = x.double()
    assert torch.allclose(exp_shifted_(x64.clone(), shift.double()), want, rtol=1e-13, atol=0)
