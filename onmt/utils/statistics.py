"""Running training / validation statistics: sums that `update` adds, ratios computed on demand.

Statistics holds the sums every loss has (the token loss, target and source tokens, correct
argmaxes, examples) and, in `extra`, the sums that their owner names and reports: each loss its own
(onmt/losses/ml.py, rl.py: `report`, `scalars`, `valid_report`), the trainer the update norms
(onmt/utils/update_norms.py). Statistics adds `extra` key by key without knowing what a key means.
"""
import math
from dataclasses import dataclass, field


@dataclass
class Statistics:
    loss: float = 0.0            # sum of the token cross-entropies (NLL, nats)
    n_words: int = 0             # target tokens predicted (padding excluded)
    n_correct: int = 0           # of which the argmax was the gold token
    n_examples: int = 0          # examples seen
    n_src_words: int = 0         # source tokens read (padding excluded; the trainer counts them)
    extra: dict = field(default_factory=dict)  # its owners' sums (name -> number), added key by key

    def update(self, other):
        """Add the sums of `other` into self; returns self."""
        self.loss += other.loss
        self.n_words += other.n_words
        self.n_correct += other.n_correct
        self.n_examples += other.n_examples
        self.n_src_words += other.n_src_words
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

    def has_token_loss(self):
        """Whether a token loss was summed
        (a loss may have none, -rl_gamma 1's: its figures are then absent)."""
        return bool(self.n_correct or self.loss)

    def scalars(self):
        """name -> value of the token figures, xent, ppl and accuracy (when there is a token loss),
        for TensorBoard (utils/tensorboard.py); the loss and the update norms add their own."""
        if not self.has_token_loss():
            return {}
        return dict(xent=self.xent(), ppl=self.ppl(), accuracy=self.accuracy())
