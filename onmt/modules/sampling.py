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


def sample_rows(weights, generator=None):
    """One index per row drawn with probability proportional to the row's non-negative weights
    (N, V) (a row needs some positive weight): inverse CDF, the weights summed in float64 (one
    cumsum and one binary search per row; torch.multinomial is several times slower at 50k columns
    on CPU). A zero weight is never drawn. `generator`: a torch.Generator on the weights' device
    (None: the global one)."""
    cdf = weights.cumsum(dim=1, dtype=torch.float64)  # (N, V)
    total = cdf[:, -1:].contiguous()  # (N, 1)
    # (N, 1) in [0, total)
    u = torch.rand(cdf.size(0), 1, dtype=torch.float64, device=cdf.device,
                   generator=generator) * total
    # (N, 1) the last column with mass (u rounding up to total)
    last = torch.searchsorted(cdf, total)
    return torch.minimum(torch.searchsorted(cdf, u, right=True), last).squeeze(1)  # (N,)


def sample_tokens(logp, topk=0, topp=0.0, temperature=1.0, generator=None):
    """(R,) one token per row of log p (R, X) (-inf where banned; each row with a finite entry),
    drawn from softmax(logp / temperature) restricted to the row's `topk` most likely tokens
    (0 or less: all of them) and to its most likely tokens whose probabilities first sum to `topp`
    (0: all; the probabilities of the whole row, as upstream OpenNMT-py's nucleus: a token is kept
    while the tokens more likely than it hold less than topp). temperature > 0. One topk (or sort,
    for topp alone) and one draw for all rows: no loop over rows."""
    logits = logp.float() / temperature  # (R, X)
    X = logits.size(1)
    k = X if topk <= 0 else min(topk, X)
    ids = None
    values = logits
    if k < X:
        values, ids = logits.topk(k, dim=1)  # (R, k), descending
    elif topp > 0:
        values, ids = logits.sort(dim=1, descending=True)  # (R, X)
    if topp > 0:
        probs = (values - torch.logsumexp(logits, dim=1, keepdim=True)).exp()  # (R, k)
        # (R, k) the probability of the more likely tokens: 0 for the first, always kept
        before = probs.cumsum(dim=1) - probs
        values = values.masked_fill(before >= topp, float("-inf"))
    # (R, k) unnormalized; -inf (banned, cut) gives 0, never drawn
    weights = (values - values.amax(dim=1, keepdim=True)).exp()
    drawn = sample_rows(weights, generator)  # (R,)
    return drawn if ids is None else ids.gather(1, drawn.unsqueeze(1)).squeeze(1)
