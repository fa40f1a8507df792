"""tanh_product (onmt/fused/tied_weight.py), Paulus et al. eq. 13's W_out = tanh(W_emb W_proj) with the tanh
inside oneDNN's product, against the formula in float64 (values) and under autograd (both gradients),
and PointerGenerator.out_weight built fused against plain."""
import pytest
import torch

from onmt.fused import tied_weight
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.fused import FusedPointerGenerator
from onmt.reinforced.pointer_generator import PointerGenerator

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="PyTorch built without oneDNN")


def _formula(emb, proj):
    return torch.tanh(emb.double() @ proj.double())  # (V, D) the slow, obvious reference


@needs_onednn
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 3, 5), (1000, 16, 48), (3001, 64, 130)])
def test_tanh_product_values_and_gradients_equal_the_formula(shape):
    V, E, D = shape
    g = torch.Generator().manual_seed(V)
    emb = (torch.randn(V, E, generator=g) * 0.5).requires_grad_()
    proj = (torch.randn(E, D, generator=g) * 0.5).requires_grad_()
    assert tied_weight.fusable(emb, proj)
    w = tied_weight.tanh_product(emb, proj)
    assert w.shape == (V, D) and w.dtype == torch.float32 and w.grad_fn is not None
    ref = _formula(emb, proj)
    plain_error = (torch.tanh(emb @ proj).double() - ref).abs().max()  # float32 rounding of the formula itself
    assert (w.double() - ref).abs().max() <= 2 * plain_error + 1e-7
    upstream = torch.randn(V, D, generator=g)
    d_emb, d_proj = torch.autograd.grad((w * upstream).sum(), (emb, proj))
    e64, p64 = emb.detach().double().requires_grad_(), proj.detach().double().requires_grad_()
    r_emb, r_proj = torch.autograd.grad((_formula(e64, p64) * upstream.double()).sum(), (e64, p64))
    # the float32 formula under autograd: its own rounding sets the scale of the allowed difference
    p_emb, p_proj = torch.autograd.grad((torch.tanh(emb @ proj) * upstream).sum(), (emb, proj))
    for got, plain, exact in ((d_emb, p_emb, r_emb), (d_proj, p_proj, r_proj)):
        torch.testing.assert_close(got.double(), exact, rtol=1e-4, atol=1e-4)
        assert (got.double() - exact).abs().max() <= 3 * (plain.double() - exact).abs().max() + 1e-6


@needs_onednn
def test_only_one_input_needing_a_gradient_gets_one():
    emb, proj = torch.randn(50, 8), torch.randn(8, 12, requires_grad=True)
    w = tied_weight.tanh_product(emb, proj)
    (d_proj,) = torch.autograd.grad(w.sum(), (proj,))
    torch.testing.assert_close(d_proj, emb.t() @ (1 - torch.tanh(emb @ proj) ** 2), rtol=1e-5, atol=1e-5)


def test_not_fusable_in_float64_or_under_autocast():
    emb, proj = torch.randn(20, 4), torch.randn(4, 6)
    assert not tied_weight.fusable(emb.double(), proj.double())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not tied_weight.fusable(emb, proj)


@needs_onednn
def test_fused_generator_out_weight_equals_the_plain_one_and_its_gradients():
    torch.manual_seed(0)
    vocab, tgt, E, D, n_oov = 60, 40, 16, 24, 3

    def build(cls):
        torch.manual_seed(0)
        emb = PartialEmbedding(torch.nn.Embedding(vocab, E), tgt)
        return cls(D, tgt, embedding=emb, tied=True)

    plain, fused = build(PointerGenerator), build(FusedPointerGenerator)
    fused.load_state_dict(plain.state_dict())
    (w_p, b_p), (w_f, b_f) = plain.out_weight(n_oov), fused.out_weight(n_oov)
    assert w_f.shape == (tgt + n_oov, D) and b_f.shape == (tgt + n_oov,)
    torch.testing.assert_close(w_f, w_p, rtol=0, atol=2e-6)
    assert torch.equal(b_f, b_p)
    upstream = torch.randn_like(w_p)
    (w_p * upstream).sum().backward()
    (w_f * upstream).sum().backward()
    for (name, a), b in zip(plain.named_parameters(), fused.parameters()):
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=name)
