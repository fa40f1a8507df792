"""Intra-temporal attention over the encoder and intra-decoder attention (Paulus et al. 2017, 2.1-2.2).

Both are bilinear: e = h^d_t . W h, with W a square (H, H) matrix.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def masked_softmax(logits, mask, dim=-1):
    """Softmax of `logits` over `dim` restricted to `mask` (True = allowed).

    Masked entries get exactly 0; a row with no allowed entry is all zeros (no NaN), and the
    gradient is finite everywhere.
    """
    neg_inf = torch.finfo(logits.dtype).min
    shift = logits.detach().masked_fill(~mask, neg_inf).amax(dim, keepdim=True)
    shift = shift.masked_fill(shift == neg_inf, 0.0)             # all-masked row: any finite shift
    expd = torch.exp((logits - shift).masked_fill(~mask, float("-inf")))
    total = expd.sum(dim, keepdim=True)
    return expd / total.clamp_min(torch.finfo(logits.dtype).tiny)


class IntraTemporalAttention(nn.Module):
    """Attention over encoder states that penalizes positions attended at previous steps.

    e_ti = h^d_t . W^e h^e_i. With `temporal`, the logits are e_ti - lse_i where
    lse_i = log sum_{j<t} exp(e_ji) (the paper's exp(e_ti) / sum_{j<t} exp(e_ji), in log space);
    at the first step (lse is None) and without `temporal`, the logits are e_ti.
    """

    def __init__(self, hidden, temporal=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden, hidden))   # W^e_attn
        nn.init.xavier_uniform_(self.weight)
        self.temporal = temporal

    def keys(self, memory):
        """W^e h^e_i for every source position, computed once per sequence. memory: (B, S, H)."""
        return F.linear(memory, self.weight)  # (B, S, H)

    def forward(self, query, keys, memory, mask, lse=None, source=None):
        """query (B, H) h^d_t; keys (B, S, H) from `keys()`; memory (B, S, H); mask (B, S) True at
        real positions; lse (B, S) or None at the first step; source: a StepSource over (keys, memory)
        for a whole teacher-forced pass (same values and gradients, see step_source.py).

        Returns context (B, H), attention (B, S), new lse (B, S).
        """
        if source is not None:
            scores = source.scores(query)  # (B, S)  e_ti
        else:
            scores = torch.bmm(keys, query.unsqueeze(2)).squeeze(2)  # (B, S)  e_ti
        if self.temporal and lse is not None:
            logits = scores - lse
        else:
            logits = scores
        attn = masked_softmax(logits, mask)  # (B, S)
        if source is not None:
            context = source.context(attn)  # (B, H)
        else:
            context = torch.bmm(attn.unsqueeze(1), memory).squeeze(1)  # (B, H)
        new_lse = scores if lse is None else torch.logaddexp(lse, scores)  # (B, S)
        return context, attn, new_lse


class IntraDecoderAttention(nn.Module):
    """Attention of h^d_t over the previous decoder states h^d_{t'}, t' < t; c^d_1 = 0.

    e^d_tt' = h^d_t . W^d h^d_t' = (W^d^T h^d_t) . h^d_t', so the query is projected once per step
    and the history holds raw decoder states.
    """

    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden, hidden))   # W^d_attn
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query, history, return_attn=False):
        """query (B, H); history (B, t, H) previous decoder states or None. Returns c^d_t (B, H), and
        with `return_attn` also the attention over the t previous states (B, t) ((B, 0) when t = 0)."""
        if history is None or history.size(1) == 0:
            context = query.new_zeros(query.shape)  # (B, H)
            return (context, query.new_zeros(query.size(0), 0)) if return_attn else context  # (B, 0)
        projected = query @ self.weight  # (B, H)  (W^d^T h^d_t)
        scores = torch.bmm(history, projected.unsqueeze(2)).squeeze(2)  # (B, t)
        attn = torch.softmax(scores, dim=1)  # (B, t)
        context = torch.bmm(attn.unsqueeze(1), history).squeeze(1)  # (B, H)
        return (context, attn) if return_attn else context
