"""Bootstrap intervals and the paired test, against a naive loop over resamples."""
import numpy as np
import pytest

from onmt.evaluation.bootstrap import confidence_intervals, paired_test, sample_counts, sample_means


def test_sample_means_equal_a_loop_over_resampled_indices():
    rng = np.random.default_rng(0)
    scores = rng.random((37, 4, 3))
    counts = sample_counts(37, 50, seed=7)
    assert counts.shape == (50, 37) and (counts.sum(1) == 37).all()
    # the same draws, replayed naively
    idx = np.random.default_rng(7).integers(0, 37, size=(50, 37))
    naive = np.stack([scores[i].mean(axis=0) for i in idx])
    np.testing.assert_allclose(sample_means(scores, counts), naive, atol=1e-12)


def test_intervals_cover_the_point_estimate_and_shrink_with_n():
    rng = np.random.default_rng(1)
    small, large = rng.random((50, 4, 3)), rng.random((5000, 4, 3))
    for s in (small, large):
        lo, hi = confidence_intervals(s, 1000, seed=2)
        mean = s.mean(axis=0)
        assert (lo <= mean).all() and (mean <= hi).all() and (lo < hi).all()
    w_small = np.subtract(*confidence_intervals(small, 1000, 2)[::-1])
    w_large = np.subtract(*confidence_intervals(large, 1000, 2)[::-1])
    assert (w_large < w_small).all()


def test_interval_of_a_normal_mean_is_about_right():
    x = np.random.default_rng(3).normal(0.5, 0.1, size=(400, 1, 1))
    lo, hi = confidence_intervals(x, 2000, seed=4)
    half = 1.96 * 0.1 / np.sqrt(400)
    assert (hi - lo).item() == pytest.approx(2 * half, rel=0.15)


def test_paired_test_self_is_one_and_clear_winner_is_small():
    rng = np.random.default_rng(5)
    a = rng.random((200, 4, 3))
    assert (paired_test(a, a, 500, seed=1) == 1.0).all()
    better = np.clip(a + 0.05, 0, 1)
    p = paired_test(better, a, 500, seed=1)
    assert (p == 1 / 501).all()                                  # never 0: (1 + 0) / (B + 1)
    assert (paired_test(a, better, 500, seed=1) == 1.0).all()
    # a tiny, noisy difference is not significant
    noisy = a + rng.normal(0, 0.05, a.shape) * 0.1
    assert (paired_test(noisy, a, 500, seed=1) > 0.01).any()


def test_pooled_difference_by_hand():
    from onmt.evaluation.bootstrap import pooled_difference
    # two seeds, three examples: seed means 1.0 and 3.0, pooled mean 2.0 by hand
    d = [[0.0, 1.0, 2.0], [3.0, 3.0, 3.0]]
    r = pooled_difference(d, samples=4000, seed=3)
    assert r["mean"] == 2.0 and r["per_seed"] == [1.0, 3.0]
    # by hand: seeds {1,1} (probability 1/4) give seed 1's example means k/3, k = 0 .. 6, so
    # P(mean <= 0) = 1/4 * 1/27 = 1/108 and P(mean <= 1/3) = 1/4 * 4/27 = 1/27; the 2.5th percentile is
    # therefore 1/3, the p-value about 1/108; {2,2} gives exactly 3, the most any resample can give
    assert r["low"] == pytest.approx(1 / 3) and r["high"] == 3.0
    assert abs(r["p"] - 1 / 108) < 0.004
    # one seed: the example bootstrap of its differences (the interval of confidence_intervals)
    one = pooled_difference([[0.0, 1.0, 2.0, 5.0]], samples=2000, seed=5)
    assert one["mean"] == 2.0
    assert min(0.0, 5.0) <= one["low"] < 2.0 < one["high"] <= 5.0
    # a constant difference: its interval is that constant
    c = pooled_difference([[0.5] * 6, [0.5] * 6], samples=200)
    assert c["low"] == c["high"] == 0.5 and c["mean"] == 0.5


def test_pooled_difference_spreads_with_the_seeds():
    from onmt.evaluation.bootstrap import pooled_difference
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.1, size=(2, 400))
    agree = pooled_difference(noise + 1.0)
    disagree = pooled_difference(noise + np.array([[0.0], [2.0]]))
    assert abs(agree["mean"] - disagree["mean"]) < 0.02
    assert (disagree["high"] - disagree["low"]) > 10 * (agree["high"] - agree["low"])
    assert disagree["low"] < 0.05 and agree["low"] > 0.95
