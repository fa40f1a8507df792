"""W_out = tanh(W_emb W_proj) (Paulus et al. eq. 13) with the tanh applied inside the product.

Every training pass forms W_out from the current parameters: a (V, E)(E, D) product and a tanh over
its V x D values. The plain formula (PointerGenerator.out_weight) writes the product to memory and
reads it back for the tanh, and torch's float32 tanh costs ~3 ns a value on the CPUs measured here:
at V 10k, E 128, D 768, one thread, the product took 34 ms and the tanh 38 ms more. oneDNN's inner
product applies the tanh to each output block while it is still in cache (an eltwise post-op of
torch.ops.mkldnn._linear_pointwise): 31 ms for both, the same values to float32 rounding (max
absolute difference 2.8e-7 from the float64 formula for both ways). Backward is the formula's:
dZ = g (1 - W_out^2), dE = dZ W_proj^T, dW_proj = E^T dZ, in blocks of rows (BACKWARD_ROWS).

Elsewhere (CUDA, a dtype other than float32, autocast on, a build without oneDNN) the plain formula
runs: under -amp on the CPU its bfloat16 product (widened before the tanh) and bfloat16 gradient
products were ~3 % faster a training step than this float32 kernel (median of six A B rounds in one
process).
"""
import torch

from onmt.execution import fast_dtype
from onmt.fused.packed_linear import _PACK_ERRORS, _packable

# rows of W_out per block of the backward: dZ = g (1 - W_out^2) of a block (512 x D float32: 1.5 MB
# at D 768) is made and used by both gradient products while in cache, never written whole (~10 % of
# that backward at V 10k, D 768, E 128 in a microbenchmark, one thread)
BACKWARD_ROWS = 512


class _TanhProduct(torch.autograd.Function):
    """tanh(emb @ proj) by oneDNN's inner product with the tanh as its post-op; backward written
    out."""

    @staticmethod
    def forward(ctx, emb, proj):
        w_out = torch.ops.mkldnn._linear_pointwise(emb.contiguous(), proj.t().contiguous(), None,
                                                   "tanh", [], "")  # (V, D)
        ctx.save_for_backward(emb, proj, w_out)
        return w_out

    @staticmethod
    def backward(ctx, grad):
        emb, proj, w_out = ctx.saved_tensors
        want_emb, want_proj = ctx.needs_input_grad[:2]
        d_emb = emb.new_empty(emb.shape) if want_emb else None  # (V, E)
        d_proj = proj.new_zeros(proj.shape) if want_proj else None  # (E, D)
        # row blocks: dZ stays in cache for both products
        for r0 in range(0, w_out.size(0), BACKWARD_ROWS):
            r1 = min(r0 + BACKWARD_ROWS, w_out.size(0))
            # (b, D) grad (1 - W_out^2)
            dz = torch.ops.aten.tanh_backward(grad[r0:r1], w_out[r0:r1])
            if want_emb:
                torch.mm(dz, proj.t(), out=d_emb[r0:r1])  # (b, E)
            if want_proj:
                d_proj.addmm_(emb[r0:r1].t(), dz)  # (E, D)
        return d_emb, d_proj


def fusable(emb, proj):
    """Whether tanh_product runs the fused kernel on these tensors: float32 on a CPU with oneDNN,
    autocast off."""
    return _packable(proj) and _packable(emb) and fast_dtype(emb, proj)


def tanh_product(emb, proj):
    """tanh(emb @ proj) for emb (V, E), proj (E, D) float32 on the CPU, autocast off (fusable):
    (V, D), differentiable in both. Falls back to the formula where oneDNN refuses the shapes."""
    try:
        return _TanhProduct.apply(emb, proj)  # (V, D)
    except _PACK_ERRORS:
        return torch.tanh(emb @ proj)  # (V, D)
