"""Early stopping on validation figures (OpenNMT-py's -early_stopping / -early_stopping_criteria).

    stopper = EarlyStopping(patience=3, criteria=("ppl",))
    improved = stopper.update(valid_stats, step)   # after each validation
    stopper.should_stop                             # N validations in a row without improvement

A validation improves when every criterion beats its own best so far (as upstream: with several
criteria, all must improve); the step of the last improvement is the best step, whose checkpoint the
trainer keeps as {save_model}_best.pt. Criteria: ppl (lower is better), accuracy and rougeL (the
greedy validation ROUGE-L F1 of -valid_rouge; higher is better). The state travels in checkpoints
(`state_dict`), so an interrupted run resumes with its patience and its best.
"""
import math

# name -> (Statistics -> value or None when the validation did not measure it, higher is better)
CRITERIA = {
    "ppl": (lambda s: s.ppl(), False),
    "accuracy": (lambda s: s.accuracy(), True),
    "rougeL": (lambda s: s.scalars().get("rougeL"), True),
}


class EarlyStopping:
    def __init__(self, patience=0, criteria=("ppl",)):
        unknown = [c for c in criteria if c not in CRITERIA]
        if unknown:
            raise ValueError(f"unknown early-stopping criteria {unknown}; choose from {sorted(CRITERIA)}")
        self.patience, self.criteria = patience, tuple(criteria)
        self.best = {}          # criterion -> best value so far
        self.best_step = None   # step of the last validation that improved every criterion
        self.bad = 0            # validations since then

    def values(self, stats):
        """criterion -> value of this validation's Statistics (ValueError when one is not measured)."""
        out = {}
        for name in self.criteria:
            value = CRITERIA[name][0](stats)
            if value is None or not math.isfinite(value):
                raise ValueError(f"the validation did not measure {name}")
            out[name] = value
        return out

    def update(self, stats, step):
        """Record a validation at `step`; True when it improved every criterion (a new best)."""
        values = self.values(stats)
        better = all(name not in self.best or (values[name] > self.best[name] if CRITERIA[name][1]
                                               else values[name] < self.best[name]) for name in values)
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
        return {"criteria": list(self.criteria), "best": dict(self.best), "best_step": self.best_step,
                "bad": self.bad}

    def load_state_dict(self, state):
        """Resume a run's state; ignored when it tracked other criteria (a new phase, a new question)."""
        if list(state.get("criteria", [])) != list(self.criteria):
            return False
        self.best = {k: float(v) for k, v in state["best"].items()}
        self.best_step, self.bad = state["best_step"], int(state["bad"])
        return True
