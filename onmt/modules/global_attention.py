"""Global attention over the encoder states: Luong's dot / general, Bahdanau's mlp, optional
coverage.

    score_i  = h . m_i                                  dot
             = h . (W_a m_i)                            general
             = v . tanh(W_m m_i + W_q h [+ w_c cov_i])  mlp: See et al. eq. 1, with coverage eq. 11
    dot / general with coverage add a learned scalar term  w_cov * cov_i  to the score.
    a        = masked softmax over real source positions (padding gets exactly 0)   See et al. eq. 2
    c        = sum_i a_i m_i                                                        See et al. eq. 3
    h~       = tanh(W_out [c; h])                       Luong's attentional vector
A beam's decoder state keeps the source once per example (RNNDecoderState.source_rows G): the
memory, keys and mask then have one row per G queries, each source read once per step for its G
queries. The coverage cov = sum of the previous steps' a (See et al. eq. 10) is the decoder's
(onmt/models/rnn_decoder.py), its loss (eqs. 12-13) onmt/losses/ml.py's. This is the plain formula;
a decoder built with fused kernels gives the module a faster mlp score (`mlp_score`: row blocks, the
sigmoid form without autograd, onmt/fused/step_attention.py) and a teacher-forced pass its `step`.

Precision: the scores are a float32 island (onmt/modules/precision.py). Under autocast (-amp) the
products W_q h, W_m m (and W_a m) run low, their results widened; the sum keys + q + w_c cov, its
tanh, the dot with v and the scores themselves stay float32. In bfloat16 a score of 40 is known to
+-0.125, so a sharp copy attention (See et al.'s model copies by it) is off by e^0.125 per position,
and its gradient with it: See et al.'s model did not train under -amp (issue 56; gradients of one
batch 156 % off float32's with bfloat16 scores, 5 % with float32 ones, tests/unit/test_amp.py).
"""
import torch
import torch.nn as nn

from onmt.modules.masked_softmax import masked_softmax
from onmt.modules.precision import float32_region, widen

ATTN_TYPES = ("dot", "general", "mlp")


class GlobalAttention(nn.Module):
    """Attention of one decoder query over the encoder memory.

    Args:
        dim: size of the query, the memory states and the attentional output (H).
        attn_type: "dot", "general" or "mlp".
        coverage: add a coverage term to the scores.
        mlp_score: a function (q (B, H), keys (B, S, H), cov (B, S) or None, v (H,),
            w_c (H,) or None) -> (B, S) computing what `mlp_score` below computes
            (onmt/fused/step_attention.py's `mlp_scores_blocked`), or None: the plain formula.
    """

    def __init__(self, dim, attn_type="general", coverage=False, mlp_score=None):
        super().__init__()
        if attn_type not in ATTN_TYPES:
            raise ValueError(f"unknown attention type {attn_type!r}; expected one of {ATTN_TYPES}")
        self.dim, self.attn_type, self.coverage = dim, attn_type, coverage
        self._mlp_score = mlp_score or self.mlp_score
        if attn_type == "general":
            self.linear_in = nn.Linear(dim, dim, bias=False)
        elif attn_type == "mlp":
            self.linear_memory = nn.Linear(dim, dim, bias=True)
            self.linear_query = nn.Linear(dim, dim, bias=False)
            self.v = nn.Linear(dim, 1, bias=False)
        if coverage:
            if attn_type == "mlp":
                self.linear_cover = nn.Linear(1, dim, bias=False)  # w_c, a vector inside the tanh
            else:
                self.cover_weight = nn.Parameter(torch.zeros(1))  # scalar w_cov added to the score
        self.linear_out = nn.Linear(2 * dim, dim, bias=attn_type == "mlp")

    def precompute_keys(self, memory):
        """The query-independent part of the scores, computed once per source: (B, S, H), float32
        under autocast (the scores' island, module docstring)."""
        if self.attn_type == "general":
            return widen(self.linear_in(memory))  # (B, S, H)
        if self.attn_type == "mlp":
            return widen(self.linear_memory(memory))  # (B, S, H)
        return widen(memory)

    def score(self, query, keys, coverage=None):
        """query (B, H), keys (B, S, H) or (B/G, S, H): one source per G consecutive queries,
        coverage (B, S) or None -> raw scores (B, S), float32 under autocast (module docstring)."""
        if self.attn_type == "mlp":
            q = self.linear_query(query)  # (B, H), autocast's precision
            cov = coverage if self.coverage else None
            w_c = self.linear_cover.weight.view(-1) if cov is not None else None  # (H,)
            with float32_region(q):
                # (B, S)
                return self._mlp_score(widen(q), widen(keys), widen(cov), self.v.weight.view(-1),
                                       w_c)
        with float32_region(query):
            return self._product_score(widen(query), widen(keys), widen(coverage))

    def _product_score(self, query, keys, coverage):
        """dot / general scores: query (B, H), keys (B, S, H) or (B/G, S, H), coverage (B, S) or
        None -> (B, S)."""
        N, S, H = keys.shape
        if N == query.size(0):
            scores = torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)  # (B, S)
        else:  # each source's G queries as one (S x H)(H x G) product
            # (B, S)
            scores = torch.bmm(keys,
                               query.view(N, -1, H).transpose(1, 2)).transpose(1, 2).reshape(-1, S)
        if self.coverage and coverage is not None:
            scores = scores + self.cover_weight * coverage
        return scores

    @staticmethod
    def mlp_score(q, keys, cov, v, w_c):
        """v . tanh(keys + q [+ w_c cov]) (See et al. eqs. 1, 11): (B, H), (B, S, H) or (B/G, S, H)
        (one source per G consecutive queries), (B, S) or None, (H,), (H,) or None -> (B, S)."""
        N, S, H = keys.shape
        if N != q.size(0):   # (N, G, S, H): each source's keys broadcast over its G queries
            hidden = keys.unsqueeze(1) + q.view(N, -1, 1, H)
            if cov is not None:
                hidden = hidden + cov.view(N, -1, S, 1).to(hidden.dtype) * w_c
            return torch.matmul(torch.tanh(hidden), v).reshape(-1, S)  # (B, S)
        hidden = keys + q.unsqueeze(1)  # (B, S, H)
        if cov is not None:
            hidden = hidden + cov.unsqueeze(-1).to(hidden.dtype) * w_c.view(1, 1, -1)  # (B, S, H)
        return torch.matmul(torch.tanh(hidden), v)  # (B, S)

    def forward(self, query, memory, mask, keys=None, coverage=None, step=None):
        """Attend with one query per example.

        Args:
            query: (B, H) decoder output of this step.
            memory: (B, S, H) encoder states.
            mask: (B, S) True at real source positions.
            keys: (B, S, H) from precompute_keys(memory); computed here when None.
            coverage: (B, S) sum of the previous attention distributions, for coverage models.
            step: a fused per-pass StepAttention (onmt/fused/step_attention.py) computing the scores
                and the context with the same values and gradients, or None.
        Returns:
            attn_h (B, H) attentional vector, align (B, S) attention, context (B, H).
        """
        if keys is None:
            keys = self.precompute_keys(memory)
        if step is not None:
            align = masked_softmax(step.score(self, query, keys, coverage), mask)  # (B, S)
            context = step.context(align)  # (B, H)
        # one source per G consecutive queries (a beam's state)
        elif memory.size(0) != query.size(0):
            N, S, _ = memory.shape
            scores = self.score(query, keys, coverage).view(N, -1, S)  # (N, G, S)
            align = masked_softmax(scores, mask.unsqueeze(1))  # (N, G, S)
            # (B, H): each source read once
            context = torch.bmm(align.to(memory.dtype), memory).flatten(0, 1)
            align = align.flatten(0, 1)  # (B, S)
        else:
            # (B, S) See et al. eq. 2
            align = masked_softmax(self.score(query, keys, coverage), mask)
            # (B, H) eq. 3
            context = torch.bmm(align.unsqueeze(1).to(memory.dtype), memory).squeeze(1)
        attn_h = torch.tanh(self.linear_out(torch.cat([context, query], dim=-1)))  # (B, H)
        return attn_h, align, context
