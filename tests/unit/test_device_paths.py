"""What runs off the CPU: on a non-CPU device (here `meta`, which has no data and no CPU kernels) a decoding
step and a training pass launch as many operations whatever their rows, and no CPU-only kernel (oneDNN's
packed products, quantized engines) is reached. The cache-blocking budgets are shrunk so that any row
blocking would show on these tiny models; on the CPU the same counter sees it (the control)."""
import dataclasses

import pytest
import torch
import torch.fx.experimental._config as fx_config
from torch.utils._python_dispatch import TorchDispatchMode

from helpers.checkpoints import VOCABS, build_tiny
from helpers.models import make_batch
from onmt.fused import gold_softmax, mixture_scores, step_attention, step_mixture

FAMILIES = ("reinforced", "copy", "rnn")
CPU_ONLY = ("mkldnn", "quantized", "fbgemm", "onednn")


class OpCounter(TorchDispatchMode):
    """The names of the operations dispatched inside the block."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def tiny_budgets(monkeypatch):
    monkeypatch.setattr(step_mixture, "SOFTMAX_BLOCK", 8)
    monkeypatch.setattr(mixture_scores, "NORMALIZER_BLOCK", 8)
    monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", 8)
    monkeypatch.setattr(gold_softmax, "_CPU_PRODUCT_COLUMNS", 2)
    monkeypatch.setattr(step_attention, "BLOCK", 8)
    # the training paths select the real target positions (nonzero): on meta, assume every one is real
    with fx_config.patch(meta_nonzero_assume_all_nonzero=True):
        yield


def to_device(value, device):
    """`value` (an encoder output or decoder state: dataclasses, tuples and lists of tensors) on `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: to_device(getattr(value, f.name), device)
                                             for f in dataclasses.fields(value)})
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    return value


def decoding_step_ops(family, rows, device, scores):
    """The operations of one decoding step of `rows` rows on `device` (the encoder runs on the CPU: its
    packed sequences need host lengths); `scores`: the searches' decode_step_scores, else decode_step."""
    model, _ = build_tiny(family)
    batch = make_batch(VOCABS, B=rows, S=7, T=5, seed=3)
    with torch.no_grad():
        enc = to_device(model.encode(batch), device)
        model, batch = model.to(device), batch.to(torch.device(device))
        state = model.init_state(batch, enc)
        with OpCounter() as counter:
            step = model.decode_step_scores if scores else model.decode_step
            step(batch.tgt[:, 0], state)
    return counter.ops


def training_pass_ops(family, rows, device):
    """The operations of a teacher-forced pass (log p of the gold tokens) and its backward, encoder apart."""
    model, _ = build_tiny(family)
    model.train()
    batch = make_batch(VOCABS, B=rows, S=7, T=5, seed=3)
    with torch.no_grad():
        enc = to_device(model.encode(batch), device)
    model, batch = model.to(device), batch.to(torch.device(device))
    model.encode = lambda b: enc
    with OpCounter() as counter:
        model.gold_log_likelihood(batch)[0].sum().backward()
    return counter.ops


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("scores", [False, True])
def test_a_decoding_step_off_the_cpu_launches_as_many_operations_for_any_rows(family, scores):
    few, many = decoding_step_ops(family, 4, "meta", scores), decoding_step_ops(family, 48, "meta", scores)
    assert len(few) == len(many), (family, len(few), len(many))
    assert not [op for op in many if any(k in op for k in CPU_ONLY)]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_training_pass_off_the_cpu_launches_as_many_operations_for_any_rows(family):
    few, many = training_pass_ops(family, 4, "meta"), training_pass_ops(family, 48, "meta")
    assert len(few) == len(many), (family, len(few), len(many))
    assert not [op for op in many if any(k in op for k in CPU_ONLY)]


def test_the_counter_sees_cpu_blocking():
    """The control: on the CPU, with the shrunk budgets, See et al.'s decoding step blocks its rows."""
    assert len(decoding_step_ops("copy", 48, "cpu", False)) > len(decoding_step_ops("copy", 4, "cpu", False))
    assert len(training_pass_ops("reinforced", 48, "cpu")) > len(training_pass_ops("reinforced", 4, "cpu"))


