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
