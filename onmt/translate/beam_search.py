"""Beam search, batched over examples and beams, for every model of the interface.

Each example keeps K live hypotheses; their scores are sums of log-probabilities. At each step the
B*K rows are decoded together, every example takes the top K of its K*X continuations (beam_topk.py:
the topk over (B, K*X) through chunk maxima), and the decoder state, token history, attention and
coverage follow the backpointers through one `BeamState.reorder` (beam_state.py: every tensor of the
live hypotheses in one object, moved only by its `reorder` and `select`). The first step decodes B
rows, one per example (all K hypotheses would be the same `<s>`), and its topk over (B, X) fills
the K slots. A continuation ending in `</s>` is set aside with its length-penalized score and its
slot's score becomes -inf, so it is never extended (the next topk refills the slot).

Stopping: an example is done once it holds `n_best` finished hypotheses and the n_best-th of them
scores at least the best score any live hypothesis could still reach (its sum of log-probabilities,
which can only decrease, divided by the largest length penalty still possible). With
`-length_penalty none` this is the usual "best live beam is worse than the finished ones" test;
in all cases it never stops an example earlier than continuing could change its n-best. Done
examples leave the batch (one `BeamState.select`); the search ends when every example is done or
`max_length` is reached (see `decoding` for the token rules).

Sampling (`settings.sampler`, -random_sampling_*): each example has n_best rows from the first step
on, each drawing its own next token (`decoding.Sampler`, after the token rules) and never reordered;
a row that produces `</s>` is set aside as above, so an example is done once its n_best samples
are.

With a coverage penalty (`decoding.CoverageScorer`) each row keeps the running sum of its source
attention, (rows, S), which follows the backpointers; the stopping bound then subtracts the least
penalty the live hypothesis can still get (0 for wu, its current penalty for summary).

Host checks (-beam_sync_every N, `settings.beam_sync_every`): a step asks the host two things,
whether a hypothesis ended (to set it aside as a Python Hypothesis) and how many examples are still
live (to shrink the batch): on CUDA each waits for the device. With N > 1 the step keeps its n-best
scores (`kept`) on the device, holds its ended hypotheses' tensors (no copy: each step makes new
ones), and every N steps (and at the last) one transfer says how many examples are live and which
held steps ended any; those are then set aside in step order. A done example stays in the batch
until then, its rows decoded but masked (nothing of it is set aside after it is done), so the
outputs are the same as N = 1's (tests/unit/test_beam_sync.py). -dump_beam checks every step, and so
does sampling (a done example's rows would draw from the generator: other draws for the others).

`beam_history` (a list, -dump_beam) receives, per example of the batch, the list of its steps:
{"tokens": [K ids], "backpointers": [K beam indices of the previous step], "scores": [K running
scores, None for -inf]}: the K hypotheses kept after the step's topk (a finished one included, with
its running score, before its slot is emptied).
"""
import torch

from onmt.constants import BOS, EOS
from onmt.interface import extended_size
from onmt.translate.beam_state import BeamState
from onmt.translate.decoding import (
    NEG_INF,
    Hypothesis,
    apply_rules,
    attention_of,
    extend_inspection,
    hypothesis_extras,
    inspected_step,
    source_mask,
)


@torch.no_grad()
def beam_search(model, batch, settings, *, ignore_ids=None, keep_attn=False, keep_inspection=False,
                beam_history=None, generator=None):
    """Decode `batch` as `settings` (a decoding.SearchSettings) say; returns, per example, up to its
    n_best Hypothesis, best first. ignore_ids: the ids of settings.ignore_when_blocking
    (1-D tensor).
    keep_attn: keep each token's source attention (Hypothesis.attn); keep_inspection: that and the
    step's "p_copy" / "intra" (Hypothesis.extras), following the backpointers like the attention.
    beam_history: module docstring. generator: the torch.Generator a sampling search draws with
    (None: the global one)."""
    search = BeamSearch(model, batch, settings, ignore_ids=ignore_ids,
                        keep_attn=keep_attn or keep_inspection, keep_inspection=keep_inspection,
                        dump=beam_history is not None, generator=generator)
    finished = search.run()
    if beam_history is not None:
        beam_history.extend(_history(search.dump, len(finished)))
    return [sorted(f, key=lambda h: -h.score)[:settings.n_best] for f in finished]


class BeamSearch:
    """One beam search over one batch (module docstring), as `settings` (a SearchSettings) say:
    `run()` returns, per example, every Hypothesis set aside, with the length penalty and coverage
    scorer the settings chose. ignore_ids: the ids of settings.ignore_when_blocking; dump: keep the
    per-step (example, token, origin, score) tensors in `self.dump`."""

    def __init__(self, model, batch, settings, *, ignore_ids=None, keep_attn=False,
                 keep_inspection=False, dump=False, generator=None):
        self.model, self.batch, self.settings, self.ignore_ids = model, batch, settings, ignore_ids
        # sampling: n_best rows per example, each drawing its own tokens, never reordered
        self.sampler, self.generator = settings.sampler, generator
        self.K = settings.n_best if self.sampler is not None else settings.beam_size
        # chosen once per settings
        self.lengths, self.coverage = settings.lengths, settings.coverage
        # [lo]: the largest penalty of lo..
        self.lp_max = self.lengths.largest_ahead(settings.max_length + 1)
        self.keep_attn, self.keep_inspection = keep_attn, keep_inspection
        self.dump = [] if dump else None
        # per example: its finished Hypothesis
        self.finished = [[] for _ in range(batch.batch_size)]
        # host checks every `every` steps (module docstring); the steps' ended hypotheses held till
        # then, and (B,) which examples of the batch are still live (None: all)
        self.every = 1 if dump or self.sampler is not None else settings.beam_sync_every
        self.held, self.live = [], None

    def run(self):
        beam = self.start()
        last = self.settings.max_length
        for step in range(last + 1):
            beam, bound = self.advance(beam, step)
            # (B,) False where bound is -inf: nothing left to extend
            live = beam.kept[:, -1] < bound
            if self.every > 1:
                self.live = live if self.live is None else self.live & live   # (B,)
                if (step + 1) % self.every and step < last:
                    continue
                live, self.live = self.live, None
                # ONE transfer: the live examples, and whether each held step ended any
                counts = [live.sum()] + [held[0].sum() for held in self.held]
                n_live, *ended = torch.stack(counts).tolist()
                for held, any_ended in zip(self.held, ended):
                    if any_ended:
                        self._record(*held)
                self.held = []
            else:
                n_live = int(live.sum())
            if n_live == 0:
                break
            if n_live < live.size(0):   # drop the finished examples from the batch
                # B' examples
                beam = beam.select(live.nonzero().squeeze(1))
        return self.finished

    def start(self):
        """The beam before the first step: each example holds the one hypothesis <s>. With W = 1 row
        per example the first step decodes B rows and its topk fills the K slots (when the
        vocabulary offers K continuations); otherwise the example's K rows are copies of which only
        one is expanded."""
        model, batch, K = self.model, self.batch, self.K
        B, device = batch.batch_size, batch.src.device
        state = model.init_state(batch, model.encode(batch))
        W = K if self.sampler is not None else 1 if extended_size(model, batch) >= K else K
        if W > 1:
            # rows (B*W,)
            state = state.reorder(torch.arange(B, device=device).repeat_interleave(W),
                                  rows_per_source=W)
        scores = torch.full((B, W), NEG_INF, device=device)                          # (B, W)
        # the W copies of <s> are one hypothesis: expand only one (samples: each its own)
        scores[:, :1 if self.sampler is None else W] = 0.0
        return BeamState(
            state=state,
            inputs=torch.full((B * W,), BOS, dtype=torch.long, device=device),         # (B*W,)
            history=torch.zeros(B * W, 0, dtype=torch.long, device=device),            # (B*W, t)
            # raw: sums of log-probabilities (scores, unless stepwise)
            scores=scores, raw=scores,
            kept=torch.full((B, self.settings.n_best), NEG_INF, device=device),        # (B, n_best)
            example=torch.arange(B, device=device),                                    # (B,)
            cov_mask=(source_mask(batch).repeat_interleave(W, dim=0) if self.coverage.active
                      else None))                                                      # (B*W, S)

    def advance(self, beam, step):
        """One step: decode the R rows, keep each example's top K continuations (the rows follow the
        backpointers), set aside those that produced </s>. Returns the new beam and (B,) the best
        final score a live hypothesis of each example can still reach."""
        # the W rows of an example decode one source: the reorders below (and start's) say so with
        # rows_per_source, so a state that can use it already holds its source once per example
        # log p of (R, X)
        scores, state, attns = self.model.decode_step_scores(beam.inputs, beam.state)
        s = self.settings
        apply_rules(scores, beam.history, step, min_length=s.min_length, max_length=s.max_length,
                    block_ngram_repeat=s.block_ngram_repeat, ignore_ids=self.ignore_ids,
                    ban_unk=s.ban_unk_token)
        beam = self._cover(beam, state, attns)
        top_scores, origin, token = self._top(scores, beam)                            # (B, K) x3
        beam, rows = self._follow(beam, origin, token)
        pen = (self.coverage.penalty(beam.cov, beam.cov_mask).view(token.shape)
               if self.coverage.active else None)
        top_scores, raw = self._sums(top_scores, pen)                                  # (B, K) x2
        if self.dump is not None:   # origin None: each row extends itself
            origin = (torch.arange(token.size(1), device=token.device).expand_as(token)
                      if origin is None else origin)
            self.dump.append((beam.example.cpu(), token.cpu(), origin.cpu(), top_scores.cpu()))
        beam = self._extend(beam, token, attns, rows)
        is_eos = (token == EOS) & (top_scores > NEG_INF)                               # (B, K)
        kept = beam.kept
        if self.every > 1:   # on the device; the host hears of them every `every` steps
            if self.live is not None:   # a done example sets nothing more aside
                is_eos = is_eos & self.live.unsqueeze(1)                               # (B, K)
            penalized = self._penalized(top_scores, pen, step)                         # (B, K)
            self.held.append((is_eos, beam, raw, penalized))
            kept = self._kept(beam, is_eos, penalized)
            top_scores = top_scores.masked_fill(is_eos, NEG_INF)
            raw = raw.masked_fill(is_eos, NEG_INF)
        elif bool(is_eos.any()):
            kept = self._set_aside(beam, is_eos, top_scores, raw, pen, step)
            top_scores = top_scores.masked_fill(is_eos, NEG_INF)
            raw = raw.masked_fill(is_eos, NEG_INF)
        # best score a live hypothesis can still reach (sums only decrease; largest penalty ahead)
        bound = self.coverage.bound(raw, pen, self.lp_max[step + 2])                   # (B,)
        return beam.changed(scores=top_scores, raw=raw, kept=kept), bound

    def _top(self, scores, beam):
        """(values, origin, token) (B, K): each example's top K continuations by running score, the
        row (0..W-1) each extends and its token. K = 1 (greedy search): each row's best token (its
        first on a tie), valued by its sum of log-probabilities (`_sums`: a stepwise penalty is the
        same for every token of a row), origin None (each row extends itself). Sampling: each row's
        drawn token, valued the same way."""
        if self.sampler is not None:
            logp = scores.full()                                                       # (B*W, X)
            token = self.sampler.draw(logp, self.generator)                            # (B*W,)
            gained = logp.gather(1, token.unsqueeze(1)).view(beam.raw.shape)           # (B, W)
            return beam.raw + gained, None, token.view(beam.raw.shape)                 # (B, W) x2
        if self.K > 1:
            # (B, K) of the (B, W*X)
            values, ids = scores.beam_topk(beam.scores, self.K)
            # (B, K) beam of origin
            origin = torch.div(ids, scores.X, rounding_mode="floor")
            return values, origin, ids - origin * scores.X
        # (B,) x2, W = 1
        best, token = scores.best()
        return beam.raw + best.unsqueeze(1), None, token.unsqueeze(1)                  # (B, 1) x2

    def _sums(self, top, pen):
        """(running scores, sums of log-probabilities) (B, K) of the kept continuations valued `top`
        by `_top`, pen (B, K) their coverage penalties (None without)."""
        if self.K > 1 and self.sampler is None:
            return top, self.coverage.raw(top, pen)
        return self.coverage.ranked(top, pen), top

    def _follow(self, beam, origin, token):
        """(the beam whose rows follow the backpointers origin (B, K), with the new tokens token
        (B, K) as its next inputs; the (B*K,) old row of each new row). Rows stay within their
        example, K of them per example (from B rows to B*K at the first step: a state keeping its
        source once per example keeps it). K = 1: every row stays where it is, nothing moves
        (rows None); nor when sampling (each row its own sample)."""
        if self.K == 1 or self.sampler is not None:   # W = K
            return beam.changed(inputs=token.view(-1)), None
        B, W, K = origin.size(0), beam.width, self.K
        # (B*K,)
        rows = (torch.arange(B, device=origin.device).unsqueeze(1) * W + origin).view(B * K)
        return beam.reorder(rows, within_source=W == K, replacing={"inputs": token.view(B * K)},
                            rows_per_source=K), rows

    def _cover(self, beam, state, attns):
        """The beam with the step's decoder state and, with a coverage penalty, its attention added
        to the coverage (in the old row order) and, stepwise, the running scores that include its
        penalty."""
        changes = {"state": state}
        if self.coverage.active:
            cov = self.coverage.accumulate(beam.cov, attns)                            # (R, S)
            changes["cov"] = cov
            # running score: log-prob - penalty of the coverage up to this step
            if self.coverage.stepwise:
                changes["scores"] = self.coverage.running(beam.raw, cov, beam.cov_mask)  # (B, W)
        return beam.changed(**changes)

    def _extend(self, beam, token, attns, rows):
        """The reordered beam with the step's ids (and attention, inspection values) appended."""
        changes = {"history": torch.cat([beam.history, token.view(-1, 1)], dim=1)}     # (B*K, t+1)
        attn = attention_of(attns) if self.keep_attn else None
        if attn is not None:
            step_attn = attn.float().unsqueeze(1)                                      # (B*K, 1, S)
            if rows is not None:
                step_attn = step_attn.index_select(0, rows)
            changes["attn"] = (step_attn if beam.attn is None
                               else torch.cat([beam.attn, step_attn], dim=1))
        if self.keep_inspection:
            step_values = inspected_step(attns)
            if rows is not None:
                step_values = {k: v.index_select(0, rows) for k, v in step_values.items()}
            # (B*K, t+1[, t+1])
            changes["inspected"] = extend_inspection(beam.inspected, step_values)
        return beam.changed(**changes)

    def _penalized(self, top_scores, pen, step):
        """(B, K) the final scores of the step's hypotheses were they to end now."""
        penalized = top_scores / self.lengths(step + 1)                                # (B, K)
        if self.coverage.active:
            penalized = self.coverage.finished(penalized, pen)
        return penalized

    def _kept(self, beam, is_eos, penalized):
        """(B, n_best) the best final scores so far with those of is_eos (B, K)."""
        return torch.cat([beam.kept, penalized.masked_fill(~is_eos, NEG_INF)], dim=1).topk(
            self.settings.n_best, dim=1).values                                        # (B, n_best)

    def _set_aside(self, beam, is_eos, top_scores, raw, pen, step):
        """Record the hypotheses that just produced </s> (is_eos (B, K); a loop over those only);
        returns the new kept (B, n_best)."""
        penalized = self._penalized(top_scores, pen, step)                             # (B, K)
        self._record(is_eos, beam, raw, penalized)
        return self._kept(beam, is_eos, penalized)

    def _record(self, is_eos, beam, raw, penalized):
        """Each hypothesis of is_eos (B, K) of the step's `beam` as a Hypothesis of its example."""
        idx = is_eos.nonzero()                                 # [[b, k], ...] in the current batch
        # their examples in the original batch
        ex = beam.example[idx[:, 0]].tolist()
        for (b, k), e, s, p in zip(idx.tolist(), ex, raw[is_eos].tolist(),
                                   penalized[is_eos].tolist()):
            row = b * self.K + k
            tokens = beam.history[row, :-1].tolist()
            attn = beam.attn[row, :-1].cpu() if beam.attn is not None else None
            extras = hypothesis_extras(beam.inspected, row, len(tokens))
            self.finished[e].append(Hypothesis(tokens, p, s, attn, extras))


def _history(dump, n_examples):
    """Per example, its steps (module docstring) from the per-step (example, token, origin, score)
    tensors."""
    out = [[] for _ in range(n_examples)]
    for example, token, origin, score in dump:
        for e, t, o, s in zip(example.tolist(), token.tolist(), origin.tolist(), score.tolist()):
            out[e].append({"tokens": t, "backpointers": o,
                           "scores": [x if x != NEG_INF else None for x in s]})
    return out
