"""Intra-temporal attention over the encoder and intra-decoder attention
(Paulus et al. 2017, 2.1-2.2).

Both are bilinear: e = h^d_t . W h, with W a square (H, H) matrix. The equations, in the paper's
numbers:

    (2) e_ti = h^d_t . W^e_attn h^e_i
    (3) e'_ti = exp(e_ti) at t = 1, else exp(e_ti) / sum_{j<t} exp(e_ji)
    (4) a^e_ti = e'_ti / sum_j e'_tj
    (5) c^e_t = sum_i a^e_ti h^e_i
    (6) e^d_tt' = h^d_t . W^d_attn h^d_t'
    (7) a^d_tt' = exp(e^d_tt') / sum_{j<t} exp(e^d_tj)
    (8) c^d_t = sum_{j<t} a^d_tj h^d_j ;  c^d_1 = 0

(3)-(4) run in log space: e'_ti / sum_j e'_tj = softmax_i(e_ti - lse_i), lse_i = log sum_{j<t}
exp(e_ji) kept per source position, so nothing overflows. This is the plain code the tests compare
the fused per-pass products (onmt/fused/step_source.py, passed in as `source`) against.

Both take a `scale` s (default 1): e = s * h^d . W h, i.e. the same equations with the matrix s W.
-intra_attn_scale sqrt (a fresh -reinforced model's default) sets s = 1/sqrt(H) as Vaswani et al.
scale dot products; the paper does not say. With s = 1 the bilinear scores' gradients into the
recurrent states make a one-layer model's training spike and its copying fail (docs/user-guide.md,
Sanity tasks).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.modules.masked_softmax import masked_softmax


class IntraTemporalAttention(nn.Module):
    """Attention over encoder states that penalizes positions attended at previous steps.

    e_ti = h^d_t . W^e h^e_i. With `temporal`, the logits are e_ti - lse_i where
    lse_i = log sum_{j<t} exp(e_ji) (the paper's exp(e_ti) / sum_{j<t} exp(e_ji), in log space);
    at the first step (lse is None) and without `temporal`, the logits are e_ti.
    """

    def __init__(self, hidden, temporal=True, scale=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden, hidden))   # W^e_attn of (2)
        nn.init.xavier_uniform_(self.weight)
        self.temporal = temporal
        self.scale = scale

    def keys(self, memory):
        """s W^e h^e_i of (2) for every source position, computed once per sequence. memory:
        (B, S, H)."""
        keys = F.linear(memory, self.weight)  # (B, S, H)
        return keys if self.scale == 1.0 else keys * self.scale  # (B, S, H)

    def forward(self, query, keys, memory, mask, lse=None, source=None):
        """query (B, H) h^d_t; keys (B, S, H) from `keys()`; memory (B, S, H); mask (B, S) True at
        real positions; lse (B, S) or None at the first step; source: a StepSource over
        (keys, memory) for a whole teacher-forced pass (same values and gradients, see
        onmt/fused/step_source.py).

        Returns context (B, H), attention (B, S), new lse (B, S).
        """
        if source is not None:
            scores = source.scores(query)  # (B, S)  (2) e_ti
        else:
            # (B, S)  (2) e_ti = h^d_t . (W^e h^e_i)
            scores = torch.bmm(keys, query.unsqueeze(2)).squeeze(2)
        if self.temporal and lse is not None:
            logits = scores - lse  # (B, S)  (3) log e'_ti = e_ti - log sum_{j<t} exp(e_ji)
        else:
            logits = scores  # (B, S)  (3) at t = 1: log e'_ti = e_ti
        # (B, S)  (4) a^e_ti = e'_ti / sum_j e'_tj, 0 on padding
        attn = masked_softmax(logits, mask)
        if source is not None:
            context = source.context(attn)  # (B, H)  (5)
        else:
            # (B, H)  (5) c^e_t
            context = torch.bmm(attn.unsqueeze(1).to(memory.dtype), memory).squeeze(1)
        # (B, S)  sum_{j<=t} exp(e_ji), logged
        new_lse = scores if lse is None else torch.logaddexp(lse, scores)
        return context, attn, new_lse


class IntraDecoderAttention(nn.Module):
    """Attention of h^d_t over the previous decoder states h^d_{t'}, t' < t; c^d_1 = 0.

    e^d_tt' = h^d_t . W^d h^d_t' = (W^d^T h^d_t) . h^d_t', so the query is projected once per step
    and the history holds raw decoder states.
    """

    def __init__(self, hidden, scale=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden, hidden))   # W^d_attn of (6)
        nn.init.xavier_uniform_(self.weight)
        self.scale = scale

    def forward(self, query, history, return_attn=False):
        """query (B, H); history (B, t, H) previous decoder states or None. Returns c^d_t (B, H),
        and with `return_attn` also the attention over the t previous states (B, t)
        ((B, 0) when t = 0)."""
        if history is None or history.size(1) == 0:
            context = query.new_zeros(query.shape)  # (B, H)  (8) c^d_1 = 0
            # (B, 0)
            return (context, query.new_zeros(query.size(0), 0)) if return_attn else context
        projected = query @ self.weight  # (B, H)  (W^d^T h^d_t)
        if self.scale != 1.0:
            projected = projected * self.scale  # (B, H)  s W^d^T h^d_t
        # (1 x H)(H x t) on a transposed view of the history, not (t x H)(H x 1): the same sums, in
        # the layout BLAS runs fast on CPU (10x at 150 rows, t 20, H 256), and so is the
        # backward's dq
        # (B, t)  (6) e^d_tt'
        scores = torch.bmm(projected.unsqueeze(1), history.transpose(1, 2)).squeeze(1)
        attn = torch.softmax(scores, dim=1)  # (B, t)  (7) a^d_tt'
        context = torch.bmm(attn.unsqueeze(1), history).squeeze(1)  # (B, H)  (8) c^d_t
        return (context, attn) if return_attn else context
