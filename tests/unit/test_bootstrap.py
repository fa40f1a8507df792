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
