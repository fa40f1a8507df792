"""log softmax(o W^T + b)[gold] for many rows without keeping a (N, V) graph (docs/DESIGN.md
section 4).

The ML loss needs, per target token, only the log-probability of the gold word under the generation
distribution. `gold_log_softmax` computes it with ONE matrix product and keeps ONE (N, V) buffer for
backward: the forward pass overwrites the logits in place with exp(logits - rowmax) (row by row in
cache-sized chunks, after reading what it needs from them), and the backward pass turns that buffer
in place into the gradient of the logits, g * (onehot(gold) - softmax), before the two products that
give the gradients of o and W. Compared with autograd over softmax / log / gather this avoids
allocating a dozen (N, V) tensors and as many memory passes over them.

It also returns, without gradient, what an exact argmax of the pointer mixture needs: the largest
logit of each row and its id, and the logits at given columns (the source words).
"""
import torch

from onmt.fused.fast_exp import exp_shifted_
from onmt.fused.kernels import block_rows
from onmt.fused.packed_linear import PackedLinear, _packable
from onmt.modules.precision import float32_region

# Rows per chunk of the element-wise passes on CPU: about 2 MiB of float32 logits for V = 50k, so a
# chunk stays in cache between its max, gather, exp and sum. On accelerators one chunk holds all
# rows.
_CPU_CHUNK_ELEMENTS = 1 << 19

# Columns (vocabulary rows of W) per block of the CPU logits product. The (N, D) x (D, V) product
# runs 30-40% slower when V is not a multiple of 16 (its result's rows are then misaligned): on one
# core of the AMD host, N 292, D 256: V 17,326 47 GFLOP/s, V 17,328 65; V 50,001 43, V 50,000 60.
# Block by block (1024 columns) into one reused, aligned (N, 1024) buffer, each block then copied to
# its place, any V runs as fast as an aligned one (N 292 and 1616, V 17,326: 1.46x; V 50,000:
# 0.97-1.0x). addmm straight into the strided (N, 1024) slice of the result is no substitute: it
# computes into a fresh buffer of its own and copies (measured up to 2x slower than one addmm at
# N 1616, V 50k).
_CPU_PRODUCT_COLUMNS = 1024

# Rows from which packing W for oneDNN pays even for a single product (one thread, this AMD host,
# pack + product against the column blocks: N 1616, V 50k, D 256 612 against 703 ms; N 1616, V 17k
# 211 / 238; N 3200, V 50k, D 400 1599 / 1916; N 1000, V 50k 398 / 416; but N 800, V 17k 112 / 84):
# the training pass's logits of a batch of B*T >= this many tokens (bench/packing_bench.py prints
# the comparison).
_PACK_ROWS = 1024


def training_logits(o, weight, bias):
    """o W^T + b (N, V), float32 in, for the one product of a training pass: from _PACK_ROWS rows on
    the CPU, W packed for oneDNN and one product (PackedLinear); below, linear_in_column_blocks. The
    same sums up to float32 rounding of the summation order."""
    if o.size(0) >= _PACK_ROWS and o.dtype == torch.float32 and _packable(weight):
        return PackedLinear(weight, bias, rows_hint=o.size(0))(o)  # (N, V)
    return linear_in_column_blocks(o, weight, bias)  # (N, V)


def linear_in_column_blocks(o, weight, bias):
    """o W^T + b (N, V) for o (N, D), weight (V, D), bias (V,): on CPU one addmm per block of
    _CPU_PRODUCT_COLUMNS vocabulary columns into one reused contiguous block, copied into the
    result; elsewhere one addmm. The same sums as one addmm per element (a block does not split a
    dot product)."""
    N, V = o.size(0), weight.size(0)
    if o.device.type != "cpu" or V <= _CPU_PRODUCT_COLUMNS:
        return torch.addmm(bias, o, weight.t())  # (N, V)
    out = o.new_empty(N, V)  # (N, V)
    # (N, C) reused: stays in cache between product and copy
    block = o.new_empty(N, _CPU_PRODUCT_COLUMNS)
    for c0 in range(0, V, _CPU_PRODUCT_COLUMNS):
        c1 = min(V, c0 + _CPU_PRODUCT_COLUMNS)
        part = block.view(-1)[:N * (c1 - c0)].view(N, c1 - c0)  # (N, c1 - c0) contiguous
        torch.addmm(bias[c0:c1], o, weight[c0:c1].t(), out=part)
        out[:, c0:c1] = part
    return out


def _row_blocks(n_rows, n_cols, device):
    """[(first row, end row)] of the cache-sized row blocks of an (n_rows, n_cols) pass
    (one block off CPU)."""
    step = block_rows(device, n_rows, n_cols, _CPU_CHUNK_ELEMENTS)
    return [(r, min(r + step, n_rows)) for r in range(0, n_rows, step)]


# Columns per chunk of row_max's first pass (as onmt/modules/beam_topk.py's chunk maxima)
_MAX_CHUNK = 128


def row_max(x, out):
    """The largest value of each row of x (n, V) and its first column, into out = (values (n,),
    ids (n,)), as torch.max(x, dim=1) gives them. On CPU torch.max with indices reads ~1 element per
    ns, 9x slower than amax; here amax over 128-column chunks, then the first chunk holding the
    row's maximum, then the first column in it holding the maximum (argmax of a few (n, 128)
    booleans)."""
    top, top_id = out
    n, V = x.shape
    m = V // _MAX_CHUNK  # whole chunks per row
    if m < 2:
        torch.max(x, dim=1, out=(top, top_id))
        return
    maxima = x[:, :m * _MAX_CHUNK].view(n, m, _MAX_CHUNK).amax(2)  # (n, m)
    if m * _MAX_CHUNK < V:
        maxima = torch.cat([maxima, x[:, m * _MAX_CHUNK:].amax(1, keepdim=True)], dim=1)  # (n, M)
    torch.amax(maxima, dim=1, out=top)  # (n,)
    # (n,) first chunk holding the max
    first = (maxima == top.unsqueeze(1)).to(torch.uint8).argmax(1)
    cols = (first * _MAX_CHUNK).unsqueeze(1) + torch.arange(_MAX_CHUNK, device=x.device)  # (n, C)
    inside = cols < V  # (n, C) the last chunk may be shorter
    cand = x.gather(1, cols.clamp_max(V - 1))  # (n, C)
    hit = (cand == top.unsqueeze(1)) & inside  # (n, C)
    top_id.copy_(cols.gather(1, hit.to(torch.uint8).argmax(1, keepdim=True)).squeeze(1))


def _row_stats(buf, gold, columns, impossible):
    """One cache-blocked pass over the (N, V) logits `buf`, which it turns into
    exp(logits - rowmax).

    Returns the logits at gold (N,) (`impossible` for gold >= V), lse (N,), the row max (N,) and its
    id (N,), the logits at `columns` (N, S) (`impossible` for ids >= V) and sum
    exp(logits - rowmax) (N,).
    """
    N, V = buf.shape
    gold_v = gold.clamp(max=V - 1)  # (N,)
    cols = columns.clamp(max=V - 1)  # (N, S)
    top = buf.new_empty(N)  # (N,) row max
    top_id = gold.new_empty(N)  # (N,) its column
    total = buf.new_empty(N)  # (N,) sum exp(logits - rowmax)
    gold_logit = buf.new_empty(N)  # (N,)
    at_cols = buf.new_empty(columns.shape)  # (N, S)
    for r0, r1 in _row_blocks(N, V, buf.device):
        chunk = buf[r0:r1]  # (n, V)
        row_max(chunk, (top[r0:r1], top_id[r0:r1]))
        gold_logit[r0:r1] = chunk.gather(1, gold_v[r0:r1, None]).squeeze(1)
        at_cols[r0:r1] = chunk.gather(1, cols[r0:r1])
        exp_shifted_(chunk, top[r0:r1, None])  # exp(logits - rowmax)
        torch.sum(chunk, dim=1, out=total[r0:r1])
    lse = top + total.log()  # (N,)
    gold_logit = torch.where(gold < V, gold_logit, gold_logit.new_full((), impossible))
    at_cols = torch.where(columns < V, at_cols, at_cols.new_full((), impossible))  # (N, S)
    return gold_logit, lse, top, top_id, at_cols, total


@torch.no_grad()
def logit_stats(logits, columns, impossible):
    """For an argmax without the distribution: lse (N,), row max (N,) and its id (N,), and the
    logits at `columns` (N, S) of (N, V) `logits`, which are overwritten (see _row_stats)."""
    gold = columns.new_zeros(logits.size(0))  # (N,) unused
    _, lse, top, top_id, at_cols, _ = _row_stats(logits, gold, columns, impossible)
    return lse, top, top_id, at_cols


class GoldLogSoftmax(torch.autograd.Function):
    """z_n = logits[n, gold_n] - logsumexp(logits[n]) with logits = o W^T + b, over V columns.

    gold_n >= V (an OOV slot) reads `impossible` as its logit (a constant: the extended vocabulary's
    padded bias), so z_n = impossible - lse_n, as the full distribution gives. Backward may run
    once.
    """

    @staticmethod
    def forward(ctx, o, weight, bias, gold, columns, impossible, logits=None, product_dtype=None):
        dtype = torch.promote_types(o.dtype, weight.dtype)
        with float32_region(o):
            # -amp: the products in bfloat16 / float16, the rest in `dtype`
            if product_dtype is not None:
                o_, w_ = o.to(product_dtype), weight.to(product_dtype)
                buf = (torch.add(bias.to(dtype), o_ @ w_.t()) if logits is None
                       else logits.to(dtype))  # (N, V) float32, the bias added on the widening pass
            else:
                o_, w_, b_ = o.to(dtype), weight.to(dtype), bias.to(dtype)
                # (N, V) logits (given: computed earlier from the same o, W, b), then
                # exp(logits - rowmax).
                # W packed for this one product only from _PACK_ROWS rows (bench/packing_bench.py)
                buf = training_logits(o_, w_, b_) if logits is None else logits.to(dtype)
            gold_logit, lse, top, top_id, at_cols, total = _row_stats(
                buf, gold, columns, impossible)
        V = w_.size(0)
        ctx.save_for_backward(o_, w_, buf, total, gold.clamp(max=V - 1), gold < V)
        ctx.input_dtypes = (o.dtype, weight.dtype, bias.dtype)
        ctx.used = False
        ctx.mark_non_differentiable(lse, top, top_id, at_cols)
        return (gold_logit - lse).to(o.dtype), lse, top, top_id, at_cols

    @staticmethod
    def backward(ctx, grad_z, *unused):
        if ctx.used:
            raise RuntimeError("GoldLogSoftmax reuses its buffer in backward: "
                               "backward may run once")
        ctx.used = True
        o, w, buf, total, gold_v, in_vocab = ctx.saved_tensors
        with float32_region(o):
            g = grad_z.to(buf.dtype)  # (N,)
            N, V = buf.shape
            scale = -(g / total)  # (N,) d z / d logits = onehot(gold) - softmax
            grad_bias = buf.new_zeros(V)  # (V,)
            for r0, r1 in _row_blocks(N, V, o.device):
                chunk = buf[r0:r1]  # (n, V) now the gradient of the logits
                chunk.mul_(scale[r0:r1, None])
                rows = torch.arange(r0, r1, device=buf.device)
                chunk.index_put_((rows - r0, gold_v[r0:r1]),
                                 torch.where(in_vocab[r0:r1], g[r0:r1], 0.0), accumulate=True)
                grad_bias += chunk.sum(0)
            grad_logits = buf.to(o.dtype)  # (N, V) itself, or in the products' low precision (-amp)
            grad_o = (gradient_product(grad_logits, w.t())
                      if ctx.needs_input_grad[0] else None)  # (N, D)
            grad_w = (gradient_product(o.t(), grad_logits.t()).t()
                      if ctx.needs_input_grad[1] else None)  # (V, D)
        dt_o, dt_w, dt_b = ctx.input_dtypes
        return (None if grad_o is None else grad_o.to(dt_o),
                None if grad_w is None else grad_w.to(dt_w),
                grad_bias.to(dt_b) if ctx.needs_input_grad[2] else None,
                None, None, None, None, None)


ONEDNN_GRADIENTS = True


def gradient_product(a, b_t):
    """a (M, K) @ b_t.t() (M, N) for b_t (N, K), a view of the (K, N) operand: on the CPU in float32
    oneDNN's inner product on `a` made contiguous and the view of b_t (at See et al.'s sizes,
    N 1616, V 50k, D 256, one thread: 405 against 450 ms for the gradient of o, 380 against 480 for
    W's, the latter as o^T dZ then transposed), elsewhere a @ b_t.t()."""
    if (ONEDNN_GRADIENTS and a.device.type == "cpu" and a.dtype == b_t.dtype == torch.float32
            and _packable(b_t)):
        try:
            # (M, N)
            return torch.ops.mkldnn._linear_pointwise(a.contiguous(), b_t, None, "none", [], "")
        except RuntimeError:
            pass
    return a @ b_t.t()  # (M, N)


def gold_log_softmax(o, weight, bias, gold, columns, impossible, logits=None, product_dtype=None):
    """o (N, D), weight (V, D), bias (V,), gold (N,) ids (>= V: OOV slot),
    columns (N, S) ids to read;
    logits: the (N, V) o W^T + b if already computed (without gradient; it is overwritten),
    else None;
    product_dtype: None, or the low precision (-amp's bfloat16 / float16) of the three (N, D) x
    (D, V) products (forward, and the gradients of o and W): their results are widened at once, the
    softmax, log-sum-exp and the gradient of the logits stay in o's dtype (float32).

    Returns z (N,) = log softmax(o W^T + b)[gold] (differentiable; `impossible - lse` for gold >= V)
    and, without gradient: lse (N,), the row max (N,) and its id (N,), and the logits at `columns`
    (N, S) (`impossible` for ids >= V).
    """
    return GoldLogSoftmax.apply(o, weight, bias, gold, columns, impossible, logits, product_dtype)
