"""PackedLinear (onmt/fused/packed_linear.py) against the plain product x W^T + b (Paulus et al.
eq. 9's W_out o_t + b_out) in float64. The packed argmax of the pointer-generator: test_gold_mixture.py."""
import pytest
import torch

from onmt.fused.packed_linear import PackedLinear


def _reference(x, w, b):
    return (x.double() @ w.double().t() + b.double()).float()  # float64 loop-free reference


@pytest.mark.parametrize("rows", [1, 3, 17, 300])
def test_packed_product_equals_the_float64_product(rows):
    torch.manual_seed(rows)
    w, b, x = torch.randn(1000, 64).tanh(), torch.randn(1000), torch.randn(rows, 64)
    lin = PackedLinear(w, b)
    got = lin(x)
    assert got.shape == (rows, 1000) and got.dtype == torch.float32
    torch.testing.assert_close(got, _reference(x, w, b), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(lin(x[::2]), _reference(x[::2], w, b), rtol=1e-5, atol=1e-4)  # strided rows
    unpacked = PackedLinear(w, b, pack=False)
    assert unpacked.packed is None
    torch.testing.assert_close(unpacked(x), _reference(x, w, b), rtol=1e-5, atol=1e-4)


def test_other_dtypes_fall_back_to_addmm():
    w, b, x = (torch.randn(*shape, dtype=torch.float64) for shape in ((50, 8), (50,), (4, 8)))
    lin = PackedLinear(w, b)
    assert lin.packed is None
    assert torch.allclose(lin(x), x @ w.t() + b)
