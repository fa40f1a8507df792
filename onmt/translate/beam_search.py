"""Beam search, batched over examples and beams, for every model of the interface.

Each example keeps K live hypotheses; their scores are sums of log-probabilities. At each step the
B*K rows are decoded together, every example takes the top K of its K*X continuations (beam_topk.py:
the topk over (B, K*X) through chunk maxima), and the decoder state, token history and attention
follow the backpointers through one `state.reorder`. The first step decodes B rows, one per example
(all K hypotheses would be the same `<s>`), and its topk over (B, X) fills the K slots. A
continuation ending in `</s>` is set aside with its length-penalized score and its slot's score
becomes -inf, so it is never extended (the next topk refills the slot).

Stopping: an example is done once it holds `n_best` finished hypotheses and the n_best-th of them
scores at least the best score any live hypothesis could still reach (its sum of log-probabilities,
which can only decrease, divided by the largest length penalty still possible). With
`-length_penalty none` this is the usual "best live beam is worse than the finished ones" test;
in all cases it never stops an example earlier than continuing could change its n-best. Done
examples leave the batch (one reorder); the search ends when every example is done or
`max_length` is reached (see `decoding` for the token rules).

With a coverage penalty (`decoding.coverage_penalty`) each row keeps the running sum of its source
attention, (rows, S), which follows the backpointers; the stopping bound then subtracts the least
penalty the live hypothesis can still get (0 for wu, its current penalty for summary).

`beam_history` (a list, -dump_beam) receives, per example of the batch, the list of its steps:
{"tokens": [K ids], "backpointers": [K beam indices of the previous step], "scores": [K running
scores, None for -inf]}: the K hypotheses kept after the step's topk (a finished one included, with
its running score, before its slot is emptied).
"""
import torch

from onmt.constants import BOS, EOS
from onmt.interface import extended_size
from onmt.translate.beam_topk import beam_topk
from onmt.translate.decoding import (
    NEG_INF,
    Hypothesis,
    apply_rules,
    attention_of,
    coverage_floor,
    coverage_penalty,
    extend_inspection,
    hypothesis_extras,
    inspected_step,
    length_penalty,
    max_penalty,
    source_mask,
)


@torch.no_grad()
def beam_search(model, batch, *, beam_size=5, n_best=1, min_length=0, max_length=100,
                length_penalty_kind="none", alpha=0.0, block_ngram_repeat=0, ignore_ids=None,
                keep_attn=False, keep_inspection=False, coverage_penalty_kind="none", beta=0.0,
                stepwise_penalty=False, beam_history=None):
    """Decode `batch`; returns, per example, up to `n_best` Hypothesis, best first.
    keep_attn: keep each token's source attention (Hypothesis.attn); keep_inspection: that and the
    step's "p_copy" / "intra" (Hypothesis.extras), following the backpointers like the attention.
    coverage_penalty_kind / beta / stepwise_penalty: see `decoding`; beam_history: module docstring."""
    keep_attn = keep_attn or keep_inspection
    K = beam_size
    B = batch.batch_size
    device = batch.src.device
    enc = model.encode(batch)
    state = model.init_state(batch, enc)
    # W rows per example: before the first step each example holds the one hypothesis <s>, so step 0
    # decodes B rows and its topk fills the K slots (when the vocabulary offers K continuations)
    W = 1 if extended_size(model, batch) >= K else K
    if W > 1:
        state = state.reorder(torch.arange(B, device=device).repeat_interleave(W))  # rows (B*W,)
    base = (torch.arange(B, device=device) * W).unsqueeze(1)                     # (B, 1)
    inputs = torch.full((B * W,), BOS, dtype=torch.long, device=device)          # (B*W,)
    history = torch.zeros(B * W, 0, dtype=torch.long, device=device)             # (B*W, t)
    attn_hist = None                                                             # (B*K, t, S)
    inspected = None                     # keep_inspection: {"p_copy": (B*K, t), "intra": (B*K, t, t)}
    scores = torch.full((B, W), NEG_INF, device=device)                          # (B, W)
    scores[:, 0] = 0.0                    # the W copies of <s> are one hypothesis: expand only one
    example = torch.arange(B, device=device)   # (B,) batch position of each example still decoded
    kept = torch.full((B, n_best), NEG_INF, device=device)   # (B, n_best) best finished scores
    finished = [[] for _ in range(B)]     # per example: Hypothesis list, filled only when one finishes
    use_cov = coverage_penalty_kind != "none"
    if use_cov:
        cov = None                                                               # (B*K, S) attention sums
        cov_mask = source_mask(batch).repeat_interleave(W, dim=0)                # (B*W, S) real positions
    raw = scores                          # (B, K) sums of log-probabilities (scores, unless stepwise)
    dump = [] if beam_history is not None else None
    for step in range(max_length + 1):
        logp, state, attns = model.decode_step(inputs, state)                    # (B*K, X)
        X = logp.size(1)
        logp = apply_rules(logp.float(), history, step, min_length=min_length, max_length=max_length,
                           block_ngram_repeat=block_ngram_repeat, ignore_ids=ignore_ids)
        if use_cov:
            attn_now = attention_of(attns)
            if attn_now is None:
                raise ValueError("a coverage penalty needs a model with source attention")
            cov = attn_now.float() if cov is None else cov + attn_now.float()    # (B*K, S), old row order
            if stepwise_penalty:   # running score: log-prob - penalty of the coverage up to this step
                step_pen = coverage_penalty(coverage_penalty_kind, cov, beta, cov_mask)  # (B*W,)
                scores = raw - step_pen.view(B, W)
        top_scores, top_ids = beam_topk(logp, scores, K)                         # (B, K) of the (B, W*X)
        origin = torch.div(top_ids, X, rounding_mode="floor")                    # (B, K) beam of origin
        token = top_ids - origin * X                                             # (B, K)
        rows = (base + origin).view(B * K)                                       # (B*K,) backpointers
        # rows stay within their example; from B rows to B*K the per-source fields grow too
        state = state.reorder(rows, within_source=W == K)
        if use_cov:
            cov = cov.index_select(0, rows)                                      # (B*K, S)
            if W != K:
                cov_mask = cov_mask.index_select(0, rows)                        # (B*K, S)
            pen = coverage_penalty(coverage_penalty_kind, cov, beta, cov_mask).view(B, K)  # (B, K)
            raw = top_scores + pen if stepwise_penalty else top_scores           # (B, K)
        else:
            raw = top_scores
        if dump is not None:
            dump.append((example.cpu(), token.cpu(), origin.cpu(), top_scores.cpu()))
        history = torch.cat([history.index_select(0, rows), token.view(B * K, 1)], dim=1)  # (B*K, t+1)
        attn = attention_of(attns) if keep_attn else None
        if attn is not None:
            step_attn = attn.float().index_select(0, rows).unsqueeze(1)          # (B*K, 1, S)
            attn_hist = step_attn if attn_hist is None else torch.cat(
                [attn_hist.index_select(0, rows), step_attn], dim=1)             # (B*K, t+1, S)
        if keep_inspection:
            step_values = {k: v.index_select(0, rows) for k, v in inspected_step(attns).items()}
            inspected = extend_inspection(inspected, step_values, rows)          # (B*K, t+1[, t+1])
        is_eos = (token == EOS) & torch.isfinite(top_scores)                     # (B, K)
        if bool(is_eos.any()):
            penalized = top_scores / length_penalty(length_penalty_kind, step + 1, alpha)  # (B, K)
            if use_cov and not stepwise_penalty:
                penalized = penalized - pen
            _set_aside(finished, example, is_eos, raw, penalized, history, attn_hist, K, inspected)
            kept = torch.cat([kept, penalized.masked_fill(~is_eos, NEG_INF)], dim=1).topk(
                n_best, dim=1).values                                            # (B, n_best)
            top_scores = top_scores.masked_fill(is_eos, NEG_INF)
            raw = raw.masked_fill(is_eos, NEG_INF)
        scores = top_scores
        inputs = token.view(B * K)
        if W != K:   # after step 0: K rows per example
            W = K
            base = (torch.arange(B, device=device) * K).unsqueeze(1)             # (B, 1)
        # best score a live hypothesis can still reach (sums only decrease; largest penalty ahead)
        lp_max = max_penalty(length_penalty_kind, step + 2, max_length + 1, alpha)
        if not use_cov:
            bound = scores.max(dim=1).values / lp_max                            # (B,)
        elif stepwise_penalty:
            bound = ((raw - coverage_floor(coverage_penalty_kind, pen)) / lp_max).max(dim=1).values
        else:
            bound = (raw / lp_max - coverage_floor(coverage_penalty_kind, pen)).max(dim=1).values
        live = ~((kept[:, -1] >= bound) | torch.isneginf(bound))                 # (B,)
        n_live = int(live.sum())
        if n_live == 0:
            break
        if n_live < B:   # drop the finished examples from the batch
            keep = live.nonzero().squeeze(1)                                     # (B',)
            rows = (keep.unsqueeze(1) * K + torch.arange(K, device=device)).view(-1)  # (B'*K,)
            state = state.reorder(rows)
            inputs, history = inputs.index_select(0, rows), history.index_select(0, rows)
            attn_hist = attn_hist.index_select(0, rows) if attn_hist is not None else None
            if inspected:
                inspected = {k: v.index_select(0, rows) for k, v in inspected.items()}
            if use_cov:
                cov, cov_mask = cov.index_select(0, rows), cov_mask.index_select(0, rows)
            scores, kept, example = scores[keep], kept[keep], example[keep]      # (B', K) (B', n) (B',)
            raw = raw[keep]
            B = n_live
            base = (torch.arange(B, device=device) * K).unsqueeze(1)             # (B, 1)
    if dump is not None:
        beam_history.extend(_history(dump, len(finished)))
    return [sorted(f, key=lambda h: -h.score)[:n_best] for f in finished]


def _history(dump, n_examples):
    """Per example, its steps (module docstring) from the per-step (example, token, origin, score) tensors."""
    out = [[] for _ in range(n_examples)]
    for example, token, origin, score in dump:
        for e, t, o, s in zip(example.tolist(), token.tolist(), origin.tolist(), score.tolist()):
            out[e].append({"tokens": t, "backpointers": o,
                           "scores": [x if x != NEG_INF else None for x in s]})
    return out


def _set_aside(finished, example, is_eos, raw, penalized, history, attn_hist, K, inspected=None):
    """Record the hypotheses that just produced </s> (a loop over those only)."""
    idx = is_eos.nonzero().tolist()                      # [[b, k], ...] in the current batch
    ex = example[is_eos.nonzero()[:, 0]].tolist()        # their examples in the original batch
    for (b, k), e, s, p in zip(idx, ex, raw[is_eos].tolist(), penalized[is_eos].tolist()):
        row = b * K + k
        tokens = history[row, :-1].tolist()
        attn = attn_hist[row, :-1].cpu() if attn_hist is not None else None
        finished[e].append(Hypothesis(tokens, p, s, attn, hypothesis_extras(inspected, row, len(tokens))))
