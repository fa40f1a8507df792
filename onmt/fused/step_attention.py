"""See et al.'s attention (eqs. 1-3, 11) at every step of a teacher-forced pass, with a cheaper backward.

The plain GlobalAttention (onmt/modules/global_attention.py) builds, per step, the (B, S, H) tensor
tanh(W_m m_i + W_q h + w_c cov_i) and keeps it for backward: 6.5 MB per step at See et al.'s sizes
(B 16, S 400, H 256), 650 MB for a 100-step target, written once and read back from memory. Its
backward then makes several more (B, S, H) passes per step, and the context product gives memory a
dense (B, S, H) gradient per step that autograd adds into a running sum.

Here `mlp_scores` keeps only its (small) inputs and recomputes the tanh in backward, in cache-sized
row blocks, from the keys W_m m (which every step reads, so they stay in cache); the context goes
through step_source.StepSource, whose steps' gradients reach memory in one bmm per pass. Same values
and gradients as the plain attention. Create one `StepAttention` per forward pass.
"""
import torch

from onmt.fused.step_source import StepSource

# elements of one (rows, S, H) block (~4 MB of float32): the recomputation stays in cache
BLOCK = 1 << 20


def tanh_(x):
    """tanh in place as 2 sigmoid(2x) - 1: within 2e-7 of torch.tanh, and 2-3x faster on CPU, where
    PyTorch's float32 tanh costs about three sigmoids (measured on (16, 400, 256): 4.3 ms against 1.9 ms)."""
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


def _hidden(keys, q, cov, w_c):
    """tanh(keys + q [+ cov w_c]) for a block: (b, S, H), (b, H), (b, S) or None, (H,) -> (b, S, H)."""
    hidden = keys + q.unsqueeze(1)  # (b, S, H)
    if cov is not None:
        hidden.addcmul_(cov.unsqueeze(-1).to(hidden.dtype), w_c.view(1, 1, -1))
    return tanh_(hidden)


def mlp_scores_values(keys, q, cov, w_c, v):
    """v . tanh(keys + q [+ cov w_c]) (B, S) in cache-sized row blocks, without autograd."""
    B, S, H = keys.shape
    rows = max(1, BLOCK // (S * H))
    out = keys.new_empty(B, S)  # (B, S)
    for i in range(0, B, rows):  # row blocks: cache blocking
        c = None if cov is None else cov[i:i + rows]
        torch.matmul(_hidden(keys[i:i + rows], q[i:i + rows], c, w_c), v, out=out[i:i + rows])
    return out


def mlp_scores_grads(grad, keys, q, cov, w_c, v, d_keys=None, d_v=None, d_wc=None):
    """The gradients of mlp_scores_values for the scores' gradient `grad` (B, S), the tanh recomputed
    block by block. d_keys (B, S, H), d_v (H,), d_wc (H,): accumulators the gradients are ADDED to
    (when None, created holding this call's gradients only). Returns d_keys, d_q (B, H), d_cov (B, S)
    (None without cov), d_wc, d_v."""
    B, S, H = keys.shape
    rows = max(1, BLOCK // (S * H))
    add_keys = d_keys is not None
    d_keys = torch.empty_like(keys) if d_keys is None else d_keys  # (B, S, H)
    d_q = torch.empty_like(q)  # (B, H)
    d_cov = None if cov is None else torch.empty_like(cov)  # (B, S)
    if cov is not None and d_wc is None:
        d_wc = torch.zeros_like(w_c)  # (H,)
    d_v = torch.zeros_like(v) if d_v is None else d_v  # (H,)
    for i in range(0, B, rows):
        j = min(B, i + rows)
        c = None if cov is None else cov[i:j]
        hidden = _hidden(keys[i:j], q[i:j], c, w_c)  # (b, S, H) recomputed
        g = grad[i:j].to(hidden.dtype)  # (b, S)
        d_v += torch.bmm(g.unsqueeze(1), hidden).sum((0, 1))  # (H,) sum_s g_s hidden_s
        d_hidden = torch.ops.aten.tanh_backward(g.unsqueeze(-1) * v, hidden)  # (b, S, H)
        if add_keys:
            d_keys[i:j] += d_hidden
        else:
            d_keys[i:j] = d_hidden
        d_q[i:j] = d_hidden.sum(1)  # (b, H)
        if c is not None:
            torch.matmul(d_hidden, w_c, out=d_cov[i:j])  # (b, S)
            d_wc += torch.bmm(c.unsqueeze(1).to(d_hidden.dtype), d_hidden).sum((0, 1))  # (H,)
    return d_keys, d_q, d_cov, d_wc, d_v


class _MLPScores(torch.autograd.Function):
    """v . tanh(keys + q [+ cov w_c]) (B, S); backward recomputes the tanh block by block."""

    @staticmethod
    def forward(ctx, keys, q, cov, w_c, v):
        ctx.save_for_backward(keys, q, cov, w_c, v)
        return mlp_scores_values(keys, q, cov, w_c, v)

    @staticmethod
    def backward(ctx, grad):
        return mlp_scores_grads(grad, *ctx.saved_tensors)


def mlp_scores(keys, q, v, cov=None, w_c=None):
    """keys (B, S, H) W_m m; q (B, H) W_q h; v (H,); cov (B, S) and w_c (H,) with coverage, else None.
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
            return mlp_scores(keys, q, attention.v.weight.view(-1), coverage, attention.linear_cover.weight.view(-1))
        return mlp_scores(keys, q, attention.v.weight.view(-1))

    def context(self, align):
        """align (B, S) -> sum_i a_i m_i (B, H)."""
        return self.source.context(align)
