"""Per-step attention products over the encoder whose gradients reach it once per pass.

Each decoding step reads the encoder keys K (B, S, H) and states M (B, S, Hm) twice: the scores
e_t = K q_t and the context c_t = a_t M. With plain `bmm`, autograd gives every step its own dense
(B, S, H) gradient of K and of M (an outer product, then an add into the running sum: ~80 MB of
memory traffic per step at the paper's sizes), and K q_t runs in the layout that BLAS serves slowest
(measured at B 32, S 400, H 400 on 2 cores: 3.0 ms against 0.7 ms for (1 x S)(S x H) products).

`StepSource` keeps K and M also transposed (copied once per pass), computes both products and both
input gradients in the fast (1 x S)(S x H) form, and records each step's factors (g_t, q_t) and
(a_t, dc_t); when autograd reaches K and M (after every step's backward, as in step_embedding.py) it
gives them sum_t g_t q_t^T and sum_t a_t dc_t^T with one bmm each. Same values and gradients as the
plain products. Create one per forward pass; its backward runs once.
"""
import torch

from onmt.execution import gradients_wanted


class _SumStepOuterProducts(torch.autograd.Function):
    """The handle every step of a pass depends on; its backward gives keys and memory the sum of the
    steps' outer-product gradients, one bmm each."""

    @staticmethod
    def forward(ctx, keys, memory, pending):
        ctx.pending = pending  # {"keys": [(g, q)], "memory": [(a, dc)]}, shared with the steps
        ctx.shapes = (keys.shape, memory.shape)
        return keys.new_zeros(1)  # (1,) the handle the steps depend on

    @staticmethod
    def backward(ctx, handle_grad):
        grads = []
        for name, shape in zip(("keys", "memory"), ctx.shapes):
            steps = ctx.pending[name]
            if not steps:
                grads.append(handle_grad.new_zeros(shape))
                continue
            left = torch.stack([f for f, _ in steps], dim=2)  # (B, S, T)
            right = torch.stack([f for _, f in steps], dim=1).to(left.dtype)  # (B, T, H)
            grads.append(torch.bmm(left, right))  # (B, S, H) = sum_t left_t right_t^T
            steps.clear()
        return grads[0], grads[1], None


class _StepProduct(torch.autograd.Function):
    """y = x A as (B, 1, K)(B, K, N), A one of the pass's matrices in the layout that makes this
    product fast; backward gives grad x = grad A^T through the other layout `mat_t` (B, N, K) and
    records the step's two factors of the gradient of the (untransposed) matrix under `key`."""

    @staticmethod
    def forward(ctx, handle, mat, mat_t, x, pending, key, x_is_left):
        ctx.pending, ctx.key, ctx.x_is_left = pending, key, x_is_left
        ctx.save_for_backward(mat_t, x)
        return torch.bmm(x.to(mat.dtype).unsqueeze(1), mat).squeeze(1)  # (B, N)

    @staticmethod
    def backward(ctx, grad):
        mat_t, x = ctx.saved_tensors
        ctx.pending[ctx.key].append((x, grad) if ctx.x_is_left else (grad, x))
        grad_x = torch.bmm(grad.to(mat_t.dtype).unsqueeze(1), mat_t).squeeze(1)  # (B, K)
        return grad.new_zeros(1), None, None, grad_x.to(x.dtype), None, None, None


class StepSource:
    """keys (B, S, H) and memory (B, S, Hm) read at every decoding step of one pass."""

    def __init__(self, keys, memory):
        self.keys, self.memory = keys.detach(), memory.detach()
        self.keys_t = self.keys.transpose(1, 2).contiguous()  # (B, H, S)
        self.memory_t = self.memory.transpose(1, 2).contiguous()  # (B, Hm, S)
        self.pending = {"keys": [], "memory": []}
        track = gradients_wanted(keys, memory)
        self.handle = _SumStepOuterProducts.apply(keys, memory, self.pending) if track else None

    def scores(self, query):
        """query (B, H) -> K query (B, S)."""
        if self.handle is None:
            return torch.bmm(query.unsqueeze(1), self.keys_t).squeeze(1)  # (B, S)
        # d keys = sum_t grad_t query_t^T: the step's gradient is the left factor
        return _StepProduct.apply(self.handle, self.keys_t, self.keys, query, self.pending,
                                  "keys", False)

    def context(self, attn):
        """attn (B, S) -> attn M (B, Hm)."""
        if self.handle is None:
            return torch.bmm(attn.unsqueeze(1), self.memory).squeeze(1)  # (B, Hm)
        # d memory = sum_t attn_t grad_t^T: the step's input is the left factor
        return _StepProduct.apply(self.handle, self.memory, self.memory_t, attn, self.pending,
                                  "memory", True)


class DecodingSource:
    """keys (R/G, S, H) and memory (R/G, S, Hm), one per source, read by one decoding step of R rows
    without autograd (beam / greedy search): the scores K q as (1 x H)(H x S) products on a
    transposed view of K, no copy (bmm's (S x H)(H x 1) layout is ~10x slower on CPU: 1.7 ms against
    0.17 at 150 rows, S 40, H 256, one thread), the context as `StepSource` computes it. With
    `group` G > 1 the rows come in groups of G consecutive rows decoding one source (a beam's K
    hypotheses of one example: the state's source_rows, interface.py): each source is read once, its
    G queries as one (G x H)(H x S) product, not G copies (at 150 rows, S 35, H 256: 11 MB read per
    step instead of 55). Same values as the plain products over per-row copies, to float32
    rounding."""

    def __init__(self, keys, memory, group=1):
        self.keys, self.memory, self.group = keys, memory, group

    def scores(self, query):
        """query (R, H) -> K query (R, S)."""
        q = query.to(self.keys.dtype).view(self.keys.size(0), self.group, -1)     # (R/G, G, H)
        return torch.bmm(q, self.keys.transpose(1, 2)).view(query.size(0), -1)    # (R, S)

    def context(self, attn):
        """attn (R, S) -> attn M (R, Hm)."""
        a = attn.to(self.memory.dtype).view(self.memory.size(0), self.group, -1)  # (R/G, G, S)
        return torch.bmm(a, self.memory).view(attn.size(0), -1)                   # (R, Hm)
