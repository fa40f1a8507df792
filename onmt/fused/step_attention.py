"""See et al.'s attention (eqs. 1-3, 11) at every step of a teacher-forced pass, with a cheaper
backward.

The plain GlobalAttention (onmt/modules/global_attention.py) builds, per step, the (B, S, H) tensor
tanh(W_m m_i + W_q h + w_c cov_i) and keeps it for backward: 6.5 MB per step at See et al.'s sizes
(B 16, S 400, H 256), 650 MB for a 100-step target, written once and read back from memory. Its
backward then makes several more (B, S, H) passes per step, and the context product gives memory a
dense (B, S, H) gradient per step that autograd adds into a running sum.

Here `mlp_scores` keeps only its (small) inputs and recomputes the tanh in backward, in cache-sized
row blocks, from the keys W_m m (which every step reads, so they stay in cache). The tanh is never
formed: tanh(x) = 2 sigmoid(2x) - 1, so the scores are 2 v . sigmoid(2x) - sum(v) and the gradients
are written with u = sigmoid(2x) (1 - sigmoid(2x)) (mlp_scores_grads): one sigmoid pass instead of
PyTorch's float32 tanh, which costs about three on CPU, and five passes over (B, S, H) in backward
where tanh_backward and its products took nine. The context goes
through step_source.StepSource, whose steps' gradients reach memory in one bmm per pass. Same values
and gradients as the plain attention. Create one `StepAttention` per forward pass.

Outside such a pass (decoding, a step loop under -amp) a GlobalAttention built with fused kernels
scores with `mlp_scores_blocked`: cache-sized row blocks, and without autograd the same sigmoid
form.
"""
import torch

from onmt.execution import gradients_wanted
from onmt.fused.kernels import block_rows
from onmt.fused.step_source import StepSource

# elements of one (rows, S, H) block (~4 MB of float32) on the CPU: the recomputation stays in cache
BLOCK = 1 << 20


def mlp_sigmoids(keys, q, cov, w_c, out=None):
    """sigmoid(2 (keys + q [+ cov w_c])) (b, S, H), into `out` when given, so that the mlp score is
    v . tanh(x) = 2 v . sigmoid(2x) - sum(v): one sigmoid pass instead of PyTorch's float32 tanh,
    which costs about three on CPU, the doubling folded into the first add. keys (b, S, H),
    q (b, H), cov (b, S) or None, w_c (H,). Without autograd (decoding; the fused pass's forward and
    backward)."""
    out = torch.add((2 * q).unsqueeze(1), keys, alpha=2, out=out)  # (b, S, H) 2 (keys + q)
    if cov is not None:
        out.addcmul_(cov.unsqueeze(-1).to(out.dtype), w_c.view(1, 1, -1), value=2)
    return out.sigmoid_()


def mlp_scores_blocked(q, keys, cov, v, w_c):
    """GlobalAttention.mlp_score, v . tanh(keys + q [+ w_c cov]) (B, S), in cache-sized blocks (the
    (B, S, H) temporaries of a large beam batch would not fit in cache): without autograd as
    2 v . sigmoid(2x) - sum(v) (_mlp_sigmoid_blocks), under autograd with the tanh (one
    new (b, S, H) tensor a block, the rest in place). q (B, H), keys (B, S, H) or (B/G, S, H) (one
    source per G consecutive queries: a beam's decoding state), cov (B, S) or None, v (H,), w_c (H,)
    or None."""
    if not gradients_wanted():
        return _mlp_sigmoid_blocks(q, keys, cov, v, w_c)
    B, S, H = keys.shape
    # one source per G queries under autograd (no training pass has it): per query
    if B != q.size(0):
        keys, B = keys.repeat_interleave(q.size(0) // B, 0), q.size(0)
    rows = block_rows(keys.device, B, S * H, BLOCK)
    if rows >= B:
        return _mlp_tanh_block(q, keys, cov, v, w_c)
    return torch.cat([_mlp_tanh_block(q[i:i + rows], keys[i:i + rows],
                                      None if cov is None else cov[i:i + rows], v, w_c)
                      for i in range(0, B, rows)])  # (B, S)


def _mlp_sigmoid_blocks(q, keys, cov, v, w_c):
    """mlp_scores_blocked without autograd: keys (N, S, H) for the N G queries q (N G, H), G
    consecutive ones per source (G = 1: one each), in blocks of sources, each source's keys read
    once for its G queries, as 2 v . sigmoid(2x) - sum(v) (one sigmoid pass instead of PyTorch's
    float32 tanh). -> (N G, S)."""
    N, S, H = keys.shape
    G = q.size(0) // N
    n = block_rows(keys.device, N, G * S * H, BLOCK)
    dtype = torch.promote_types(q.dtype, keys.dtype)   # bfloat16 under -amp's autocast (validation)
    v = v.to(dtype)
    out = q.new_empty(N, G, S, dtype=dtype)  # (N, G, S)
    q2 = (2 * q).view(N, G, 1, H)  # (N, G, 1, H)
    cov4 = None if cov is None else cov.view(N, G, S, 1)  # (N, G, S, 1)
    for i in range(0, N, n):   # blocks of sources: cache blocking
        j = min(N, i + n)
        x = torch.add(q2[i:j], keys[i:j].unsqueeze(1), alpha=2)  # (n, G, S, H) 2 (keys + q)
        if cov4 is not None:
            x.addcmul_(cov4[i:j].to(x.dtype), w_c, value=2)
        torch.matmul(x.sigmoid_(), v, out=out[i:j])
    return out.view(N * G, S).mul_(2).sub_(v.sum())


def _mlp_tanh_block(q, keys, cov, v, w_c):
    """mlp_scores_blocked under autograd for one block of rows: (b, H), (b, S, H), (b, S)
    -> (b, S)."""
    hidden = keys + q.unsqueeze(1)  # (b, S, H)
    if cov is not None:
        hidden.addcmul_(cov.unsqueeze(-1).to(hidden.dtype), w_c.view(1, 1, -1))
    hidden.tanh_()
    return torch.matmul(hidden, v)  # (b, S)


def compiled_mlp_scores():
    """translate -compile: a drop-in for mlp_scores_blocked whose decoding form,
    2 v . sigmoid(2x) - sum(v), goes through torch.compile (dynamic shapes: one graph for every
    batch, source length and beam, one more without coverage), which fuses the adds, the sigmoid and
    the reduction over v into one pass over the (B, S, H) keys instead of four: the scores 1.35-1.6x
    faster at (64, 400, 256) on one CPU thread, the whole translation 8-10 % at CNN/DM's source
    lengths and no faster at Gigaword's, where the compiled call's overhead cancels the gain
    (bench/compile_translate_bench.py). Under autograd: mlp_scores_blocked."""
    compiled = torch.compile(_mlp_sigmoid_scores, dynamic=True)

    def score(q, keys, cov, v, w_c):
        if gradients_wanted():
            return mlp_scores_blocked(q, keys, cov, v, w_c)
        return compiled(q, keys, cov, v, w_c)
    return score


def _mlp_sigmoid_scores(q, keys, cov, v, w_c):
    """v . tanh(keys + q [+ cov w_c]) as one expression for torch.compile: q (N G, H),
    keys (N, S, H) (G consecutive queries per source; G = 1: one each), cov (N G, S) or None,
    v (H,), w_c (H,) or None -> (N G, S)."""
    N, S, H = keys.shape
    x = keys.unsqueeze(1) + q.view(N, -1, 1, H)  # (N, G, S, H)
    if cov is not None:
        x = x + cov.view(N, -1, S, 1).to(x.dtype) * w_c
    return ((torch.sigmoid(2 * x) * v).sum(-1) * 2 - v.sum()).reshape(-1, S)  # (N G, S)


def _rows(keys):
    """Rows of one cache-sized block of a (B, S, H) tensor (all of them off the CPU)."""
    return block_rows(keys.device, keys.size(0), keys.size(1) * keys.size(2), BLOCK)


def mlp_scores_values(keys, q, cov, w_c, v, keep=None):
    """v . tanh(keys + q [+ cov w_c]) (B, S) as 2 v . sigmoid(2 (...)) - sum(v), in cache-sized row
    blocks, without autograd. keep: a (B, S, H) buffer that receives the sigmoids for
    mlp_scores_grads, or None."""
    B, S, H = keys.shape
    rows = _rows(keys)
    out = keys.new_empty(B, S)  # (B, S)
    scratch = None if keep is not None else keys.new_empty(min(B, rows), S, H)  # (b, S, H)
    for i in range(0, B, rows):  # row blocks: cache blocking
        j = min(B, i + rows)
        buf = keep[i:j] if keep is not None else scratch[:j - i]
        sig = mlp_sigmoids(keys[i:j], q[i:j], None if cov is None else cov[i:j], w_c, buf)
        torch.matmul(sig, v, out=out[i:j])
    return out.mul_(2).sub_(v.sum())


def mlp_scores_grads(grad, keys, q, cov, w_c, v, sig=None, gu=None, d_v=None, d_wc=None):
    """The gradients of mlp_scores_values for the scores' gradient `grad` (B, S), from the kept
    sigmoids `sig` (B, S, H) or, when None, the sigmoids recomputed block by block.

    With s = sigmoid(2x), x = keys + q [+ cov w_c]: tanh(x) = 2s - 1 and tanh'(x) = 4u,
    u = s (1 - s), so
        d_v = sum_{b,s} g (2s - 1)       d_x = 4 v * (g u)      d_q = 4 v * sum_s g u
        d_cov = 4 g * (u . (v * w_c))    d_wc = 4 v * sum_{b,s} cov g u      d_keys = d_x
    The (B, S, H) g u is ADDED to `gu` when given (a pass of steps sums it and scales it once by
    4 v: keys_grad), else d_keys is returned. d_v (H,), d_wc (H,): accumulators the gradients are
    ADDED to (when None, created holding this call's gradients only). Returns d_keys (None with gu),
    d_q (B, H), d_cov (B, S) (None without cov), d_wc, d_v. Five passes over (B, S, H) from kept
    sigmoids."""
    B, S, H = keys.shape
    rows = _rows(keys)
    d_keys = None if gu is not None else torch.empty_like(keys)  # (B, S, H)
    d_q = torch.empty_like(q)  # (B, H)
    d_cov = None if cov is None else torch.empty_like(cov)  # (B, S)
    if cov is not None and d_wc is None:
        d_wc = torch.zeros_like(w_c)  # (H,)
    d_v = torch.zeros_like(v) if d_v is None else d_v  # (H,)
    v4 = 4 * v  # (H,)
    vw4 = None if cov is None else v4 * w_c  # (H,)
    u_buf = keys.new_empty(min(B, rows), S, H)  # (b, S, H)
    for i in range(0, B, rows):
        j = min(B, i + rows)
        c = None if cov is None else cov[i:j]
        s = (sig[i:j] if sig is not None
             else mlp_sigmoids(keys[i:j], q[i:j], c, w_c, u_buf[:j - i]))  # (b, S, H)
        g = grad[i:j].to(s.dtype)  # (b, S)
        d_v += torch.bmm(g.unsqueeze(1), s).sum((0, 1)).mul_(2).sub_(g.sum())  # (H,)
        # (b, S, H) s (1 - s); may overwrite s
        u = torch.addcmul(s, s, s, value=-1, out=u_buf[:j - i])
        # (b, 1 or 2, S)
        G = g.unsqueeze(1) if c is None else torch.stack([g, g * c.to(g.dtype)], 1)
        P = torch.bmm(G, u)  # (b, 1 or 2, H): sum_s g u [, sum_s cov g u]
        torch.mul(P[:, 0], v4, out=d_q[i:j])
        if c is not None:
            d_wc += P[:, 1].sum(0).mul_(v4)
            torch.matmul(u, vw4, out=d_cov[i:j]).mul_(g)
        if gu is not None:
            gu[i:j].addcmul_(g.unsqueeze(-1), u)
        else:
            torch.mul(g.unsqueeze(-1), u, out=d_keys[i:j]).mul_(v4)
    return d_keys, d_q, d_cov, d_wc, d_v


def keys_grad(gu, v):
    """The keys' gradient 4 v * sum of g u from the `gu` accumulator of mlp_scores_grads
    (in place)."""
    return gu.mul_(4 * v)


class _MLPScores(torch.autograd.Function):
    """v . tanh(keys + q [+ cov w_c]) (B, S); backward recomputes the sigmoids block by block."""

    @staticmethod
    def forward(ctx, keys, q, cov, w_c, v):
        ctx.save_for_backward(keys, q, cov, w_c, v)
        return mlp_scores_values(keys, q, cov, w_c, v)

    @staticmethod
    def backward(ctx, grad):
        return mlp_scores_grads(grad, *ctx.saved_tensors)


def mlp_scores(keys, q, v, cov=None, w_c=None):
    """keys (B, S, H) W_m m; q (B, H) W_q h; v (H,); cov (B, S) and w_c (H,) with coverage, else
    None.
    Returns the scores v . tanh(keys + q [+ cov w_c]) (B, S)."""
    return _MLPScores.apply(keys, q, cov, w_c, v)


class StepAttention:
    """The scores and context of a GlobalAttention at every step of one pass over `memory` (B, S, H)
    with precomputed `keys` (B, S, H); pass it to GlobalAttention.forward as `step`."""

    def __init__(self, keys, memory):
        self.source = StepSource(memory, memory)  # only its context product is used

    def score(self, attention, query, keys, coverage):
        """attention.score(query, keys, coverage), fused for mlp attention (else the plain one)."""
        if attention.attn_type != "mlp":
            return attention.score(query, keys, coverage)
        q = attention.linear_query(query)  # (B, H)
        if attention.coverage and coverage is not None:
            return mlp_scores(keys, q, attention.v.weight.view(-1), coverage,
                              attention.linear_cover.weight.view(-1))
        return mlp_scores(keys, q, attention.v.weight.view(-1))

    def context(self, align):
        """align (B, S) -> sum_i a_i m_i (B, H)."""
        return self.source.context(align)
