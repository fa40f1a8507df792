"""The update norms' figures (onmt/utils/update_norms.py): their sums in Statistics.extra, the report
figure and the TensorBoard scalars of a window (the norms themselves: test_trainer.py)."""
import pytest

from onmt.utils import update_norms
from onmt.utils.statistics import Statistics


def test_a_window_reports_the_mean_norm_of_each_part():
    window = Statistics()
    for ml, rl in ((0.2, 0.01), (0.1, 0.03)):
        window.update(Statistics(extra=update_norms.as_sums({"ml": ml, "rl": rl})))
    assert window.extra == pytest.approx({"update_norm_ml": 0.3, "update_norm_rl": 0.04, "update_norm_steps": 2})
    assert update_norms.report(window.extra) == ["update norm ML 0.15, RL 0.02 (RL/ML 0.133)"]
    assert update_norms.scalars(window.extra) == pytest.approx({"norm_ml": 0.15, "norm_rl": 0.02})


def test_no_norms_no_figures_and_no_ratio_without_a_first_norm():
    assert update_norms.report({}) == [] and update_norms.scalars({"p_copy": 1.0}) == {}
    assert update_norms.report(update_norms.as_sums({"ml": 0.0, "rl": 0.5})) == ["update norm ML 0, RL 0.5"]
