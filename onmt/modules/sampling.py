"""Drawing one index per row of a batch of unnormalized distributions, on any device; scheduled
sampling's probability by training step."""
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingSchedule:
    """Scheduled sampling's probability at each training step (1-based): 0 for the first `start`
    steps, then rising linearly to `rate` over `ramp` steps (rate * k / ramp at step start + k),
    `rate` after; with start 0 and ramp 0, `rate` from the first step (Paulus et al.'s constant
    0.25)."""
    rate: float
    start: int = 0
    ramp: int = 0

    def __post_init__(self):
        if not 0.0 <= self.rate <= 1.0 or self.start < 0 or self.ramp < 0:
            raise ValueError("a sampling schedule needs rate in [0, 1] and start, ramp >= 0, "
                             f"got {self}")

    def at(self, step):
        """The probability of feeding back the model's own prediction during training step
        `step`."""
        k = step - self.start   # steps since sampling started (the first sampled step is k = 1)
        if k <= 0:
            return 0.0
        return self.rate * min(1.0, k / self.ramp) if self.ramp > 0 else self.rate


def sample_rows(weights):
    """One index per row drawn with probability proportional to the row's non-negative weights
    (N, V) (a row needs some positive weight): inverse CDF, the weights summed in float64 (one
    cumsum and one binary search per row; torch.multinomial is several times slower at 50k columns
    on CPU). A zero weight is never drawn."""
    cdf = weights.cumsum(dim=1, dtype=torch.float64)  # (N, V)
    total = cdf[:, -1:].contiguous()  # (N, 1)
    # (N, 1) in [0, total)
    u = torch.rand(cdf.size(0), 1, dtype=torch.float64, device=cdf.device) * total
    # (N, 1) the last column with mass (u rounding up to total)
    last = torch.searchsorted(cdf, total)
    return torch.minimum(torch.searchsorted(cdf, u, right=True), last).squeeze(1)  # (N,)
