"""What runs: the one implementation selector of a model, made once and fixed when the model is
built.

    Execution(kernels="fused", precision=None, compile="off", capture="off")

    kernels    "fused" (onmt/fused's kernels wherever they apply) or "plain" (the equation-shaped
               reference code only): onmt/fused/kernels.py
    precision  the decoding precision of a model built to decode for translate.py or the API:
               "fp32", "bf16", "fp16" or "int8" (low_precision.py). Such a model decodes its
               vocabulary products in that precision, its LSTM decoders' gates as one prepared
               product per layer and (bf16, int8) its encoder lowered. None (training, validation,
               the rollouts): the products in float32, nothing prepared. A plain model decodes in
               float32 only (another precision is a ValueError).
    compile    "off"; "decoder-step" (train.py -compile: the decoder's step through torch.compile,
               set on the decoder when it is built); "mlp-scores" (translate.py -compile: the mlp
               attention's decoding scores through torch.compile, given to GlobalAttention when it
               is built; fused only)
    capture    "off"; "cuda-graphs" (train.py -cuda_graphs on CUDA: the teacher-forced pass and the
               ML loss, MLLoss.terms, through `captured`: torch.compile(mode="reduce-overhead"),
               one CUDA graph per batch shape, which -length_buckets keeps few). Eager on every
               other device: for_training gives "off" there

The entry points make it from their options (`for_training`, `for_decoding`) and hand it to
`build_model(..., execution=...)`, which gives it to every module it builds (each keeps it as
`.execution`) and logs it, with the fused paths that do not apply to the model and why
(`describe`, the models' `execution_notes`). Whether a fused kernel runs NOW (with or without
autograd, in which dtype) is still decided at the call by onmt/fused/kernels.py's checks, through
`decoding_only` and `training_pass` below: the grad mode picks between a decoding-only kernel and a
training pass, the selector says whether fused kernels exist at all.
"""
from dataclasses import dataclass
from typing import Optional

import torch

from onmt.fused import kernels as _kernels

PRECISIONS = ("fp32", "bf16", "fp16", "int8")
COMPILE = ("off", "decoder-step", "mlp-scores")
CAPTURE = ("off", "cuda-graphs")


@dataclass(frozen=True)
class Execution:
    kernels: str = "fused"
    precision: Optional[str] = None
    compile: str = "off"
    capture: str = "off"

    def __post_init__(self):
        _kernels.check_kernels(self.kernels)
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS} or None, "
                             f"got {self.precision!r}")
        if self.compile not in COMPILE:
            raise ValueError(f"compile must be one of {COMPILE}, got {self.compile!r}")
        if self.capture not in CAPTURE:
            raise ValueError(f"capture must be one of {CAPTURE}, got {self.capture!r}")
        if self.kernels == "plain" and self.precision not in (None, "fp32"):
            raise ValueError(f"decoding precision {self.precision} needs the fused kernels: "
                             "a model built with kernels='plain' decodes in fp32 only")
        if self.kernels == "plain" and self.compile == "mlp-scores":
            raise ValueError("compile mlp-scores is a fused kernel "
                             "(step_attention.compiled_mlp_scores): "
                             "a model built with kernels='plain' runs the plain mlp score")

    @classmethod
    def for_training(cls, opt, device="cpu"):
        """train.py's: fused kernels, no decoding precision, -compile the decoder's step,
        -cuda_graphs the captured teacher-forced pass where `device` is CUDA (eager elsewhere)."""
        import torch
        cuda = torch.device(device).type == "cuda"
        return cls(compile="decoder-step" if opt.compile else "off",
                   capture="cuda-graphs" if opt.cuda_graphs and cuda else "off")

    @classmethod
    def for_decoding(cls, precision="fp32", compile=False):
        """translate.py's and the API's: fused kernels decoding in `precision`, -compile the mlp
        scores."""
        return cls(precision=precision, compile="mlp-scores" if compile else "off")

    @property
    def fused(self):
        return self.kernels == "fused"

    @property
    def decoding_precision(self):
        """The precision of the decoding products: `precision`, float32 when None."""
        return self.precision or "fp32"

    @property
    def prepared_decoding(self):
        """Whether this model decodes for translate.py / the API (a precision was chosen): its LSTM
        decoders' gates are then prepared products (low_precision.decoding_gates), its encoder
        lowered at bf16 / int8."""
        return self.fused and self.precision is not None

    def decoding_only(self):
        """Whether a fused kernel without a backward may run now (kernels.decoding_only: no gradient
        wanted)."""
        return _kernels.decoding_only(self.kernels)

    def training_pass(self, *tensors, dtypes=_kernels.FLOAT32):
        """Whether a fused pass whose gain is its backward runs now on `tensors`
        (kernels.training_pass)."""
        return _kernels.training_pass(self.kernels, *tensors, dtypes=dtypes)

    def describe(self):
        """"kernels fused, precision fp32, compile off": what build_model's "Model ..." line
        says."""
        precision = (self.decoding_precision
                     + (" (prepared decoding)" if self.precision is not None else ""))
        capture = f", capture {self.capture}" if self.capture != "off" else ""
        return f"kernels {self.kernels}, precision {precision}, compile {self.compile}{capture}"


def as_execution(value):
    """An Execution from an Execution, None (the default) or a kernels name ("fused" / "plain")."""
    if value is None:
        return Execution()
    if isinstance(value, Execution):
        return value
    return Execution(kernels=value)


def compile_step(decoder):
    """compile "decoder-step" (train.py -compile), applied by a decoder when it is built: its `step`
    through torch.compile, kept on the instance (so the model's passes, rollouts and decoding call
    it; the parameters, the state dict and so the checkpoints are unchanged). One graph for every
    batch size, source length and step (dynamic shapes: the intra-decoder history grows by one row
    per step); the fused per-pass autograd functions inside a step (onmt/fused/) break the graph and
    run eagerly. torch.compile builds on the first call."""
    decoder.step = torch.compile(type(decoder).step.__get__(decoder), dynamic=True)


def captured(fn):
    """capture "cuda-graphs": `fn` (MLLoss.terms: the teacher-forced decoder pass, the generator,
    the loss and, through autograd, their backward) through torch.compile(mode="reduce-overhead",
    dynamic=False): CUDA graphs, one per batch shape (-length_buckets: a few dozen at CNN/DM
    lengths, bench/padding_bench.py), captured when a shape is first seen and replayed after. The
    region asks the host nothing (a model built with this capture: See et al.'s gold pass computes
    every row, tests/unit/test_length_buckets.py); the encoder and the statistics run eagerly
    outside it (MLLoss.__call__)."""
    import torch
    import torch._dynamo

    # a graph per shape: the default limit of 8 would fall back to eager after 8 shapes
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 256)
    return torch.compile(fn, mode="reduce-overhead", dynamic=False)
