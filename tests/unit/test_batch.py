"""Batch: its sizes, the target tokens teacher forcing predicts, and `to` (tensors move, the rest stays)."""
import torch

from onmt.constants import BOS, EOS, PAD
from onmt.inputters.batch import Batch


def batch(with_target=True):
    src = torch.tensor([[5, 6, 7], [8, 9, PAD]])                                     # (B, S) = (2, 3)
    tgt = torch.tensor([[BOS, 5, 6, EOS], [BOS, 9, EOS, PAD]])                       # (B, T) = (2, 4)
    return Batch(src=src, src_lengths=torch.tensor([3, 2]), src_ex=torch.tensor([[5, 6, 10], [8, 10, PAD]]),
                 oovs=[["x"], ["y"]], n_oov=1, indices=torch.tensor([4, 1]),
                 tgt=tgt if with_target else None, tgt_ex=tgt.clone() if with_target else None)


def test_sizes_and_the_target_tokens_teacher_forcing_predicts():
    b = batch()
    assert b.batch_size == 2
    assert b.n_tgt_tokens == 3 + 2          # everything after <s>, </s> included, padding not
    assert batch(with_target=False).n_tgt_tokens == 0


def test_to_moves_every_tensor_and_keeps_the_rest():
    b = batch()
    moved = b.to(torch.device("meta"))
    for name in ("src", "src_lengths", "src_ex", "indices", "tgt", "tgt_ex"):
        assert getattr(moved, name).device.type == "meta", name
        assert getattr(b, name).device.type == "cpu", name        # a new Batch: the original unchanged
    assert moved.oovs is b.oovs and moved.n_oov == 1
    assert batch(with_target=False).to(torch.device("meta")).tgt is None


def test_batches_are_pinned_for_cuda_only(monkeypatch):
    from onmt.inputters.batch import pins_memory
    assert pins_memory("cuda") and pins_memory(torch.device("cuda:1"))
    assert not pins_memory("cpu") and not pins_memory(torch.device("meta"))
    b = batch()
    assert b.pinned_for(torch.device("cpu")) is b and b.pinned_for(torch.device("meta")) is b
    pinned = []

    def fake_pin(t):             # this machine has no CUDA: record the call, return a marked copy
        pinned.append(t)
        return t.clone()
    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda t: False)
    p = b.pinned_for(torch.device("cuda"))
    assert len(pinned) == 6 and p is not b and p.oovs is b.oovs
    for name in ("src", "src_lengths", "src_ex", "indices", "tgt", "tgt_ex"):
        assert torch.equal(getattr(p, name), getattr(b, name)) and getattr(p, name) is not getattr(b, name)
    pinned.clear()
    b.to(torch.device("meta"))
    assert pinned == []          # moving to any other device pins nothing
