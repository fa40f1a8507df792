"""Pointer-generator mixture (Paulus et al. eqs. 9-13) against a loop over examples and source words
(float64). Its fused paths (onmt/fused/gold_mixture.py) are tested in test_gold_mixture.py."""
import torch
import torch.nn as nn

from onmt.constants import PAD
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.masked_softmax import masked_softmax
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.pointer_generator import PointerGenerator

V, V_SRC, D, E = 9, 14, 6, 4


def _setup(tied=True, seed=0):
    torch.manual_seed(seed)
    full = nn.Embedding(V_SRC, E, padding_idx=PAD).double()
    gen = PointerGenerator(D, V, embedding=PartialEmbedding(full, V), tied=tied).double()
    # extended ids: words 4..8 in the vocabulary, 9 and 10 the two OOV slots; duplicates; padding
    src_ex = torch.tensor([[5, 9, 5, 7, 9, 10], [4, 4, 6, PAD, PAD, PAD], [8, 9, 8, 8, 6, PAD]])
    mask = src_ex != PAD
    o = torch.randn(3, D, dtype=torch.float64, requires_grad=True)
    scores = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    return full, gen, o, scores, src_ex, mask


def _reference(gen, o, attn, src_ex, n_oov):
    """p(y) = p(u=0) softmax(W_out o + b)[y] + p(u=1) sum_{i: x_i = y} alpha_i, example by example."""
    w, b = gen.out_weight()
    rows = []
    for n in range(o.size(0)):
        p_copy = torch.sigmoid(gen.switch(o[n]))[0]
        gen_p = torch.softmax(w @ o[n] + b, 0)
        p = torch.cat([(1 - p_copy) * gen_p, torch.zeros(n_oov, dtype=o.dtype)])
        for i in range(src_ex.size(1)):
            p = p + p_copy * attn[n, i] * torch.nn.functional.one_hot(src_ex[n, i], V + n_oov)
        rows.append(p)
    return torch.stack(rows)


def test_matches_the_loop_reference_values_and_gradients():
    for tied in (True, False):
        full, gen, o, scores, src_ex, mask = _setup(tied)
        attn = masked_softmax(scores, mask)
        logp = gen(o, attn, src_ex, first_occurrence(src_ex), 2)
        ref = _reference(gen, o, attn, src_ex, 2)
        assert logp.shape == (3, V + 2)
        assert torch.allclose(logp.exp(), ref, atol=1e-12)
        assert torch.allclose(logp.exp().sum(1), torch.ones(3, dtype=torch.float64))
        # an OOV at two positions, a word at two / three positions; then plain and generation-only words
        for target in (torch.tensor([9, 4, 8]), torch.tensor([5, 6, 3])):
            g_got = torch.autograd.grad(logp.gather(1, target[:, None]).sum(), (o, scores), retain_graph=True)
            g_ref = torch.autograd.grad(ref.gather(1, target[:, None]).log().sum(), (o, scores),
                                        retain_graph=True)
            for a, b in zip(g_got, g_ref):
                assert torch.allclose(a, b, atol=1e-10)


def test_padding_and_unused_oov_slots_get_no_copy_mass():
    full, gen, o, scores, src_ex, mask = _setup()
    attn = masked_softmax(scores, mask)
    logp = gen(o, attn, src_ex, first_occurrence(src_ex), 2)
    with torch.no_grad():
        p_copy = torch.sigmoid(gen.switch(o))[:, 0]
        w, b = gen.out_weight()
        gen_p = torch.softmax(o @ w.t() + b, 1)
    assert torch.allclose(logp[1, PAD].exp(), (1 - p_copy[1]) * gen_p[1, PAD])
    assert (logp[1, V:].exp() == 0).all() and torch.isfinite(logp).all()  # example 1 has no OOV


def test_tied_projection_is_tanh_of_the_target_rows():
    full, gen, *_ = _setup()
    w, b = gen.out_weight()
    assert torch.allclose(w, torch.tanh(full.weight[:V] @ gen.proj))
    w_ext, b_ext = gen.out_weight(3)
    assert w_ext.shape == (V + 3, D) and (w_ext[V:] == 0).all() and (b_ext[V:] < -1e3).all()


def test_extreme_inputs_and_zero_copy_mass_stay_finite():
    full, gen, o, scores, src_ex, mask = _setup()
    o_big = (o.detach() * 1e4).requires_grad_()
    attn = masked_softmax(scores * 1e4, mask)
    attn = attn * torch.tensor([[1.0], [0.0], [1.0]], dtype=torch.float64)  # row 1: no copy mass at all
    logp = gen(o_big, attn, src_ex, first_occurrence(src_ex), 2)
    assert torch.isfinite(logp).all()
    logp[:, :V + 2].sum().backward()
    assert torch.isfinite(o_big.grad).all() and torch.isfinite(full.weight.grad).all()
    assert torch.isfinite(gen.proj.grad).all()

