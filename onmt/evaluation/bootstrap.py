"""Bootstrap resampling over examples: confidence intervals and the paired test.

Both resample the n examples with replacement B times (seeded) and average the per-example scores
of each sample; the (B, n) count matrix of a sample times the (n, k) score matrix gives all B
sample means in one product, so B = 1000 over a CNN/DM-sized test set takes well under a second.

- `confidence_intervals`: the 2.5th and 97.5th percentiles of the B sample means (the percentile
  interval, as ROUGE-1.5.5's own -c 95 -r B reports it).
- `paired_test` (Koehn 2004): the same B samples of examples for both systems; the p-value of
  "system A scores higher than system B" is (1 + #samples where A's mean <= B's) / (B + 1),
  one-sided, never 0. A file compared with itself gives p = 1 exactly.
"""
import numpy as np


def sample_counts(n, samples, seed):
    """(samples, n) float matrix: how often each example is drawn in each bootstrap sample."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(samples, n))                         # (B, n)
    flat = (idx + np.arange(samples)[:, None] * n).ravel()
    return np.bincount(flat, minlength=samples * n).reshape(samples, n).astype(np.float64)


def sample_means(scores, counts):
    """(B, ...) means of `scores` (n, ...) under each sample of `counts` (B, n)."""
    n = scores.shape[0]
    flat = scores.reshape(n, -1)                                        # (n, k)
    return (counts @ flat / n).reshape((counts.shape[0],) + scores.shape[1:])


def confidence_intervals(scores, samples=1000, seed=1, level=0.95):
    """(low, high) arrays shaped like scores.shape[1:]: the `level` percentile interval of the
    mean."""
    if scores.shape[0] == 0:
        z = np.zeros(scores.shape[1:])
        return z, z
    means = sample_means(scores, sample_counts(scores.shape[0], samples, seed))
    tail = (1 - level) / 2 * 100
    return np.percentile(means, tail, axis=0), np.percentile(means, 100 - tail, axis=0)


def paired_test(scores_a, scores_b, samples=1000, seed=1):
    """One-sided p-values, shaped like scores.shape[1:], of "A's mean is higher than B's"."""
    if scores_a.shape != scores_b.shape:
        raise ValueError(f"paired scores differ in shape: {scores_a.shape} vs {scores_b.shape}")
    if scores_a.shape[0] == 0:
        return np.ones(scores_a.shape[1:])
    diff = sample_means(scores_a - scores_b, sample_counts(scores_a.shape[0], samples, seed))
    return (1 + (diff <= 0).sum(axis=0)) / (samples + 1)


def pooled_difference(diffs, samples=1000, seed=1, level=0.95):
    """A difference pooled over seeds: `diffs` (S, n), seed s's per-example difference of two
    systems on the same n examples. Returns {"mean": the mean over seeds of each seed's mean
    difference, "low", "high": the `level` percentile interval of a two-level bootstrap (the S
    seeds resampled with replacement, then the n examples, the same draw of examples for every
    seed: both the seed spread and the examples' enter the interval), "p": one-sided p-value of
    "the difference is above 0" from the same resamples, "per_seed": each seed's mean}."""
    diffs = np.asarray(diffs, dtype=np.float64)
    if diffs.ndim != 2 or diffs.shape[1] == 0:
        raise ValueError(f"pooled differences need (seeds, examples) scores, got {diffs.shape}")
    s, n = diffs.shape
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, s, size=(samples, s))                       # (B, S)
    flat = (seeds + np.arange(samples)[:, None] * s).ravel()
    weights = np.bincount(flat, minlength=samples * s).reshape(samples, s) / s   # (B, S)
    counts = sample_counts(n, samples, seed + 1)                          # (B, n)
    per_sample_seed = sample_means(diffs.T, counts)                       # (B, S)
    means = (weights * per_sample_seed).sum(axis=1)                     # (B,)
    tail = (1 - level) / 2 * 100
    return {"mean": float(diffs.mean()), "low": float(np.percentile(means, tail)),
            "high": float(np.percentile(means, 100 - tail)),
            "p": float((1 + (means <= 0).sum()) / (samples + 1)),
            "per_seed": [float(x) for x in diffs.mean(axis=1)]}
