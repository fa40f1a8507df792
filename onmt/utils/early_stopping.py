"""Early stopping on validation figures (OpenNMT-py's -early_stopping / -early_stopping_criteria).

    stopper = EarlyStopping(patience=3, criteria=("ppl",))
    improved = stopper.update(figures,
                              step)   # after each validation: {"ppl": 12.3, "rougeL": 30.1, ...}
    stopper.should_stop                             # N validations in a row without improvement

A validation improves when every criterion beats its own best so far (as upstream: with several
criteria, all must improve); the step of the last improvement is the best step, whose checkpoint the
trainer keeps as {save_model}_best.pt. Criteria: ppl (lower is better), accuracy and rougeL (the
greedy validation ROUGE-L F1 of -valid_rouge; higher is better), read by name from the validation's
figures (the trainer's, trainer_reporting.py `validation_figures`). The state travels in checkpoints
(`state_dict`), so an interrupted run resumes with its patience and its best.
"""
import math

# name -> whether higher is better
CRITERIA = {"ppl": False, "accuracy": True, "rougeL": True}


class EarlyStopping:
    def __init__(self, patience=0, criteria=("ppl",)):
        unknown = [c for c in criteria if c not in CRITERIA]
        if unknown:
            raise ValueError(f"unknown early-stopping criteria {unknown}; "
                             f"choose from {sorted(CRITERIA)}")
        self.patience, self.criteria = patience, tuple(criteria)
        self.best = {}          # criterion -> best value so far
        self.best_step = None   # step of the last validation that improved every criterion
        self.bad = 0            # validations since then

    def values(self, figures):
        """criterion -> its value among this validation's figures
        (ValueError when one is not measured)."""
        out = {}
        for name in self.criteria:
            value = figures.get(name)
            if value is None or not math.isfinite(value):
                raise ValueError(f"the validation did not measure {name}")
            out[name] = value
        return out

    def update(self, figures, step):
        """Record a validation at `step` (`figures`: name -> value); True when it improved every
        criterion (a new best)."""
        values = self.values(figures)
        better = all(name not in self.best or (values[name] > self.best[name] if CRITERIA[name]
                                               else values[name] < self.best[name])
                     for name in values)
        if better:
            self.best, self.best_step, self.bad = values, step, 0
        else:
            self.bad += 1
        return better

    @property
    def should_stop(self):
        return self.patience > 0 and self.bad >= self.patience

    def describe(self):
        """'ppl 30.12, rougeL 31.20 at step 2500' (the best so far)."""
        figures = ", ".join(f"{k} {v:.4g}" for k, v in self.best.items())
        return f"{figures} at step {self.best_step}"

    def state_dict(self):
        return {"criteria": list(self.criteria), "best": dict(self.best),
                "best_step": self.best_step, "bad": self.bad}

    def load_state_dict(self, state):
        """Resume a run's state; ignored when it tracked other criteria
        (a new phase, a new question)."""
        if list(state.get("criteria", [])) != list(self.criteria):
            return False
        self.best = {k: float(v) for k, v in state["best"].items()}
        self.best_step, self.bad = state["best_step"], int(state["bad"])
        return True
