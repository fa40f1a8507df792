"""onmt/translate/length_grid.py: where a choice sits on an axis, the step beyond an edge, and the
bisection to a mean length, against plain enumeration."""
import pytest

from onmt.translate import length_grid as lg


@pytest.mark.parametrize("values, chosen, low, high, where", [
    ([0, 1, 2], 1, 0, 3, lg.INTERIOR),
    ([0, 1, 2], 2, 0, 3, lg.TOP),
    ([0, 1, 2], 2, 0, 2, lg.CAP),
    ([0, 1, 2], 0, 0, 3, lg.LOWEST),
    ([15, 30, 45], 15, 0, 90, lg.BOTTOM),
    ([35], 35, 0, 90, lg.FIXED),
])
def test_axis_status(values, chosen, low, high, where):
    assert lg.axis_status(values, chosen, low, high) == where


def test_widened_steps_by_the_outer_spacing_and_stops_at_the_bounds():
    assert lg.widened([0, 15, 30, 45], lg.TOP, 0, 90) == 60
    assert lg.widened([0, 0.5, 1.0, 1.5], lg.TOP, 0.0, 3.0) == 2.0
    assert lg.widened([0, 40, 80], lg.TOP, 0, 90) == 90          # clamped to the bound
    assert lg.widened([0, 40, 90], lg.TOP, 0, 90) is None
    assert lg.widened([20, 30], lg.BOTTOM, 0, 90) == 10
    assert lg.widened([5, 30], lg.BOTTOM, 0, 90) == 0
    assert lg.widened([0, 30], lg.BOTTOM, 0, 90) is None
    assert lg.widened([30], lg.TOP, 0, 90) is None


@pytest.mark.parametrize("target", [0.0, 3.2, 7.5, 12.0, 40.0, 100.0])
def test_nearest_length_finds_what_enumeration_finds(target):
    f = lambda x: min(2 + 0.9 * max(x - 3, 0), 50.0)    # noqa: E731  flat, then rising, then capped
    x, length, probes = lg.nearest_length(f, 0, 60, target)
    want = min(range(61), key=lambda v: (abs(f(v) - target), v))
    assert abs(f(x) - target) == pytest.approx(abs(f(want) - target))
    assert length == f(x) and len(probes) <= 9           # log2(60) + 2 decodings, not 61
