"""onmt/fused/step_mixture.py: the decoding-time distribution (FusedPointerGenerator.step_log_probs on its
kernels) equals the plain PointerGenerator.forward, its row-blocked softmax and in-place mixture the plain
copy_mixture functions."""
import pytest
import torch
import torch.nn as nn

from onmt.constants import PAD
from onmt.fused.gold_mixture import packed_weight
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.masked_softmax import masked_softmax
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.fused import FusedPointerGenerator
from onmt.reinforced.pointer_generator import PointerGenerator

V, V_SRC, D, E = 300, 340, 16, 8


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("n_oov", [0, 3])
def test_step_log_probs_equal_the_plain_generator(tied, n_oov):
    torch.manual_seed(0)
    full = nn.Embedding(V_SRC, E, padding_idx=PAD)
    gen = PointerGenerator(D, V, embedding=PartialEmbedding(full, V), tied=tied)
    fused = FusedPointerGenerator(D, V, embedding=gen.embedding if tied else None, tied=tied)
    fused.load_state_dict(gen.state_dict())
    N, S = 37, 9
    src_ex = torch.randint(4, V + n_oov, (N, S))  # (N, S) extended ids, OOV slots included
    src_ex[:, 1] = src_ex[:, 0]  # duplicated words
    src_ex[:5, 6:] = PAD
    attn = masked_softmax(torch.randn(N, S), src_ex != PAD)  # (N, S)
    o = 3 * torch.randn(N, D)
    weight = gen.out_weight()
    with torch.no_grad():
        want, want_copy = gen(o, attn, src_ex, first_occurrence(src_ex), n_oov,
                              weight=gen.pad_weight(weight, n_oov), return_p_copy=True)  # (N, X), (N,)
        got, got_copy = fused.step_log_probs(o, attn, src_ex, first_occurrence(src_ex), n_oov,
                                             packed_weight(fused.out_weight()))
    assert got.shape == want.shape == (N, V + n_oov)
    assert torch.allclose(got, want, atol=2e-5, rtol=0)
    assert torch.equal(got.argmax(1), want.argmax(1))
    assert torch.allclose(got_copy, want_copy, atol=1e-6)
    assert torch.allclose(got.exp().sum(1), torch.ones(N), atol=1e-4)


def test_decoding_mixture_equals_the_plain_mixture(monkeypatch):
    """Without autograd the generation softmax runs in row blocks into one buffer, the mixture in place;
    under autograd both are the plain copy_mixture functions."""
    import onmt.fused.step_mixture as sm
    import onmt.modules.copy_mixture as cm
    torch.manual_seed(0)
    N, V, S, n_oov = 9, 13, 6, 3
    logits, switch = torch.randn(N, V), torch.randn(N, 1)
    attn = torch.softmax(torch.randn(N, S), dim=1)
    src_ex = torch.randint(4, V + n_oov, (N, S))
    src_ex[:, 1] = src_ex[:, 0]  # a duplicated word
    first = cm.first_occurrence(src_ex)

    def run(mixture):
        gen = mixture.generation_log_probs(logits, torch.nn.functional.logsigmoid(switch), n_oov)
        return mixture.scatter_mixture(gen, torch.nn.functional.logsigmoid(-switch), attn, src_ex, first)
    ref = run(cm)
    with torch.enable_grad():
        assert torch.equal(run(sm), ref)
    monkeypatch.setattr(sm, "SOFTMAX_BLOCK", 2 * V)  # blocks of 2 rows
    with torch.no_grad():
        fast = run(sm)
    assert torch.allclose(ref, fast, atol=1e-6)
    assert torch.allclose(fast.exp().sum(1), torch.ones(N), atol=1e-5)
