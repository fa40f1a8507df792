"""A pointer-generator's log-probabilities at one decoding step, without the (R, X) tensor.

The step scores of onmt/modules/step_scores.py (what the searches ask of a step) for Paulus et al.'s
eqs. 9-12 (and See et al.'s eq. 9), without ever writing log p over the extended vocabulary:

    log p(y) = logits_y + offset          y not a word of the row's source
                                          (offset = log p(u=0) - logsumexp)
    log p(y) = mixed_i                    y = the word at source position i (the mixture, eq. 12)
    log p(y) = IMPOSSIBLE                 an extended slot of another example's source word

The (R, V) logits stay as the product wrote them (read twice more: one log_softmax pass in
cache-sized row blocks for the normalizer, one max pass for the chunk maxima); the source words'
generation values are replaced by -inf there once their mixture is known, so the top K chosen among
the logits' chunks (onmt/modules/beam_topk.py) plus the (R, S) source candidates plus the (R, n_oov)
extended slots are the top K of the whole distribution (a chunk maximum that was a source word
stands for a source candidate at least as large: the mixture only adds copy probability). Against
writing log p: the (R, X) output, the switch added into it and its max pass are gone (at 150 rows of
a 10k vocabulary, 3.1 ms of such passes against 1.3). `full()` gives the tensor DenseScores holds,
to float32 rounding of the normalizer. `allow_only_` (once per search, at max_length) turns a
MixtureScores into its dense form.
"""
import torch

from onmt.fused.kernels import block_rows
from onmt.modules.beam_topk import chunk_candidates, chunks_suffice
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, mix_at_sources
from onmt.modules.step_scores import NEG_INF, DenseScores, exclusion

# elements of one block of the normalizer's log_softmax pass (~0.5 MB of float32: it stays in cache)
NORMALIZER_BLOCK = 1 << 17


def row_log_normalizer(logits):
    """logsumexp of each row of logits (N, V) -> (N, 1), from log_softmax in cache-sized row blocks:
    the row's max minus its largest log-probability (one fused pass each; torch.logsumexp makes
    more)."""
    if logits.device.type != "cpu":
        return torch.logsumexp(logits, dim=1, keepdim=True)
    N, V = logits.shape
    out = logits.new_empty(N, 1)
    rows = block_rows(logits.device, N, V, NORMALIZER_BLOCK)
    for i in range(0, N, rows):  # blocks of rows: the block's log_softmax stays in cache
        blk = logits[i:i + rows]
        top = torch.log_softmax(blk, dim=1).amax(1, keepdim=True)  # (r, 1) max - logsumexp
        torch.sub(blk.amax(1, keepdim=True), top, out=out[i:i + rows])
    return out


class MixtureScores:
    """A pointer-generator's log p over X = V + n_oov at one step, without the (R, X) tensor (module
    docstring). logits (R, V) the generation logits (a fresh product: changed in place);
    log_gen_switch, log_copy_switch (R, 1) log p(u=0), log p(u=1); attn (R, S) the copy attention, 0
    on padding; src_ex, first_pos (R, S) the source's extended ids and first_occurrence; n_oov the
    extended slots."""

    def __init__(self, logits, log_gen_switch, log_copy_switch, attn, src_ex, first_pos, n_oov):
        R, V = logits.shape
        S = src_ex.size(1)
        self.V, self.X, self.src_ex = V, V + n_oov, src_ex
        self.offset = log_gen_switch - row_log_normalizer(logits)             # (R, 1)
        in_vocab = src_ex < V                                                 # (R, S)
        vocab_id = src_ex.clamp(max=V - 1)                                    # (R, S)
        gen_at_src = torch.where(in_vocab, logits.gather(1, vocab_id) + self.offset,
                                 IMPOSSIBLE)                                  # (R, S)
        self.mixed = mix_at_sources(gen_at_src, log_copy_switch,
                                    copy_at_sources(attn, first_pos))         # (R, S) eq. 12
        # (R, S) one candidate per word
        self.first = first_pos == torch.arange(S, device=src_ex.device)
        # the source words' generation values leave the logits: their candidates are the mixture's
        logits.scatter_reduce_(1, vocab_id, exclusion(in_vocab, vocab_id.shape, logits),
                               reduce="amin")
        self.logits = logits                                                  # (R, V)
        # (R, n_oov) other examples' slots
        extra = logits.new_full((R, n_oov), IMPOSSIBLE)
        if n_oov:
            extra.scatter_reduce_(1, (src_ex - V).clamp(min=0),
                                  exclusion(~in_vocab, src_ex.shape, extra), reduce="amin")
        self.extra = extra
        self.dense = None   # DenseScores after allow_only_

    def ban_(self, tokens, where=None):
        """As DenseScores.ban_: in the logits, the extended slots and the source candidates."""
        if self.dense is not None:
            return self.dense.ban_(tokens, where)
        V = self.V
        in_vocab = tokens < V                                                 # (R, n)
        chosen = in_vocab if where is None else where & in_vocab
        self.logits.scatter_reduce_(1, tokens.clamp(max=V - 1),
                                    exclusion(chosen, tokens.shape, self.logits), reduce="amin")
        if self.extra.size(1):
            chosen = ~in_vocab if where is None else where & ~in_vocab
            self.extra.scatter_reduce_(1, (tokens - V).clamp(min=0),
                                       exclusion(chosen, tokens.shape, self.extra), reduce="amin")
        hit = self.src_ex.unsqueeze(2) == tokens.unsqueeze(1)                  # (R, S, n)
        if where is not None:
            hit &= where.unsqueeze(1)
        self.mixed.masked_fill_(hit.any(2), NEG_INF)                          # (R, S)

    def allow_only_(self, token):
        self.dense = DenseScores(self.full())
        self.dense.allow_only_(token)

    def beam_topk(self, scores, k):
        """As DenseScores.beam_topk, from the logits' chosen chunks, the source words and the
        extended slots."""
        if self.dense is not None:
            return self.dense.beam_topk(scores, k)
        R, V = self.logits.shape
        B, W = scores.shape
        if not chunks_suffice(V, W, k):
            return DenseScores(self.full()).beam_topk(scores, k)
        X, S, n_oov = self.X, self.src_ex.size(1), self.extra.size(1)
        row = scores.reshape(R, 1)                                            # (R, 1)
        # (B, k*C) x3
        cand, w, col = chunk_candidates(self.logits, (row + self.offset).view(R), B, k)
        # (1, W, 1) row w's ids start
        by_row = torch.arange(W, device=row.device).view(1, W, 1) * X
        src_val = (self.mixed.masked_fill(~self.first, NEG_INF) + row).view(B, W * S)  # (B, W*S)
        src_ids = (self.src_ex.view(B, W, S) + by_row).view(B, W * S)        # (B, W*S)
        slots = torch.arange(V, X, device=row.device)                         # (n_oov,)
        extra_val = (self.extra + row).view(B, W * n_oov)                     # (B, W*n_oov)
        extra_ids = (slots.view(1, 1, n_oov) + by_row).expand(B, W, n_oov).reshape(B, W * n_oov)
        values, pos = torch.cat([cand, src_val, extra_val], dim=1).topk(k, dim=1)  # (B, k)
        ids = torch.cat([w * X + col, src_ids, extra_ids], dim=1).gather(1, pos)   # (B, k) in W*X
        return values, ids

    def best(self):
        """As DenseScores.best (among equal values, any of them)."""
        if self.dense is not None:
            return self.dense.best()
        values, ids = self.beam_topk(self.offset.new_zeros(self.offset.size(0), 1), 1)  # (R, 1) x2
        return values.squeeze(1), ids.squeeze(1)

    def full(self):
        """log p (R, X) as DenseScores holds it (the bans included)."""
        if self.dense is not None:
            return self.dense.logp
        out = torch.cat([self.logits + self.offset, self.extra], dim=1)       # (R, X)
        return out.scatter_(1, self.src_ex, self.mixed)                       # (R, X)
