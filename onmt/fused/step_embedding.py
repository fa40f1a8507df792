"""Per-step embedding lookups whose gradient reaches the matrix once per pass, not once per step.

A decoder that embeds its input one step at a time (the input may be the model's own prediction)
makes autograd build, for every step, a dense (V, E) gradient of the embedding matrix (and, through
the slice of the shared matrix, a (V_src, E) one): a zero fill, a copy and an add of tens of MB per
step. `StepEmbedding` instead records each step's (ids, row gradients) during backward and writes
them into ONE (V, E) gradient with one index_add, when autograd reaches the matrix. Autograd runs
that node only after every step's lookup has passed its gradient, so the result is the same sum.
"""
import torch


class _IndexAddStepRows(torch.autograd.Function):
    """The handle every lookup of a pass depends on; its backward index_adds the row gradients of
    all the pass's steps into one (V, E) gradient of the matrix."""

    @staticmethod
    def forward(ctx, weight, pending):
        ctx.pending = pending  # a list shared with the lookups (not the StepEmbedding: no cycle)
        ctx.shape = weight.shape
        return weight.new_zeros(1)  # (1,) the handle the lookups depend on

    @staticmethod
    def backward(ctx, _):
        grad = _.new_zeros(ctx.shape)  # (V, E)
        if ctx.pending:
            ids = torch.cat([i for i, _ in ctx.pending])  # (n,)
            rows = torch.cat([g for _, g in ctx.pending]).to(grad.dtype)  # (n, E)
            grad.index_add_(0, ids, rows)
            ctx.pending.clear()
        return grad, None


class _Lookup(torch.autograd.Function):
    """weight[ids]; backward records (ids, row gradients) for _IndexAddStepRows."""

    @staticmethod
    def forward(ctx, handle, weight, ids, pending, padding_idx):
        ctx.pending, ctx.padding_idx = pending, padding_idx
        ctx.save_for_backward(ids)
        return weight.index_select(0, ids)  # (n, E)

    @staticmethod
    def backward(ctx, grad):
        ids, = ctx.saved_tensors
        if ctx.padding_idx is not None:
            # no gradient to PAD
            grad = grad.masked_fill((ids == ctx.padding_idx).unsqueeze(1), 0.0)
        ctx.pending.append((ids, grad))
        return grad.new_zeros(1), None, None, None, None


class StepEmbedding:
    """Embeds ids (n,) with `weight` (V, E) as F.embedding(ids, weight, padding_idx) would, values
    and gradients included; create one per forward pass."""

    def __init__(self, weight, padding_idx=None):
        self.weight = weight.detach()  # (V, E)
        self.padding_idx = padding_idx
        self.pending = []  # (ids, row gradients) of the steps whose backward has run
        self.handle = (_IndexAddStepRows.apply(weight, self.pending) if weight.requires_grad
                       else None)

    def __call__(self, ids):
        if self.handle is None:
            return self.weight.index_select(0, ids)  # (n, E)
        # (n, E)
        return _Lookup.apply(self.handle, self.weight, ids, self.pending, self.padding_idx)
