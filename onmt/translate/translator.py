"""Translator: source lines -> n-best predictions as words, and gold-target scoring.

It calls only the model interface (onmt/interface.py) through `beam_search` (beam size 1: greedy
search), which takes its SearchSettings as they are, so it serves every model family alike.
"""
import math
from dataclasses import dataclass
from typing import Callable, Container, List, NamedTuple, Optional

import torch

from onmt.constants import PAD, UNK, UNK_WORD
from onmt.errors import UserError
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings
from onmt.translate.records import empty_record, make_record
from onmt.utils.logging import logger
from onmt.utils.memory import is_out_of_memory
from onmt.utils.progress import progress


class Translation(NamedTuple):
    tokens: List[str]                     # predicted words, </s> excluded
    score: float                          # length-penalized sum of log-probabilities
    attn: Optional[torch.Tensor] = None   # (len(tokens), S) attention (kept with -replace_unk)
    log_prob: float = 0.0                 # raw sum of log-probabilities (</s> included)


@dataclass
class Callbacks:
    """What a caller of `Translator.translate` hears about, besides the results (all optional).

    on_record: called with the inspection record (onmt/translate/records.py) of the best
        hypothesis of every line in `record_lines` (a container of 0-based line numbers; None:
        every line), in the order batches finish; the search keeps the inspection data
        (keep_inspection) only for the batches holding such a line.
    beam_history: a list (-dump_beam) that `translate` fills with one entry per input line
        ({"line", "src", "steps"}: beam_search's steps, each with its "words"), beam size 1
        included.
    profiler: an onmt.utils.profiling.Profiler of the first batches (-profile).
    """
    on_record: Optional[Callable[[dict], None]] = None
    record_lines: Optional[Container[int]] = None
    beam_history: Optional[list] = None
    profiler: Optional[object] = None

    def wants(self, line):
        return self.on_record is not None and (self.record_lines is None
                                               or line in self.record_lines)


def _default_batches(src_lines, tgt_lines, vocabs, batch_size):
    # looked up on its module when called: the tests replace it there
    from onmt.inputters.dataset import text_batches
    return text_batches(src_lines, tgt_lines, vocabs, batch_size)


class Translator:
    """Decode text with a model; see `translate` and `score_gold`. `search` (a SearchSettings; None:
    its defaults) says how each batch is searched, and is the only way to say it."""

    def __init__(self, model, vocabs, search=None, *, replace_unk=False, batch_size=30,
                 verbose=False, keep_attn=False, batch_fn=None, log=None, show_progress=False,
                 seed=None):
        if search is not None and not isinstance(search, SearchSettings):
            raise TypeError(f"search must be a SearchSettings, not {type(search).__name__}")
        self.model, self.vocabs = model, vocabs
        self.search = search if search is not None else SearchSettings()
        # the penalties chosen, their kinds checked: here, once
        _ = self.search.lengths, self.search.coverage
        self.replace_unk, self.keep_attn = replace_unk, keep_attn or replace_unk
        self.batch_size, self.verbose = batch_size, verbose
        self.batch_fn = batch_fn or _default_batches
        self.log = log or logger.info
        # onmt.utils.progress: a bar on a terminal, else log lines
        self.show_progress = show_progress
        param = next(model.parameters(), None)
        self.device = param.device if param is not None else torch.device("cpu")
        ids = sorted({vocabs.tgt.stoi[w] for w in self.search.ignore_when_blocking
                      if w in vocabs.tgt.stoi})
        # -ignore_when_blocking's ids
        self.ignore_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        # sampling (-random_sampling_*): draws from its own generator, seeded by `seed` (-seed;
        # None: the global one), so that a seed repeats whatever else used the global one
        self.generator = None
        if self.search.sampler is not None and seed is not None:
            self.generator = torch.Generator(device=self.device)
            self.generator.manual_seed(seed)

    @classmethod
    def from_opt(cls, opt, model, vocabs, **kwargs):
        return cls(model, vocabs, SearchSettings.from_opt(opt), replace_unk=opt.replace_unk,
                   batch_size=opt.batch_size, verbose=opt.verbose,
                   **{"show_progress": True, "seed": opt.seed, **kwargs})

    # ------------------------------------------------------------------ decoding
    def translate(self, src_lines, tgt_lines=None, callbacks=None):
        """Per input line, exactly n_best Translation, best first (output order = input order).

        An empty (or blank) line gets empty translations without running the model. With
        `tgt_lines`, the gold targets are scored too and GOLD AVG SCORE / GOLD PPL logged.
        `callbacks` (a Callbacks): inspection records, the beam history, the profiler.
        """
        callbacks = callbacks or Callbacks()
        if tgt_lines is not None and len(tgt_lines) != len(src_lines):
            raise UserError(f"{len(src_lines)} source lines but {len(tgt_lines)} target lines")
        src_tokens = [line.split() for line in src_lines]
        results = [[Translation([], 0.0, None)] * self.search.n_best for _ in src_lines]
        self._record_empty_lines(src_tokens, callbacks)
        self.model.eval()
        history = {} if callbacks.beam_history is not None else None   # line -> its steps
        for batch, lines in self._batches(src_lines, src_tokens, callbacks.profiler):
            try:
                self._translate_batch(batch, lines, src_tokens, results, history, callbacks)
            except (MemoryError, RuntimeError) as e:
                raise self._memory_error(e, lines, src_tokens) from e
        if history is not None:
            callbacks.beam_history.extend({"line": i, "src": toks, "steps": history.get(i, [])}
                                          for i, toks in enumerate(src_tokens))
        gold = self.score_gold(src_lines, tgt_lines) if tgt_lines is not None else None
        self._report(src_tokens, results, tgt_lines, gold)
        return results

    def _translate_batch(self, batch, lines, src_tokens, results, history, callbacks):
        """Search `batch` (the input `lines`) and put each line's n-best into `results` (its beam
        steps into `history` when not None); the records of the lines `callbacks` wants."""
        inspect = any(callbacks.wants(line) for line in lines)
        hyps, steps = self._search(batch, inspect, dump=history is not None)
        for b, line in enumerate(lines):
            results[line] = self._nbest(hyps[b], batch.oovs[b], src_tokens[line])
            if inspect and callbacks.wants(line):
                callbacks.on_record(self._record(line, src_tokens[line], results[line][0].tokens,
                                                 hyps[b][0] if hyps[b] else None))
            if history is not None:
                history[line] = [dict(s, words=self._words(s["tokens"], None, batch.oovs[b], []))
                                 for s in steps[b]]

    def _memory_error(self, exc, lines, src_tokens):
        """`exc` itself, or where it is an allocation failure a UserError naming the longest input
        line of the batch (1-based) and how to go on: a -max_length far beyond the input (the
        search's states grow with the steps) is named, not the input's length."""
        if not is_out_of_memory(exc):
            return exc
        longest = max(lines, key=lambda line: len(src_tokens[line]))
        limit, n = self.search.max_length, len(src_tokens[longest])
        if limit > max(1000, 4 * n):
            return UserError(f"out of memory translating input line {longest + 1} ({n:,} tokens) "
                             f"with -max_length {limit:,}: the search keeps the states of up to "
                             f"{limit:,} steps for each of its {self.search.beam_size} hypotheses; "
                             "lower -max_length (the default is the checkpoint's own length rule)")
        return UserError(f"out of memory translating input line {longest + 1} "
                         f"({len(src_tokens[longest]):,} tokens"
                         f"{f', in a batch of {len(lines)} lines' if len(lines) > 1 else ''}): "
                         "cut long inputs with -src_seq_length_trunc N"
                         f"{' or lower -batch_size' if len(lines) > 1 else ''}")

    @staticmethod
    def _record_empty_lines(src_tokens, callbacks):
        """The records of the wanted lines the model does not read (empty sources)."""
        if callbacks.on_record is None:
            return
        for line, toks in enumerate(src_tokens):
            if not toks and callbacks.wants(line):
                callbacks.on_record(empty_record(line, toks))

    def _batches(self, src_lines, src_tokens, profiler=None):
        """(batch on the model's device, the input line of each of its examples) for the non-empty
        lines, longest first (similar lengths: less padding), under the progress display and the
        profiler."""
        keep = [i for i, toks in enumerate(src_tokens) if toks]          # lines the model sees
        keep.sort(key=lambda i: -len(src_tokens[i]))
        batches = self.batch_fn([src_lines[i] for i in keep], None, self.vocabs, self.batch_size)
        if profiler is not None and keep:
            profiler.start()
        for batch in progress(batches, desc="translate", unit="sent", total=len(keep),
                              weight=lambda b: b.batch_size, disable=not self.show_progress):
            yield batch.to(self.device), [keep[ex] for ex in batch.indices.tolist()]
            if profiler is not None:
                profiler.done_one()
        if profiler is not None:
            profiler.stop()    # fewer batches than asked

    def _search(self, batch, inspect, dump):
        """(per example, its n-best Hypothesis list; with `dump`, per example, its beam steps)."""
        steps = [] if dump else None
        hyps = beam_search(self.model, batch, self.search, ignore_ids=self.ignore_ids,
                           keep_attn=self.keep_attn, keep_inspection=inspect, beam_history=steps,
                           generator=self.generator)
        return hyps, steps

    def _nbest(self, hyps, oovs, src_tokens):
        """The n_best Translation of an example's Hypothesis list (-inf fillers when it is shorter:
        only when nearly every token was forbidden)."""
        nbest = [Translation(self._words(h.tokens, h.attn, oovs, src_tokens), h.score,
                             h.attn if self.keep_attn else None, h.log_prob) for h in hyps]
        return nbest + ([Translation([], float("-inf"), None, float("-inf"))]
                        * (self.search.n_best - len(nbest)))

    def _record(self, line, src_words, pred_words, hyp):
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
        # less padding
        keep = sorted((i for i, n in enumerate(lengths) if n), key=lambda i: -lengths[i])
        self.model.eval()
        batches = self.batch_fn([src_lines[i] for i in keep], [tgt_lines[i] for i in keep],
                                self.vocabs, self.batch_size)
        for batch in progress(batches, desc="score gold", unit="sent", total=len(keep),
                              weight=lambda b: b.batch_size, disable=not self.show_progress):
            batch = batch.to(self.device)
            lp, _, _ = self.model.gold_log_likelihood(batch)             # (B, T-1), 0 at padding
            mask = batch.tgt[:, 1:] != PAD                               # (B, T-1)
            for ex, s, n in zip(batch.indices.tolist(), lp.float().sum(1).tolist(),
                                mask.sum(1).tolist()):
                out[keep[ex]] = (s, n)
        return out

    # ------------------------------------------------------------------ reporting
    def _report(self, src_tokens, results, tgt_lines, gold):
        if self.verbose:
            for n, (src, nbest) in enumerate(zip(src_tokens, results), 1):
                best = nbest[0]
                msg = [f"SENT {n}: {src}", f"PRED {n}: {' '.join(best.tokens)}",
                       f"PRED SCORE: {best.score:.4f}"]
                if gold is not None:
                    msg += [f"GOLD {n}: {tgt_lines[n - 1].strip()}",
                            f"GOLD SCORE: {gold[n - 1][0]:.4f}"]
                if len(nbest) > 1:
                    msg.append("BEST HYP:")
                    msg += [f"[{t.score:.4f}] {' '.join(t.tokens)}" for t in nbest]
                self.log("\n".join(msg) + "\n")
        self.log(self.pred_score_line(src_tokens, results))
        # sum of log p(gold token) and gold tokens, </s> included (as OpenNMT-py)
        if gold is not None:
            self.log(self._score_line("GOLD", sum(s for s, _ in gold), sum(n for _, n in gold)))

    @staticmethod
    def pred_score_line(src_tokens, results):
        """OpenNMT-py's `PRED AVG SCORE: x, PRED PPL: y`, with its definitions: over all the n_best
        predictions of every line, x = (sum of their scores) / (sum of their lengths) and
        y = exp(-x). A score is the search's final score (summed log-probabilities, the final </s>'s
        included, divided by the length penalty, minus any coverage penalty); a length counts the
        predicted words, </s> not counted. Lines with an empty source (not decoded) and the -inf
        fillers of a short n-best list are left out. `PRED No words predicted` when no word was."""
        preds = [t for r, s in zip(results, src_tokens) if s for t in r if math.isfinite(t.score)]
        return Translator._score_line("PRED", sum(t.score for t in preds),
                                      sum(len(t.tokens) for t in preds))

    @staticmethod
    def _score_line(name, total, words):
        if words == 0:
            return f"{name} No words predicted"
        avg = total / words
        ppl = math.exp(-avg) if -avg < 700 else float("inf")
        return f"{name} AVG SCORE: {avg:.4f}, {name} PPL: {ppl:.4f}"
