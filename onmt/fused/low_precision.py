"""Decoding's vocabulary product x W^T + b in a low precision (translate.py / the API `-precision`).

At decoding time the largest product of a step is the generator's (B*K, D) x (D, V) (Paulus et al.'s
W_out o_t, See et al.'s and the RNN baselines' vocabulary projection): DESIGN.md section 4. Its
weight is fixed for the whole translation, so it is prepared once (cached_while_unchanged, per model
and precision), never per batch or step:

    fp32  PackedLinear: float32, W packed once for oneDNN (packed_linear.py)
    bf16  CastLinear: W cast to bfloat16 once (packed for oneDNN on the CPU), x cast per call;
          float32 bias
    fp16  CastLinear in float16 (CUDA only: onmt/hardware.py refuses it on the CPU)
    int8  Int8Linear: upstream's meaning, PyTorch's dynamic quantization (torch.ao's
          quantize_dynamic of nn.Linear): W quantized once per output row (symmetric int8, one scale
          per row), x quantized per call from its own range (reduce_range, as quantize_dynamic
          on x86); CPU only

Every product returns float32 (N, V): what follows it (the switch, log-sum-exp, log-softmax, the
copy mixture's sums) stays in float32, the islands `-amp` keeps (onmt/modules/precision.py). A
bfloat16 product's result is rounded to bfloat16 (8 significant bits) before the widening: PyTorch
has no CPU kernel that returns float32 from bfloat16 inputs; a logit of 10 is then known to +-0.02.
"""
import warnings

import torch

from onmt.execution import fast_dtype
from onmt.fused.packed_linear import PackedLinear, _packable, cached_while_unchanged
from onmt.hardware import int8_engine
from onmt.modules.precision import float32_region

_PACK_ERRORS = (RuntimeError, AttributeError, NotImplementedError)
CAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class CastLinear:
    """weight (V, D), bias (V,) -> x (N, D) -> float32 (N, V), the product in `dtype`
    (bf16 / fp16)."""

    def __init__(self, weight, bias, dtype, rows_hint=None):
        self.dtype = dtype
        self.weight = weight.detach().to(dtype).contiguous()  # (V, D) cast once
        self.bias = bias.detach().float()  # (V,) added in float32
        self.packed = None
        if (self.weight.device.type == "cpu" and dtype == torch.bfloat16
                and _packable(weight.float())):
            try:
                self.packed = torch.ops.mkldnn._reorder_linear_weight(self.weight, rows_hint)
            except _PACK_ERRORS:
                self.packed = None

    def __call__(self, x):
        x = x.to(self.dtype).contiguous()  # (N, D)
        with float32_region(x):
            if self.packed is not None:
                try:
                    # (N, V)
                    out = torch.ops.mkldnn._linear_pointwise(x, self.packed, None, "none", [], "")
                    return out.float().add_(self.bias)  # (N, V) float32
                except _PACK_ERRORS:
                    self.packed = None
            return torch.mm(x, self.weight.t()).float().add_(self.bias)  # (N, V) float32


class Int8Linear:
    """weight (V, D), bias (V,) -> x (N, D) -> float32 (N, V) by PyTorch's dynamic int8 quantization
    (CPU): W per output row once, here; x per call."""

    def __init__(self, weight, bias, engine=None):
        self.engine = engine or int8_engine(linear=True)
        w = weight.detach().float().cpu()  # (V, D)
        scales = (w.abs().amax(dim=1) / 127.0).clamp(min=1e-8).double()  # (V,)
        zero = torch.zeros(w.size(0), dtype=torch.long)  # (V,)
        # quantized tensor constructors warn of a future deprecation
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _engine(self.engine):
                self.packed = torch.ops.quantized.linear_prepack(
                    torch.quantize_per_channel(w, scales, zero, 0, torch.qint8),
                    bias.detach().float().cpu())

    def __call__(self, x):
        with _engine(self.engine), torch.autocast(device_type="cpu", enabled=False):
            # (N, V)
            return torch.ops.quantized.linear_dynamic(x.float().contiguous(), self.packed, True)


class _engine:
    """torch.backends.quantized.engine set to `name` inside the block (the packed weight is the
    engine's)."""

    def __init__(self, name):
        self.name, self.before = name, None

    def __enter__(self):
        self.before = torch.backends.quantized.engine
        if self.name and self.before != self.name:
            torch.backends.quantized.engine = self.name

    def __exit__(self, *exc):
        if torch.backends.quantized.engine != self.before:
            torch.backends.quantized.engine = self.before
        return False


def prepared_linear(weight, bias, precision="fp32", rows_hint=None):
    """The decoding product x W^T + b for weight (V, D), bias (V,) in `precision`, prepared once:
    a callable x (N, D) -> float32 (N, V) (module docstring). No gradient."""
    weight, bias = weight.detach(), bias.detach()
    if precision == "fp32":
        return PackedLinear(weight, bias, rows_hint)
    if precision in CAST_DTYPES:
        return CastLinear(weight, bias, CAST_DTYPES[precision], rows_hint)
    if precision == "int8":
        return Int8Linear(weight, bias)
    raise ValueError(f"unknown precision {precision!r}")


def decoding_gates(execution, rnn, x, h):
    """The `gates` of onmt/modules/lstm_step.py for one decoding step of the nn.LSTM `rnn` on
    x (B, E) and h (L, B, H), or None (the plain two addmm per layer): with fused kernels, without
    autograd, in eval mode, in a model built to decode in a chosen precision
    (`execution.prepared_decoding`: translate.py, the API; onmt/execution.py), on float32
    inputs.
    Each layer's gates are then ONE product [x ; h] [W_ih ; W_hh]^T + (b_ih + b_hh) prepared once
    per set of parameters in that precision (lstm_gate_products; packed float32, bf16 or int8, the
    gates float32) instead of two addmm and an add per layer and step. Measured at 150 rows, input
    128, hidden 256, one thread: 1.38 ms per step for the two addmm, 1.22 packed float32, 0.75 bf16,
    0.45 int8."""
    if not (execution.prepared_decoding and execution.decoding_only() and not rnn.training
            and fast_dtype(x, h)):
        return None
    return lstm_gate_products(rnn, execution.decoding_precision)


def lstm_gate_products(rnn, precision):
    """Per layer of the nn.LSTM `rnn`, its DecodingLSTMLayer in `precision`, prepared once while its
    parameters are unchanged (decoding_gates)."""
    def build():
        layers = []
        for layer in range(rnn.num_layers):
            w_ih, w_hh, b_ih, b_hh = (getattr(rnn, f"{name}_l{layer}").detach().float()
                                      for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            # (4H, E+H), (4H,)
            layers.append(DecodingLSTMLayer(torch.cat([w_ih, w_hh], dim=1), b_ih + b_hh,
                                            precision))
        return layers
    return cached_while_unchanged(rnn, list(rnn.parameters()), build)


class DecodingLSTMLayer:
    """One LSTM layer's decoding step, prepared (lstm_step's `gates`): called on [x ; h] (B, E+H),
    the gates' pre-activations (B, 4H) float32 from ONE product [W_ih ; W_hh] in the decoding
    precision, its g rows (the cell input's, PyTorch's order i, f, g, o) and bias doubled (exact: a
    power of two, also for int8's per-row scales); `cell(z, c)` then gets all four gates from one
    sigmoid, tanh(g) = 2 sigmoid(2g) - 1, and tanh(c) the same way: torch's float32 tanh reads ~0.4
    elements per ns on these CPUs, its sigmoid ~2.5 (150 rows, H 256, one thread: 310 against 150 us
    a cell). The same values as the cell's formula to float32 rounding of the cancellation in 2s - 1
    (absolute error ~1e-7)."""

    def __init__(self, weight, bias, precision):
        H = weight.size(0) // 4
        scale = torch.ones(4 * H, dtype=weight.dtype, device=weight.device)  # (4H,)
        scale[2 * H:3 * H] = 2.0
        self.product = prepared_linear(weight * scale.unsqueeze(1), bias * scale, precision)

    def __call__(self, x_h):
        return self.product(x_h)  # (B, 4H) float32, the g part doubled

    @staticmethod
    def cell(z, c_prev):
        """z (B, 4H) from __call__, c_prev (B, H) -> h, c (B, H) each: PyTorch's LSTM cell."""
        # (B, H) each: sigma(i), sigma(f), sigma(2g), sigma(o)
        i, f, g2, o = torch.sigmoid(z).chunk(4, dim=1)
        c = (f * c_prev).addcmul_(i, g2.mul(2.0).sub_(1.0))  # (B, H) f c + i tanh(g)
        return o * torch.mul(c, 2.0).sigmoid_().mul_(2.0).sub_(1.0), c  # (B, H) o tanh(c), (B, H)


def quantized_rnn(rnn):
    """The nn.LSTM / nn.GRU `rnn` as PyTorch's dynamically quantized module (upstream's -precision
    int8: quantize_dynamic takes recurrent layers too): int8 weights per layer, built once while
    rnn's parameters are unchanged, with the engine that has the faster recurrent kernel
    (int8_engine())."""

    def build():
        engine = int8_engine()
        # no cached values
        fresh = type(rnn)(rnn.input_size, rnn.hidden_size, num_layers=rnn.num_layers, bias=rnn.bias,
                          batch_first=rnn.batch_first, bidirectional=rnn.bidirectional)
        fresh.load_state_dict({k: v.detach().float().cpu() for k, v in rnn.state_dict().items()})
        # torch.ao warns of its future deprecation
        with warnings.catch_warnings(), _engine(engine):
            warnings.simplefilter("ignore")
            wrapped = torch.nn.Sequential(fresh.eval())
            quantized = torch.ao.quantization.quantize_dynamic(wrapped, {type(rnn)},
                                                               dtype=torch.qint8)[0]
        return engine, quantized
    return cached_while_unchanged(rnn, list(rnn.parameters()), build)


def encoder_lowered(execution, encoder, packed):
    """Whether `encoder` (a module) runs its RNN on `packed` through run_rnn: with fused kernels,
    without autograd, in eval mode, in a model built to decode in bf16 or int8 (`execution`:
    -precision), on float32 inputs."""
    return (execution.prepared_decoding and execution.precision in ("bf16", "int8")
            and execution.decoding_only() and not encoder.training and fast_dtype(packed.data))


def run_rnn(rnn, packed, precision):
    """rnn (nn.LSTM / nn.GRU) on the packed sequence `packed`, without autograd, in decoding
    precision `precision`: bf16 under bfloat16 autocast (oneDNN's bf16 LSTM, ~1.3x faster on a CPU
    with native bfloat16), int8 by quantized_rnn (~1.3x), otherwise in float32. Outputs are
    float32."""
    if precision == "int8" and packed.data.device.type == "cpu":
        engine, quantized = quantized_rnn(rnn)
        with _engine(engine):
            return quantized(packed)
    if precision != "bf16":
        return rnn(packed)
    with torch.autocast(device_type=packed.data.device.type, dtype=torch.bfloat16):
        out, final = rnn(packed)
    widen = ((lambda x: tuple(t.float() for t in x)) if isinstance(final, tuple)
             else (lambda x: x.float()))
    return out._replace(data=out.data.float()), widen(final)

