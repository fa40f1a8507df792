"""x W^T + b for a fixed float32 W, with W pre-packed for oneDNN on CPU (no autograd).

The generator's products have a few to a few thousand rows against a (V, D) matrix of 50k rows. For
the small ones (the scheduled-sampling rows of one decoding step), MKL's sgemm on this kind of CPU
reaches a fifth of the machine's peak; oneDNN's inner-product kernel on a weight reordered once into
its blocked layout runs 3-5x faster (measured: 8 x 1200 by 1200 x 50k, 38 ms -> 8 ms on 2 cores).
Packing pays only when one packed weight serves several products: packing W for a single product,
even a large one, costs more than it saves (bench/packing_bench.py), so one-off products use
`addmm`. The result is an ordinary float32 product (a different summation order, so it matches
`addmm` to float32 rounding, not bit for bit). Where oneDNN cannot take the weight (CUDA, another
dtype, a build without it), everything falls back to `torch.addmm`.

The product runs in the wider of x's and W's dtypes with autocast off: a bfloat16 x from an autocast
(-amp) pass against the float32 W_out gives float32 logits (onmt/modules/precision.py).
"""
import torch

from onmt.modules.precision import float32_region

_PACK_ERRORS = (RuntimeError, AttributeError, NotImplementedError)


def _packable(weight):
    return (weight.device.type == "cpu" and weight.dtype == torch.float32 and weight.dim() == 2
            and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


class PackedLinear:
    """weight (V, D), bias (V,): call with x (N, D) -> (N, V). Holds no gradient: pack `detach()`ed
    tensors, or use `linear` below inside an autograd function."""

    def __init__(self, weight, bias, rows_hint=None, pack=True):
        self.weight, self.bias = weight, bias
        self.packed = None
        if pack and _packable(weight):
            try:
                self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, rows_hint)
            except _PACK_ERRORS:
                self.packed = None

    def __call__(self, x):
        dtype = torch.promote_types(x.dtype, self.weight.dtype)
        x = x.to(dtype)  # (N, D) itself unless x is the narrower
        with float32_region(x):
            if self.packed is not None and dtype == torch.float32:
                try:
                    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.packed,
                                                              self.bias.contiguous(),
                                                              "none", [], "")  # (N, V)
                except _PACK_ERRORS:
                    self.packed = None
            return torch.addmm(self.bias.to(dtype), x, self.weight.to(dtype).t())  # (N, V)


CACHE_ATTR = "_decoding_weight_cache"


def cached_while_unchanged(owner, tensors, build):
    """build() computed once and kept on `owner` (a module, outside its state dict) while `tensors`
    are unchanged: an optimizer step or load_state_dict writes parameters in place, which bumps
    their version counters, and .to() gives new storage, so either rebuilds. For what decoding
    derives from fixed weights (a packed W_out): a translation run packs once instead of once per
    batch. Call `drop_cached(owner)` when training starts, so no idle copy is kept. The decoding
    precision it is built in is the model's execution's (onmt/execution.py), fixed when the
    model is built."""
    key = tuple((t.data_ptr(), t._version, t.dtype, t.device) for t in tensors)
    cached = owner.__dict__.get(CACHE_ATTR)
    if cached is None or cached[0] != key:
        cached = (key, build())
        owner.__dict__[CACHE_ATTR] = cached
    return cached[1]


def _owners(owner):
    """`owner` and, for a module, its submodules (an nn.LSTM keeps its own decoding gate
    products)."""
    return owner.modules() if isinstance(owner, torch.nn.Module) else (owner,)


def drop_cached(owner):
    """Forget the cached_while_unchanged values of `owner` and of its submodules."""
    for m in _owners(owner):
        m.__dict__.pop(CACHE_ATTR, None)
