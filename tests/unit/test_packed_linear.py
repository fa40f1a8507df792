"""PackedLinear / linear (onmt/modules/packed_linear.py) and the packed argmax of the pointer-generator."""
import pytest
import torch
import torch.nn as nn

from onmt.constants import PAD
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.packed_linear import PackedLinear, linear
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.pointer_generator import PointerGenerator


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
    torch.testing.assert_close(linear(x, w, b), _reference(x, w, b), rtol=1e-5, atol=1e-4)
    unpacked = PackedLinear(w, b, pack=False)
    assert unpacked.packed is None
    torch.testing.assert_close(unpacked(x), _reference(x, w, b), rtol=1e-5, atol=1e-4)


def test_other_dtypes_fall_back_to_addmm():
    w, b, x = (torch.randn(*shape, dtype=torch.float64) for shape in ((50, 8), (50,), (4, 8)))
    lin = PackedLinear(w, b)
    assert lin.packed is None
    assert torch.allclose(lin(x), x @ w.t() + b)


def test_predict_with_packed_weights_is_the_argmax_of_the_full_mixture():
    torch.manual_seed(0)
    V, n_oov, D = 300, 7, 32
    full = nn.Embedding(500, 16, padding_idx=PAD)
    gen = PointerGenerator(D, V, embedding=PartialEmbedding(full, V))
    N, S = 200, 12
    src_ex = torch.randint(4, V + n_oov, (N, S))
    src_ex[:, -2:] = PAD
    src_ex[:5, :] = src_ex[:5, :1]                         # one word repeated at every position
    attn = torch.softmax(torch.randn(N, S) * 3, 1).masked_fill(src_ex == PAD, 0.0)
    o = torch.randn(N, D) * 2
    with torch.no_grad():
        gen.switch.bias.fill_(0.5)
        first = first_occurrence(src_ex)
        want = gen(o, attn, src_ex, first, n_oov).argmax(1)
        weight = gen.out_weight()
        for w in (gen.packed_out_weight(weight), weight, None):
            assert torch.equal(gen.predict(o, attn, src_ex, first, weight=w), want)
    assert (want >= V).any() and (want < V).any()            # both copied OOVs and generated words
