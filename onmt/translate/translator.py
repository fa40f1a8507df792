"""Translator: source lines -> n-best predictions as words, and gold-target scoring.

It calls only the model interface (onmt/interface.py) through `greedy_search` (beam size 1)
or `beam_search`, so it serves every model family alike.
"""
import math
from typing import List, NamedTuple, Optional

import torch

from onmt.constants import PAD, UNK, UNK_WORD
from onmt.translate.beam_search import beam_search
from onmt.translate.greedy_search import greedy_search
from onmt.utils.logging import logger
from onmt.utils.progress import progress


class Translation(NamedTuple):
    tokens: List[str]                     # predicted words, </s> excluded
    score: float                          # length-penalized sum of log-probabilities
    attn: Optional[torch.Tensor] = None   # (len(tokens), S) attention (kept with -replace_unk)
    log_prob: float = 0.0                 # raw sum of log-probabilities (</s> included)


def _default_batches(src_lines, tgt_lines, vocabs, batch_size):
    from onmt.inputters.dataset import text_batches
    return text_batches(src_lines, tgt_lines, vocabs, batch_size)


class Translator:
    """Decode text with a model; see `translate` and `score_gold`."""

    def __init__(self, model, vocabs, *, beam_size=5, n_best=1, min_length=0, max_length=100,
                 length_penalty="none", alpha=0.0, block_ngram_repeat=0, ignore_when_blocking=(),
                 replace_unk=False, batch_size=30, verbose=False, keep_attn=False, batch_fn=None,
                 log=None, show_progress=False, coverage_penalty="none", beta=0.0, stepwise_penalty=False,
                 beam_history=None, profiler=None):
        self.model, self.vocabs = model, vocabs
        self.beam_size, self.n_best = beam_size, n_best
        self.search_kwargs = dict(min_length=min_length, max_length=max_length,
                                  length_penalty_kind=length_penalty, alpha=alpha,
                                  block_ngram_repeat=block_ngram_repeat)
        if coverage_penalty != "none":   # (absent otherwise: the searches' defaults)
            self.search_kwargs.update(coverage_penalty_kind=coverage_penalty, beta=beta,
                                      stepwise_penalty=stepwise_penalty)
        # -dump_beam: a list that `translate` fills with one entry per input line (see `_history_entry`);
        # the beam search then runs even with beam size 1 (it returns what greedy search returns)
        self.beam_history = beam_history
        self.profiler = profiler   # -profile: onmt.utils.profiling.Profiler of the first N batches
        ids = sorted({vocabs.tgt.stoi[w] for w in ignore_when_blocking if w in vocabs.tgt.stoi})
        self.ignore_ids = torch.tensor(ids, dtype=torch.long)
        self.replace_unk, self.keep_attn = replace_unk, keep_attn or replace_unk
        self.batch_size, self.verbose = batch_size, verbose
        self.batch_fn = batch_fn or _default_batches
        self.log = log or logger.info
        self.show_progress = show_progress   # onmt.utils.progress: a bar on a terminal, else log lines
        param = next(model.parameters(), None)
        self.device = param.device if param is not None else torch.device("cpu")

    @classmethod
    def from_opt(cls, opt, model, vocabs, **kwargs):
        return cls(model, vocabs, beam_size=opt.beam_size, n_best=opt.n_best, min_length=opt.min_length,
                   max_length=opt.max_length, length_penalty=opt.length_penalty, alpha=opt.alpha,
                   block_ngram_repeat=opt.block_ngram_repeat, ignore_when_blocking=opt.ignore_when_blocking,
                   replace_unk=opt.replace_unk, batch_size=opt.batch_size, verbose=opt.verbose,
                   coverage_penalty=opt.coverage_penalty, beta=opt.beta, stepwise_penalty=opt.stepwise_penalty,
                   **{"show_progress": True, **kwargs})

    # ------------------------------------------------------------------ decoding
    def translate(self, src_lines, tgt_lines=None, on_record=None, record_lines=None):
        """Per input line, exactly n_best Translation, best first (output order = input order).

        An empty (or blank) line gets empty translations without running the model. With
        `tgt_lines`, the gold targets are scored too and GOLD AVG SCORE / GOLD PPL logged.
        With `on_record`, the search keeps the inspection data (keep_inspection) and calls
        `on_record(record)` with the record (onmt/translate/records.py) of the best hypothesis of
        every line in `record_lines` (a container of 0-based line numbers; None: every line), in
        the order batches finish; only batches holding such a line pay for keeping it.
        """
        if tgt_lines is not None and len(tgt_lines) != len(src_lines):
            from onmt.errors import UserError
            raise UserError(f"{len(src_lines)} source lines but {len(tgt_lines)} target lines")
        src_tokens = [line.split() for line in src_lines]
        keep = [i for i, toks in enumerate(src_tokens) if toks]          # lines the model sees
        keep.sort(key=lambda i: -len(src_tokens[i]))   # batch similar lengths: less padding
        results = [[Translation([], 0.0, None)] * self.n_best for _ in src_lines]
        wanted = (lambda line: False) if on_record is None else \
            (lambda line: record_lines is None or line in record_lines)
        if on_record is not None:
            from onmt.translate.records import empty_record
            for line, toks in enumerate(src_tokens):
                if not toks and wanted(line):
                    on_record(empty_record(line, toks))
        self.model.eval()
        ignore = self.ignore_ids.to(self.device)
        batches = self.batch_fn([src_lines[i] for i in keep], None, self.vocabs, self.batch_size)
        history = {} if self.beam_history is not None else None   # line -> its steps
        if self.profiler is not None and keep:
            self.profiler.start()
        for batch in progress(batches, desc="translate", unit="sent", total=len(keep),
                              weight=lambda b: b.batch_size, disable=not self.show_progress):
            batch = batch.to(self.device)
            lines = [keep[ex] for ex in batch.indices.tolist()]
            inspect = any(wanted(line) for line in lines)
            steps = [] if history is not None else None
            if self.beam_size == 1 and steps is None:
                hyps = greedy_search(self.model, batch, ignore_ids=ignore, keep_attn=self.keep_attn,
                                     keep_inspection=inspect, **self.search_kwargs)
            else:
                hyps = beam_search(self.model, batch, beam_size=self.beam_size, n_best=self.n_best,
                                   ignore_ids=ignore, keep_attn=self.keep_attn, keep_inspection=inspect,
                                   beam_history=steps, **self.search_kwargs)
            for b, line in enumerate(lines):
                nbest = [Translation(self._words(h.tokens, h.attn, batch.oovs[b], src_tokens[line]),
                                     h.score, h.attn if self.keep_attn else None, h.log_prob) for h in hyps[b]]
                if inspect and wanted(line):
                    on_record(self._record(line, src_tokens[line], nbest[0].tokens if nbest else [],
                                           hyps[b][0] if hyps[b] else None))
                if steps is not None:
                    history[line] = [dict(s, words=self._words(s["tokens"], None, batch.oovs[b], []))
                                     for s in steps[b]]
                missing = self.n_best - len(nbest)        # only when nearly every token was forbidden
                results[line] = nbest + [Translation([], float("-inf"), None, float("-inf"))] * missing
            if self.profiler is not None:
                self.profiler.done_one()
        if self.profiler is not None:
            self.profiler.stop()    # fewer batches than asked
        if history is not None:
            self.beam_history.extend({"line": i, "src": toks, "steps": history.get(i, [])}
                                     for i, toks in enumerate(src_tokens))
        gold = self.score_gold(src_lines, tgt_lines) if tgt_lines is not None else None
        self._report(src_tokens, results, tgt_lines, gold)
        return results

    def _record(self, line, src_words, pred_words, hyp):
        from onmt.translate.records import empty_record, make_record
        if hyp is None:
            return empty_record(line, src_words)
        return make_record(line, src_words, pred_words, hyp, len(self.vocabs.tgt), self.model.copy)

    def _words(self, ids, attn, oovs, src_tokens):
        """Extended ids -> words: copied OOVs from the example's list; <unk> replaced if asked."""
        V, itos = len(self.vocabs.tgt), self.vocabs.tgt.itos
        words = []
        for i, t in enumerate(ids):
            if t < V:
                w = itos[t]
            else:
                w = oovs[t - V] if t - V < len(oovs) else UNK_WORD
            if t == UNK and self.replace_unk and attn is not None:
                pos = int(attn[i].argmax())
                if pos < len(src_tokens):
                    w = src_tokens[pos]
            words.append(w)
        return words

    # ------------------------------------------------------------------ gold scoring
    @torch.no_grad()
    def score_gold(self, src_lines, tgt_lines):
        """Per line, (sum of log p(gold token), number of gold tokens) under teacher forcing.

        Gold tokens are the target's words and </s>; a target word outside the extended vocabulary
        counts as <unk>. Lines with an empty source get (0.0, 0) without running the model.
        """
        out = [(0.0, 0) for _ in src_lines]
        lengths = [len(line.split()) for line in src_lines]
        keep = sorted((i for i, n in enumerate(lengths) if n), key=lambda i: -lengths[i])  # less padding
        self.model.eval()
        batches = self.batch_fn([src_lines[i] for i in keep], [tgt_lines[i] for i in keep], self.vocabs,
                                self.batch_size)
        for batch in progress(batches, desc="score gold", unit="sent", total=len(keep),
                              weight=lambda b: b.batch_size, disable=not self.show_progress):
            batch = batch.to(self.device)
            lp, _, _ = self.model.gold_log_likelihood(batch)             # (B, T-1), 0 at padding
            mask = batch.tgt[:, 1:] != PAD                               # (B, T-1)
            for ex, s, n in zip(batch.indices.tolist(), lp.float().sum(1).tolist(), mask.sum(1).tolist()):
                out[keep[ex]] = (s, n)
        return out

    # ------------------------------------------------------------------ reporting
    def _report(self, src_tokens, results, tgt_lines, gold):
        if self.verbose:
            for n, (src, nbest) in enumerate(zip(src_tokens, results), 1):
                best = nbest[0]
                msg = [f"SENT {n}: {src}", f"PRED {n}: {' '.join(best.tokens)}", f"PRED SCORE: {best.score:.4f}"]
                if gold is not None:
                    msg += [f"GOLD {n}: {tgt_lines[n - 1].strip()}", f"GOLD SCORE: {gold[n - 1][0]:.4f}"]
                if len(nbest) > 1:
                    msg.append("BEST HYP:")
                    msg += [f"[{t.score:.4f}] {' '.join(t.tokens)}" for t in nbest]
                self.log("\n".join(msg) + "\n")
        self.log(self.pred_score_line(src_tokens, results))
        if gold is not None:
            self._report_score("GOLD", sum(s for s, _ in gold), sum(n for _, n in gold))

    @staticmethod
    def pred_score_line(src_tokens, results):
        """OpenNMT-py's `PRED AVG SCORE: x, PRED PPL: y`, with its definitions: over all the n_best
        predictions of every line, x = (sum of their scores) / (sum of their lengths) and
        y = exp(-x). A score is the search's final score (summed log-probabilities, the final </s>'s
        included, divided by the length penalty, minus any coverage penalty); a length counts the
        predicted words, </s> not counted. Lines with an empty source (not decoded) and the -inf
        fillers of a short n-best list are left out. `PRED No words predicted` when no word was."""
        preds = [t for r, s in zip(results, src_tokens) if s for t in r if math.isfinite(t.score)]
        return Translator._score_line("PRED", sum(t.score for t in preds), sum(len(t.tokens) for t in preds))

    def _report_score(self, name, total, words):
        """GOLD: total = sum of log p(gold token) with </s>, words = gold tokens with </s> (as OpenNMT-py)."""
        self.log(self._score_line(name, total, words))

    @staticmethod
    def _score_line(name, total, words):
        if words == 0:
            return f"{name} No words predicted"
        avg = total / words
        ppl = math.exp(-avg) if -avg < 700 else float("inf")
        return f"{name} AVG SCORE: {avg:.4f}, {name} PPL: {ppl:.4f}"
