"""RNNEncoder: padding never leaks; -brnn final states are [forward; backward] per layer."""
import pytest
import torch

from onmt.constants import PAD
from onmt.models.rnn_encoder import RNNEncoder
from onmt.modules.embeddings import Embeddings


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("brnn", [False, True])
def test_padding_does_not_leak(rnn_type, brnn):
    torch.manual_seed(0)
    enc = RNNEncoder(rnn_type, 2, 8, Embeddings(15, 5), bidirectional=brnn).eval()
    src = torch.randint(4, 15, (2, 6))
    lengths = torch.tensor([6, 3])
    src[1, 3:] = PAD
    out = enc(src, lengths)
    assert out.memory.shape == (2, 6, 8)
    assert torch.equal(out.mask, torch.tensor([[True] * 6, [True] * 3 + [False] * 3]))
    assert (out.memory[1, 3:] == 0).all()
    alone = enc(src[1:2, :3], lengths[1:])  # the short example without padding
    assert torch.allclose(out.memory[1, :3], alone.memory[0], atol=1e-6)
    finals = out.final if isinstance(out.final, tuple) else (out.final,)
    finals_alone = alone.final if isinstance(alone.final, tuple) else (alone.final,)
    for f, fa in zip(finals, finals_alone):
        assert f.shape == (2, 2, 8)
        assert torch.allclose(f[:, 1], fa[:, 0], atol=1e-6)


def test_brnn_final_is_forward_then_backward():
    torch.manual_seed(0)
    enc = RNNEncoder("GRU", 1, 8, Embeddings(15, 5), bidirectional=True).eval()
    src = torch.randint(4, 15, (1, 5))
    out = enc(src, torch.tensor([5]))
    # forward direction's final = first half of the last memory state; backward's = second half of the first
    assert torch.allclose(out.final[0, 0, :4], out.memory[0, -1, :4], atol=1e-6)
    assert torch.allclose(out.final[0, 0, 4:], out.memory[0, 0, 4:], atol=1e-6)


def test_odd_size_with_brnn_rejected():
    with pytest.raises(ValueError):
        RNNEncoder("LSTM", 1, 7, Embeddings(10, 4), bidirectional=True)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_bf16_decoding_runs_the_rnn_in_bfloat16_and_returns_float32(rnn_type):
    """A model built to decode in bf16 (Execution.for_decoding) encodes under bfloat16 autocast without
    autograd: float32 outputs close to the float32 ones but not equal, padding still zero; with autograd
    or in training mode the encoder is float32, bit for bit."""
    from onmt.execution import Execution
    from onmt.models.fused import FusedRNNEncoder
    torch.manual_seed(0)
    ref_enc = RNNEncoder(rnn_type, 1, 16, Embeddings(15, 8), bidirectional=True).eval()
    enc = FusedRNNEncoder(rnn_type, 1, 16, Embeddings(15, 8), bidirectional=True,
                          execution=Execution.for_decoding("bf16")).eval()
    enc.load_state_dict(ref_enc.state_dict())
    src, lengths = torch.randint(4, 15, (3, 7)), torch.tensor([7, 5, 2])
    with torch.no_grad():
        ref = ref_enc(src, lengths)
        low = enc(src, lengths)
    assert low.memory.dtype == torch.float32 and (low.memory[2, 2:] == 0).all()
    err = (low.memory - ref.memory).abs().max().item()
    assert 1e-5 < err < 0.05, err
    finals = zip(*(x.final if isinstance(x.final, tuple) else (x.final,) for x in (ref, low)))
    assert all(b.dtype == torch.float32 and (a - b).abs().max() < 0.05 for a, b in finals)
    assert torch.equal(enc(src, lengths).memory, ref.memory)   # with autograd: float32
