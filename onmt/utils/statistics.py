"""Running training / validation statistics: sums that `update` adds, ratios computed on demand."""
import math
from dataclasses import dataclass, field


@dataclass
class Statistics:
    loss: float = 0.0            # sum of the token cross-entropies (NLL, nats)
    n_words: int = 0             # target tokens predicted (padding excluded)
    n_correct: int = 0           # of which the argmax was the gold token
    coverage_loss: float = 0.0   # sum over tokens of sum_i min(a_ti, cov_ti) (unweighted)
    n_examples: int = 0          # examples seen
    extra: dict = field(default_factory=dict)  # other sums (e.g. rewards), added key by key

    def update(self, other):
        """Add the sums of `other` into self; returns self."""
        self.loss += other.loss
        self.n_words += other.n_words
        self.n_correct += other.n_correct
        self.coverage_loss += other.coverage_loss
        self.n_examples += other.n_examples
        for k, v in other.extra.items():
            self.extra[k] = self.extra.get(k, 0.0) + v
        return self

    def xent(self):
        """Mean cross-entropy per target token."""
        return self.loss / max(self.n_words, 1)

    def ppl(self):
        """Perplexity, exp(xent), capped instead of overflowing."""
        return math.exp(min(self.xent(), 100.0))

    def accuracy(self):
        """Percentage of target tokens predicted correctly."""
        return 100.0 * self.n_correct / max(self.n_words, 1)

    def mean_coverage_loss(self):
        return self.coverage_loss / max(self.n_words, 1)
