"""Greedy decoding, batched over examples: the most probable token at every step.

Follows the token rules of `onmt.translate.decoding`, so it returns exactly what beam search
returns with beam size 1. A coverage penalty (see `decoding`) changes only the scores: with one
hypothesis per example, the penalty of a step is the same for every candidate token.
"""
import torch

from onmt.constants import BOS, EOS
from onmt.translate.decoding import (
    CoverageScorer,
    Hypothesis,
    apply_rules,
    attention_of,
    decode_step_scores,
    extend_inspection,
    hypothesis_extras,
    inspected_step,
    length_penalty,
    source_mask,
)


@torch.no_grad()
def greedy_search(model, batch, *, min_length=0, max_length=100, length_penalty_kind="none", alpha=0.0,
                  block_ngram_repeat=0, ignore_ids=None, keep_attn=False, keep_inspection=False,
                  coverage_penalty_kind="none", beta=0.0, stepwise_penalty=False):
    """Decode `batch` greedily; returns, per example, a one-element list of Hypothesis.
    keep_attn: keep each token's source attention (Hypothesis.attn); keep_inspection: that and the
    step's "p_copy" / "intra" (Hypothesis.extras, see decoding.Hypothesis)."""
    keep_attn = keep_attn or keep_inspection
    coverage = CoverageScorer(coverage_penalty_kind, beta, stepwise_penalty)
    enc = model.encode(batch)
    state = model.init_state(batch, enc)
    B = batch.batch_size
    device = batch.src.device
    inputs = torch.full((B,), BOS, dtype=torch.long, device=device)      # (B,)
    history = torch.zeros(B, 0, dtype=torch.long, device=device)         # (B, t)
    log_prob = torch.zeros(B, device=device)                             # (B,)
    finished = torch.zeros(B, dtype=torch.bool, device=device)           # (B,)
    lengths = torch.zeros(B, dtype=torch.long, device=device)            # (B,) tokens incl. </s>
    attn_steps = []
    inspected = None                                                     # keep_inspection histories
    cov = None                                                           # (B, S) attention sums
    for step in range(max_length + 1):
        scores, state, attns = decode_step_scores(model, inputs, state)  # log p of (B, X)
        apply_rules(scores, history, step, min_length=min_length, max_length=max_length,
                    block_ngram_repeat=block_ngram_repeat, ignore_ids=ignore_ids)
        best_lp, token = scores.best()                                   # (B,), (B,)
        if coverage.active:   # a finished row's attention no longer counts
            cov = coverage.accumulate(cov, _unfinished_attention(attns, finished))   # (B, S)
        log_prob += torch.where(finished, torch.zeros_like(best_lp), best_lp)
        lengths += (~finished).long()
        history = torch.cat([history, token.unsqueeze(1)], dim=1)        # (B, t+1)
        attn = attention_of(attns) if keep_attn else None
        if attn is not None:
            attn_steps.append(attn.float())
        if keep_inspection:
            inspected = extend_inspection(inspected, inspected_step(attns))  # (B, t+1[, t+1])
        finished |= token == EOS
        inputs = token
        if bool(finished.all()):
            break
    attn_all = torch.stack(attn_steps, dim=1) if attn_steps else None    # (B, T, S)
    lp = length_penalty(length_penalty_kind, lengths, alpha)             # (B,)
    pen = coverage.penalty(cov, source_mask(batch)) if cov is not None else None  # (B,)
    scores = _final_scores(coverage, log_prob, lp, pen)                  # (B,)
    return _hypotheses(history, lengths, scores, log_prob, attn_all, inspected)


def _unfinished_attention(attns, finished):
    """The step's attns with the source attention of the finished rows (B,) zeroed, as float32."""
    attn_now = attention_of(attns)
    if attn_now is None:
        raise ValueError("a coverage penalty needs a model with source attention")
    return {"std": attn_now.float().masked_fill(finished.unsqueeze(1), 0.0)}   # (B, S)


def _final_scores(coverage, log_prob, lp, pen):
    """(B,) the final scores: log_prob / lp, minus the coverage penalty pen (stepwise: of the numerator)."""
    scores = log_prob / lp
    if pen is None:
        return scores
    return (log_prob - pen) / lp if coverage.stepwise else scores - pen


def _hypotheses(history, lengths, scores, log_prob, attn_all, inspected):
    """Per example, its one-element list of Hypothesis (the final </s> cut off)."""
    results = []
    hist, lens, scores_l, lp_l = history.tolist(), lengths.tolist(), scores.tolist(), log_prob.tolist()
    for b in range(len(hist)):
        n = lens[b] - 1 if hist[b][lens[b] - 1] == EOS else lens[b]     # without </s>
        attn_b = attn_all[b, :n].cpu() if attn_all is not None else None
        results.append([Hypothesis(hist[b][:n], scores_l[b], lp_l[b], attn_b, hypothesis_extras(inspected, b, n))])
    return results
