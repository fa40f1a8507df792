"""onmt/evaluation/breakdown.py against hand-computed examples."""
import numpy as np
import pytest

from onmt.evaluation.breakdown import (
    OVERLAP_EDGES,
    bucket_of,
    gain_by_bucket,
    quantile_edges,
    reference_overlap,
)


def test_overlap_counts_reference_tokens_found_anywhere_in_the_source():
    # reference "police arrest five police in paris": police, police, five, paris in the source (4 of 6)
    assert reference_overlap("five men and police met in the paris office", "police arrest five police near paris") \
        == pytest.approx(4 / 6)
    assert reference_overlap("a b", "") == 0.0
    assert reference_overlap("", "a b") == 0.0
    assert reference_overlap("a b c", "c b a") == 1.0


def test_buckets_are_half_open_but_the_last_is_closed():
    edges = (0.0, 1 / 3, 2 / 3, 1.0)
    assert bucket_of([0.0, 0.2, 1 / 3, 0.5, 2 / 3, 0.99, 1.0, -0.1, 1.5], edges).tolist() == \
        [0, 0, 1, 1, 2, 2, 2, -1, -1]


def test_gain_by_bucket_by_hand():
    # overlap:  0.1 (bucket 0), 0.2 (0), 0.5 (1), 0.9 (2), 1.0 (2)
    a = np.array([10.0, 20.0, 30.0, 60.0, 50.0])
    b = np.array([20.0, 20.0, 25.0, 40.0, 40.0])
    rows = gain_by_bucket(a, b, [0.1, 0.2, 0.5, 0.9, 1.0], OVERLAP_EDGES, samples=200)
    assert [r["bucket"] for r in rows] == ["[0, 0.33)", "[0.33, 0.67)", "[0.67, 1]"]
    assert [r["n"] for r in rows] == [2, 1, 2]
    assert [r["a"] for r in rows] == [15.0, 30.0, 55.0] and [r["b"] for r in rows] == [20.0, 25.0, 40.0]
    assert [r["delta"] for r in rows] == [-5.0, 5.0, 15.0]
    # bucket 0: a <= b in every resample (a1 < b1, a2 = b2): p = 1; bucket 2: a > b in every resample
    assert rows[0]["p"] == 1.0 and rows[2]["p"] == pytest.approx(1 / 201)


def test_empty_bucket_and_mismatched_inputs():
    rows = gain_by_bucket([1.0], [0.0], [0.9], OVERLAP_EDGES)
    assert rows[0]["n"] == 0 and rows[0]["p"] == 1.0 and rows[2]["delta"] == 1.0
    with pytest.raises(ValueError):
        gain_by_bucket([1.0, 2.0], [0.0], [0.5, 0.5], OVERLAP_EDGES)


def test_quantile_edges_split_counts_evenly():
    assert quantile_edges([1, 2, 3, 4, 5], 2) == (1.0, 3.0, 5.0)
    assert quantile_edges([7, 7, 7], 3) == (7.0,)
