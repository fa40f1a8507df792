"""Running training / validation statistics: sums that `update` adds, ratios computed on demand.

Model-specific figures travel in `extra` (summed key by key) and come out as ratios through
`scalars()`, so the trainer and the TensorBoard writer report them without knowing the model family.
"""
import math
from dataclasses import dataclass, field


@dataclass
class Statistics:
    loss: float = 0.0            # sum of the token cross-entropies (NLL, nats)
    n_words: int = 0             # target tokens predicted (padding excluded)
    n_correct: int = 0           # of which the argmax was the gold token
    coverage_loss: float = 0.0   # sum over tokens of sum_i min(a_ti, cov_ti) (unweighted)
    n_examples: int = 0          # examples seen
    n_src_words: int = 0         # source tokens read (padding excluded; the trainer counts them)
    extra: dict = field(default_factory=dict)  # other sums (e.g. rewards), added key by key

    def update(self, other):
        """Add the sums of `other` into self; returns self."""
        self.loss += other.loss
        self.n_words += other.n_words
        self.n_correct += other.n_correct
        self.coverage_loss += other.coverage_loss
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

    def mean_coverage_loss(self):
        return self.coverage_loss / max(self.n_words, 1)

    def mean_p_copy(self):
        """Mean pointer probability p(copy) = 1 - p_gen over the target tokens (loss.py), or None when
        the model has no pointer."""
        if "p_copy" not in self.extra:
            return None
        return self.extra["p_copy"] / max(self.n_words, 1)

    def has_ml(self):
        """Whether the ML loss ran (-rl_gamma 1 trains without it: its figures are then absent)."""
        return bool(self.n_correct or self.loss)

    def scalars(self):
        """name -> value of every figure this window holds, for TensorBoard (utils/tensorboard.py):
        xent, ppl, accuracy; coverage (mean coverage loss), p_copy, sampled_inputs (% of decoder
        inputs from scheduled sampling) where the model has them; reward_sample, reward_greedy,
        rl_loss (per example) and copies (% of sampled tokens) with the RL objective; norm_ml, norm_rl
        (mean norm of the gradient each term adds to an update, before clipping); rougeL (greedy
        ROUGE-L F1, %) and greedy_length at validation with -valid_rouge."""
        e, out = self.extra, {}
        if self.has_ml():
            out.update(xent=self.xent(), ppl=self.ppl(), accuracy=self.accuracy())
        if self.coverage_loss:
            out["coverage"] = self.mean_coverage_loss()
        if "p_copy" in e:
            out["p_copy"] = self.mean_p_copy()
        if "sampled_inputs" in e:
            out["sampled_inputs"] = 100.0 * e["sampled_inputs"] / max(self.n_words, 1)
        n = e.get("rl_examples", 0)
        if n:
            out.update(reward_sample=e["reward_sample"] / n, reward_greedy=e["reward_greedy"] / n,
                       rl_loss=e["rl_loss"] / n,
                       copies=100.0 * e.get("copied_tokens", 0) / max(e.get("sampled_tokens", 0), 1))
        n = e.get("update_norm_steps", 0)
        if n:
            out.update({k[len("update_"):]: e[k] / n for k in e
                        if k.startswith("update_norm_") and k != "update_norm_steps"})
        n = e.get("valid_rouge_examples", 0)
        if n:
            out.update(rougeL=100.0 * e["valid_rougeL"] / n,
                       greedy_length=e.get("valid_greedy_tokens", 0) / n)
        return out

    def rl_report(self):
        """'; '-joined figures of the self-critical loss (onmt/losses/rl.py) in this window, or ''."""
        e = self.extra
        n = e.get("rl_examples", 0)
        if not n:
            return ""
        ml = f"{self.xent():.4f}" if self.has_ml() else "n/a"
        copies = 100.0 * e.get("copied_tokens", 0) / max(e.get("sampled_tokens", 0), 1)
        line = (f"reward sample: {e['reward_sample'] / n:.4f}; reward greedy: {e['reward_greedy'] / n:.4f}; "
                f"ml loss: {ml}; rl loss: {e['rl_loss'] / n:.4f}; copies: {copies:.1f}%")
        steps = e.get("update_norm_steps", 0)
        if steps:   # the norm of what each term adds to the update (onmt/utils/update_norms.py)
            g_ml, g_rl = e.get("update_norm_ml", 0.0) / steps, e.get("update_norm_rl", 0.0) / steps
            line += (f"; update norm ML {g_ml:.3g}, RL {g_rl:.3g}"
                     + (f" (RL/ML {g_rl / g_ml:.3g})" if g_ml > 0 else ""))
        return line

    def valid_rouge_report(self):
        """The greedy validation ROUGE-L line (onmt/losses/rl.py), or ''."""
        n = self.extra.get("valid_rouge_examples", 0)
        if not n:
            return ""
        length = self.extra.get("valid_greedy_tokens", 0) / n
        return f"Validation ROUGE-L F1 (greedy): {100.0 * self.extra['valid_rougeL'] / n:.2f}; mean length {length:.1f}"
