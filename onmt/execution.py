"""What runs: the one implementation selector of a model, made once and fixed when the model is
built, and the checks that say whether a fused kernel can run now.

    Execution(kernels="fused", precision=None, compile="off", capture="off")

    kernels    "fused" (the families' fused subclasses: onmt/models/fused.py and
               onmt/reinforced/fused.py, running onmt/fused's kernels wherever they apply) or
               "plain" (the equation-shaped classes of onmt/models and onmt/reinforced only)
    precision  the decoding precision of a model built to decode for translate.py or the API:
               "fp32", "bf16", "fp16" or "int8" (onmt/fused/low_precision.py). Such a model decodes
               its vocabulary products in that precision, its LSTM decoders' gates as one prepared
               product per layer and (bf16, int8) its encoder lowered. None (training, validation,
               the rollouts): the products in float32, nothing prepared. A plain model decodes in
               float32 only (another precision is a ValueError).
    compile    "off"; "decoder-step" (train.py -compile: the decoder's step through torch.compile,
               applied by components.build_decoder); "mlp-scores" (translate.py -compile: the mlp
               attention's decoding scores through torch.compile, given to GlobalAttention by the
               fused decoder; fused only)
    capture    "off"; "cuda-graphs" (train.py -cuda_graphs on CUDA: the teacher-forced pass and the
               ML loss, MLLoss.terms, through `captured`: torch.compile(mode="reduce-overhead"),
               one CUDA graph per batch shape, which -length_buckets keeps few). Eager on every
               other device: for_training gives "off" there

The entry points make it from their options (`for_training`, `for_decoding`) and hand it to
`build_model(..., execution=...)`, which picks the family's plain or fused class from it ONCE
(onmt/model_builder.py; components.py for the encoders and decoders), gives it to the model (kept as
`.execution`) and to the fused modules it builds, and logs it with the class and the fused paths
that do not apply to the model and why (`describe`, the models' `execution_notes`). The plain
classes never read it. Whether a fused kernel runs NOW (with or without autograd, in which dtype)
is decided at the call inside the fused code by the checks below:

    gradients_wanted   THE grad-mode check of the toolkit (the only call of torch.is_grad_enabled):
                       whether autograd records what is computed now. A decoding-only kernel (one
                       without a backward: packed or prepared products, the row-blocked softmax, the
                       in-place mixture, the sigmoid form of the mlp score) runs only where it is
                       False; a kernel whose gain is its written-out backward only where it is True.
    decoding_only      kernels "fused" and no gradient wanted (Execution.decoding_only)
    fast_dtype         the dtype / autocast condition of a fused kernel: one dtype among `dtypes`,
                       autocast off (under -amp the plain code's float32 islands run instead)
    training_pass      kernels "fused", gradients wanted, fast_dtype: the teacher-forced fused
                       passes (Execution.training_pass)
"""
from dataclasses import dataclass
from typing import Optional

import torch

KERNELS = ("plain", "fused")
FLOAT32 = (torch.float32,)


def check_kernels(kernels):
    """`kernels` itself when it is "plain" or "fused", else a ValueError."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
    return kernels


def gradients_wanted(*tensors):
    """Whether autograd records what is computed now: the grad mode is on and, when tensors are
    given, one of them requires a gradient. The toolkit's one grad-mode check (module docstring): a
    decoding-only kernel runs where this is False, whatever the caller (beam search, a greedy
    rollout, validation)."""
    if not torch.is_grad_enabled():
        return False
    return not tensors or any(t is not None and t.requires_grad for t in tensors)


def decoding_only(kernels):
    """Whether a fused kernel without a backward may run now: kernels "fused" and no gradient
    wanted."""
    return kernels == "fused" and not gradients_wanted()


def fast_dtype(*tensors, dtypes=FLOAT32):
    """Whether `tensors` (None ignored) all have one dtype, among `dtypes`, with autocast off on the
    first one's device: where the fused kernels are written for (and where -amp does not run)."""
    tensors = [t for t in tensors if t is not None]
    dtype = tensors[0].dtype
    return (dtype in dtypes and all(t.dtype == dtype for t in tensors)
            and not autocast_enabled(tensors[0].device.type))


def autocast_enabled(device_type):
    """torch.is_autocast_enabled(device_type); False on a device autocast does not know (meta)."""
    return torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type)


def training_pass(kernels, *tensors, dtypes=FLOAT32):
    """Whether a fused teacher-forced pass whose gain is its backward (onmt/fused/decoder_pass.py,
    step_attention.py) runs on `tensors`: kernels "fused", gradients wanted and fast_dtype."""
    return kernels == "fused" and gradients_wanted() and fast_dtype(*tensors, dtypes=dtypes)


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
        check_kernels(self.kernels)
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
        """Whether a fused kernel without a backward may run now (decoding_only: no gradient
        wanted)."""
        return decoding_only(self.kernels)

    def training_pass(self, *tensors, dtypes=FLOAT32):
        """Whether a fused pass whose gain is its backward runs now on `tensors`
        (training_pass)."""
        return training_pass(self.kernels, *tensors, dtypes=dtypes)

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
    import torch._dynamo  # the compiler stack, loaded only when a run captures (start-up time)

    # a graph per shape: the default limit of 8 would fall back to eager after 8 shapes
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 256)
    return torch.compile(fn, mode="reduce-overhead", dynamic=False)


PLAIN = Execution(kernels="plain")   # what a plain class built by its own from_opt records
