"""Early stopping (onmt/utils/early_stopping.py): when a validation counts as an improvement, when
patience runs out, and the state a checkpoint carries."""
import math

import pytest

from onmt.utils.early_stopping import EarlyStopping


def _stats(ppl=None, accuracy=None, rouge=None):
    """A validation's figures (trainer_reporting.py `validation_figures`)."""
    figures = {"ppl": ppl if ppl else 2.0, "accuracy": accuracy or 0.0, "xent": math.log(ppl if ppl else 2.0)}
    if rouge is not None:
        figures["rougeL"] = rouge
    return figures


def test_stops_at_the_planted_plateau_and_remembers_the_best():
    stopper = EarlyStopping(patience=3, criteria=("ppl",))
    sequence = [50.0, 40.0, 30.0, 31.0, 30.0, 35.0, 20.0]   # plateau after 30: 3 validations without a new best
    stopped_at = None
    for i, ppl in enumerate(sequence):
        step = 100 * (i + 1)
        improved = stopper.update(_stats(ppl=ppl), step)
        assert improved == (i < 3)
        if stopper.should_stop:
            stopped_at = step
            break
    assert stopped_at == 600 and stopper.best_step == 300
    assert stopper.best["ppl"] == pytest.approx(30.0)
    assert "ppl 30 at step 300" in stopper.describe()


def test_higher_is_better_for_accuracy_and_rouge_and_all_must_improve():
    stopper = EarlyStopping(patience=2, criteria=("rougeL", "ppl"))
    assert stopper.update(_stats(ppl=10, rouge=20.0), 1)
    assert not stopper.update(_stats(ppl=9, rouge=19.0), 2)      # ppl better, ROUGE worse: no
    assert stopper.update(_stats(ppl=8, rouge=21.0), 3)
    assert stopper.best_step == 3 and not stopper.should_stop
    acc = EarlyStopping(patience=1, criteria=("accuracy",))
    assert acc.update(_stats(accuracy=40), 1) and not acc.update(_stats(accuracy=39), 2) and acc.should_stop


def test_patience_zero_tracks_the_best_but_never_stops():
    stopper = EarlyStopping(patience=0)
    for step, ppl in enumerate([5, 6, 7, 8, 9], 1):
        stopper.update(_stats(ppl=ppl), step)
    assert stopper.best_step == 1 and stopper.bad == 4 and not stopper.should_stop


def test_a_criterion_the_validation_did_not_measure_is_an_error():
    with pytest.raises(ValueError, match="rougeL"):
        EarlyStopping(criteria=("rougeL",)).update(_stats(ppl=3), 1)
    with pytest.raises(ValueError, match="unknown"):
        EarlyStopping(criteria=("bleu",))


def test_state_round_trip_and_other_criteria_ignored():
    a = EarlyStopping(patience=3)
    a.update(_stats(ppl=10), 5)
    a.update(_stats(ppl=12), 10)
    b = EarlyStopping(patience=3)
    assert b.load_state_dict(a.state_dict())
    assert (b.best, b.best_step, b.bad) == (a.best, 5, 1)
    c = EarlyStopping(patience=3, criteria=("accuracy",))
    assert not c.load_state_dict(a.state_dict()) and c.best_step is None
