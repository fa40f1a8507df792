"""ROUGE-N and ROUGE-L (sentence- and summary-level) on token lists, averaged per example.

Plain Python, written from Lin (2004): ROUGE-N counts clipped n-gram matches; ROUGE-L uses the
longest common subsequence; summary-level ROUGE-L takes, for each reference sentence, the union of
its LCS matches with every candidate sentence.

No stemming and no ROUGE-1.5.5 tokenization: for figures comparable with papers use onmt.evaluation
(onmt_evaluate), which reproduces ROUGE-1.5.5.
"""
from collections import Counter


def _prf(overlap, n_pred, n_ref):
    p = overlap / n_pred if n_pred else 0.0
    r = overlap / n_ref if n_ref else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(pred, ref, n):
    p, r = ngrams(pred, n), ngrams(ref, n)
    overlap = sum((p & r).values())
    return _prf(overlap, sum(p.values()), sum(r.values()))


def lcs_table(a, b):
    """(len(a)+1) x (len(b)+1) table of LCS lengths of prefixes."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        row, prev = table[i], table[i - 1]
        for j, y in enumerate(b, 1):
            row[j] = prev[j - 1] + 1 if x == y else max(prev[j], row[j - 1])
    return table


def lcs_positions(a, b):
    """Positions in `a` of one longest common subsequence of a and b."""
    table = lcs_table(a, b)
    i, j, pos = len(a), len(b), []
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            pos.append(i - 1)
            i, j = i - 1, j - 1
        elif table[i - 1][j] >= table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return pos


def rouge_l(pred, ref):
    """Sentence-level ROUGE-L (P, R, F) of two token lists."""
    if not pred or not ref:
        return 0.0, 0.0, 0.0
    return _prf(lcs_table(pred, ref)[-1][-1], len(pred), len(ref))


def rouge_l_summary(pred_sents, ref_sents):
    """Summary-level ROUGE-L: union-LCS of every reference sentence against all candidate sentences."""
    n_pred = sum(len(s) for s in pred_sents)
    n_ref = sum(len(s) for s in ref_sents)
    if not n_pred or not n_ref:
        return 0.0, 0.0, 0.0
    pred_counts = Counter(w for s in pred_sents for w in s)
    ref_counts = Counter(w for s in ref_sents for w in s)
    hits = 0
    for r in ref_sents:
        union = set()
        for c in pred_sents:
            union.update(lcs_positions(r, c))
        for i in sorted(union):  # clip: a word counts at most as often as it occurs on both sides
            w = r[i]
            if pred_counts[w] > 0 and ref_counts[w] > 0:
                hits += 1
                pred_counts[w] -= 1
                ref_counts[w] -= 1
    return _prf(hits, n_pred, n_ref)


def split_sentences(tokens, marker="."):
    """Split a token list after each `marker` token; empty marker: one sentence."""
    if not marker:
        return [tokens] if tokens else []
    sents, cur = [], []
    for t in tokens:
        cur.append(t)
        if t == marker:
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


def corpus_rouge(preds, refs, sentence_marker="."):
    """Average ROUGE-1, ROUGE-2, ROUGE-L (summary-level) P/R/F over examples, in percent."""
    if len(preds) != len(refs):
        raise ValueError(f"{len(preds)} predictions but {len(refs)} references")
    totals = {k: [0.0, 0.0, 0.0] for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L")}
    for pred, ref in zip(preds, refs):
        p, r = pred.split(), ref.split()
        scores = {"ROUGE-1": rouge_n(p, r, 1), "ROUGE-2": rouge_n(p, r, 2),
                  "ROUGE-L": rouge_l_summary(split_sentences(p, sentence_marker),
                                             split_sentences(r, sentence_marker))}
        for k, v in scores.items():
            for i in range(3):
                totals[k][i] += v[i]
    n = max(len(preds), 1)
    return {k: tuple(100.0 * x / n for x in v) for k, v in totals.items()}
