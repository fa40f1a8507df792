"""Where one system beats another: a paired difference of per-example scores, split into buckets of
a property of each example (how much its reference overlaps its source, its reference length, ...).

    overlap = [reference_overlap(s, r)
               for s, r in zip(sources, refs)]  # share of reference words in the source
    rows = gain_by_bucket(rouge_l_a, rouge_l_b, overlap, OVERLAP_EDGES)     # one dict per bucket

Texts are whitespace-tokenized strings (the tokenized, lowercased form the models read and write).
A bucket holds the examples with edges[i] <= value < edges[i + 1] (the last bucket is closed at
its top); each row gives the bucket's example count, both systems' means, their difference and the
one-sided paired bootstrap p-value of "A is higher" within the bucket (bootstrap.py).
"""
import numpy as np

from onmt.evaluation.bootstrap import paired_test

OVERLAP_EDGES = (0.0, 1 / 3, 2 / 3, 1.0)


def reference_overlap(source, reference):
    """The share of the reference's words (tokens, repeats counted) that occur anywhere in the
    source; 0.0 for an empty reference."""
    words = reference.split()
    if not words:
        return 0.0
    vocab = set(source.split())
    return sum(w in vocab for w in words) / len(words)


def bucket_of(values, edges):
    """(n,) int array: the bucket of each value, -1 outside [edges[0], edges[-1]]."""
    v = np.asarray(values, dtype=np.float64)
    idx = np.searchsorted(np.asarray(edges, dtype=np.float64), v, side="right") - 1     # (n,)
    idx[v == edges[-1]] = len(edges) - 2           # the top edge belongs to the last bucket
    idx[(v < edges[0]) | (v > edges[-1])] = -1
    return idx


def bucket_label(lo, hi, last):
    def f(x):
        return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))
    return f"[{f(lo)}, {f(hi)}{']' if last else ')'}"


def gain_by_bucket(scores_a, scores_b, values, edges, samples=1000, seed=1):
    """Per bucket of `values` (one per example) by `edges`: {"bucket", "n", "a", "b", "delta", "p"}
    with the means of the per-example scores `scores_a` and `scores_b` (n,) in their own unit,
    delta = a - b, and the one-sided paired bootstrap p-value of "a > b" in the bucket (1.0 for an
    empty bucket)."""
    a, b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    if a.shape != b.shape or a.shape[0] != len(values):
        raise ValueError("scores and values must hold one entry per example")
    idx = bucket_of(values, edges)
    rows = []
    for k in range(len(edges) - 1):
        m = idx == k
        n = int(m.sum())
        mean_a, mean_b = (float(a[m].mean()), float(b[m].mean())) if n else (0.0, 0.0)
        p = float(paired_test(a[m], b[m], samples, seed)) if n else 1.0
        rows.append({"bucket": bucket_label(edges[k], edges[k + 1], k == len(edges) - 2), "n": n,
                     "a": mean_a, "b": mean_b, "delta": mean_a - mean_b, "p": p})
    return rows


def quantile_edges(values, k):
    """k buckets of about equal counts: k + 1 edges from the empirical quantiles of `values`,
    repeats merged."""
    q = np.quantile(np.asarray(values, dtype=np.float64), np.linspace(0, 1, k + 1))
    return tuple(float(x) for x in np.unique(q))
