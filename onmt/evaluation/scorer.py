"""The built-in ROUGE scorer: ROUGE-1.5.5's numbers without Perl, fast.

`score_examples(preds, refs)` gives, per example, precision, recall and F1 of ROUGE-1, ROUGE-2,
ROUGE-L and ROUGE-Lsum, computed as ROUGE-1.5.5 computes them from files of one sentence per line
(`-a -n 2 -m`, no `-s`, average over references, alpha 0.5):
- ROUGE-N: clipped n-gram matches, n-grams running across sentence boundaries;
- ROUGE-L: the LCS of the whole prediction and the whole reference (ROUGE-1.5.5 on one-line files;
  rouge-score's "rougeL");
- ROUGE-Lsum: summary-level LCS (ROUGE-1.5.5 on sentence-split files; rouge-score's "rougeLsum"):
  per reference sentence, the union of its LCS positions with every predicted sentence, each word
  counted at most as often as it occurs in both summaries (ROUGE-1.5.5's clipping);
- several references: the matches and the reference lengths are summed over references, the
  prediction length is counted once per reference (ROUGE-1.5.5's default "-f A"), so
  R = sum(hits) / sum(|ref|), P = sum(hits) / (k |pred|), F = 2PR / (P + R);
- an example whose prediction or references are empty scores 0 and counts in the average.
Tokens, stems and limits are those of text.py and stemmer.py. official.py runs the Perl script on
the same sentences; tests/unit/test_rouge_official.py holds the two within 0.05 points.
"""
import contextlib
import gc
from collections import Counter

import numpy as np

from onmt.evaluation.lcs import PackedReference, lcs_length, union_hits
from onmt.evaluation.stemmer import Stemmer
from onmt.evaluation.text import (
    dot_sentence_tokens_flat,
    limited_sentences,
    sentence_tokens,
    sentence_tokens_flat,
    split_sentences,
    tokens,
)

METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


class _Summary:
    """One summary's token ids as each ROUGE variant reads them (see text.limited_sentences):
    per sentence for ROUGE-Lsum, all of them for ROUGE-N and ROUGE-L, with unigram and bigram
    counts. Without a length limit `ngram` and `whole` are one list (`_lcs_hits` relies on it)."""
    __slots__ = ("ngram", "lcs_sents", "whole", "uni", "bi")

    def __init__(self, lcs_sents, ngram, whole):
        self.lcs_sents, self.ngram, self.whole = lcs_sents, ngram, whole
        self.uni = Counter(ngram)
        self.bi = Counter(zip(ngram, ngram[1:]))

    @classmethod
    def from_flat(cls, flat):
        """From ids with -1 between sentences (no length limit); sentences without a token dropped,
        which changes no score."""
        if -1 not in flat:
            return cls([flat] if flat else [], flat, flat)
        sents, start = [], 0
        while True:
            try:
                end = flat.index(-1, start)
            except ValueError:
                end = len(flat)
            if end > start:
                sents.append(flat[start:end])
            if end == len(flat):
                break
            start = end + 1
        ngram = [t for s in sents for t in s]
        return cls(sents, ngram, ngram)


def _hits(a, b):
    """Clipped matches of two Counters: sum over shared keys of the smaller count."""
    common = a.keys() & b.keys()
    return sum(map(min, map(a.__getitem__, common), map(b.__getitem__, common)))


def _lcs_hits(ref, pred):
    """(ROUGE-L LCS length, ROUGE-1.5.5's summary-level LCS hits) of a reference and a prediction.

    For ROUGE-Lsum, ROUGE-1.5.5 walks the union-LCS positions in order and counts one when the word
    still has unigram count left on both sides, taking one from each. Per word that sums to
    min(#positions, count in reference, count in prediction), whatever the order."""
    packed = PackedReference(ref.lcs_sents)
    if ref.whole is ref.ngram and pred.whole is pred.ngram:       # no limit: whole = the sentences
        whole = packed.lcs_with(pred.whole)
    else:
        whole = lcs_length(ref.whole, pred.whole)
    mask = union_hits(packed, pred.lcs_sents)
    if not mask:
        return whole, 0
    r, p = ref.uni, pred.uni
    return whole, sum(min(c, r[t], p[t]) for t, c in Counter(packed.tokens_at(mask)).items())


class RougeScorer:
    """Per-example ROUGE; `stem` is ROUGE-1.5.5's -m, `limit_words` / `limit_bytes` its -l / -b;
    summaries given as lines are split into sentences at `sentence_marker` tokens (text.py)."""

    def __init__(self, stem=True, limit_words=0, limit_bytes=0, sentence_marker="."):
        if limit_words and limit_bytes:
            raise ValueError("give a word limit or a byte limit, not both")
        self.stemmer = Stemmer() if stem else None
        self.limit_words, self.limit_bytes = limit_words, limit_bytes
        self.sentence_marker = sentence_marker
        # token -> id of its (stemmed) form; -1: between sentences ("\n" from sentence_tokens_flat,
        # "." from dot_sentence_tokens_flat)
        self._ids = {"\n": -1, ".": -1}
        self._forms = {}            # (stemmed) form -> id

    def _token_ids(self, toks):
        cache = self._ids
        try:
            return list(map(cache.__getitem__, toks))
        except KeyError:
            for t in toks:
                if t not in cache:
                    form = self.stemmer(t) if self.stemmer else t
                    cache[t] = self._forms.setdefault(form, len(self._forms))
            return list(map(cache.__getitem__, toks))

    def summary(self, summary):
        """_Summary of a summary line (split into sentences here) or of its list of sentences."""
        limited = self.limit_words or self.limit_bytes
        if isinstance(summary, str):
            if (not limited and self.sentence_marker == "." and "<t>" not in summary
                    and "</t>" not in summary):
                return _Summary.from_flat(self._token_ids(dot_sentence_tokens_flat(summary)))
            summary = split_sentences(summary, self.sentence_marker)
        if not limited:
            return _Summary.from_flat(self._token_ids(sentence_tokens_flat(summary)))
        ids, lw, lb = self._token_ids, self.limit_words, self.limit_bytes
        return _Summary(
            [ids(t) for t in sentence_tokens(limited_sentences(summary, lw, lb, for_lcs=True))],
            ids(tokens(" ".join(limited_sentences(summary, lw, lb)))),
            ids(tokens(" ".join(limited_sentences([" ".join(summary)], lw, lb)))))

    def counts(self, pred_sents, refs_sents):
        """(hits, reference length, prediction length), each a 4-tuple in METRICS order, summed over
        the references as ROUGE-1.5.5 sums them (refs_sents: one summary per reference; a summary is
        a line or a list of sentences)."""
        pred = self.summary(pred_sents)
        hits, ref_len = [0, 0, 0, 0], [0, 0, 0, 0]
        for r in refs_sents:
            ref = self.summary(r)
            hits[0] += _hits(ref.uni, pred.uni)
            hits[1] += _hits(ref.bi, pred.bi)
            lcs, lsum = _lcs_hits(ref, pred)
            hits[2] += lcs
            hits[3] += lsum
            ref_len[0] += len(ref.ngram)
            ref_len[1] += max(len(ref.ngram) - 1, 0)
            ref_len[2] += len(ref.whole)
            ref_len[3] += sum(len(s) for s in ref.lcs_sents)
        k, n = len(refs_sents), len(pred.ngram)
        return hits, ref_len, (k * n, k * max(n - 1, 0), k * len(pred.whole), k * n)

    def score_examples(self, preds, refs):
        """(n, 4, 3) array: per example, rows METRICS, columns P, R, F in [0, 1].
        preds[i]: the prediction (a line or its sentences); refs[i]: a list of references, each a
        line or its sentences."""
        if len(preds) != len(refs):
            raise ValueError(f"{len(preds)} predictions but {len(refs)} reference sets")
        # millions of short-lived containers and no cycles: collections only cost time
        with _no_gc():
            c = np.array([self.counts(p, rs) for p, rs in zip(preds, refs)],
                         dtype=float).reshape(-1, 3, 4)
        hits, ref_len, pred_len = c[:, 0], c[:, 1], c[:, 2]                     # (n, 4) each
        p = np.divide(hits, pred_len, out=np.zeros_like(hits), where=pred_len > 0)
        r = np.divide(hits, ref_len, out=np.zeros_like(hits), where=ref_len > 0)
        f = np.divide(2 * p * r, p + r, out=np.zeros_like(hits), where=(p + r) > 0)
        return np.stack([p, r, f], axis=2)                                     # (n, 4, 3)


@contextlib.contextmanager
def _no_gc():
    """The cyclic garbage collector off (as it was before, after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def summarize(scores):
    """{metric: {"p", "r", "f"}} in points (x 100), averaged over examples, from an (n, 4, 3)
    array."""
    mean = scores.mean(axis=0) * 100 if len(scores) else np.zeros((len(METRICS), 3))
    return {m: {"p": float(mean[i, 0]), "r": float(mean[i, 1]), "f": float(mean[i, 2])}
            for i, m in enumerate(METRICS)}
