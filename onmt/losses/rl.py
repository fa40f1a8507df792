"""The mixed objective of Paulus, Xiong & Socher (2017), eq. 15-16:
self-critical policy gradient + ML.

    L = gamma * L_rl + (1 - gamma) * L_ml
    L_rl = sum_b (r(y^_b) - r(y^s_b)) * sum_t log p(y^s_bt | y^s_b,<t, x_b)
    L_ml = sum_b sum_t -log p(y*_bt | y*_b,<t, x_b)   (the ML loss, scheduled sampling included)

y^s is sampled from the model's own distribution (the pointer included) and y^ decoded greedily
without gradient, both free-running from ONE encoding (`model.rollout`, interface.py), at most
`max_length` tokens each; log-probabilities after a sequence's first </s> are masked (the </s>
itself counts). r is the reward of a sequence against the reference (rewards.py, ROUGE-L F1 by
default) on extended ids: the reference is batch.tgt_ex[:, 1:] before its </s>, with <unk> (a
reference word outside the target vocabulary and absent from the source) made unmatchable.
Minimizing L_rl raises log p(y^s) when y^s beats the greedy baseline (r(y^s) > r(y^)) and lowers it
otherwise.

Normalization (`-rl_normalization`): with `sum` (the paper's, the default) both terms are sums over
a sequence, summed over the batch, so their ratio is the paper's; the trainer divides every loss by
the batch's reference tokens (Statistics.n_words), which scales both by the same batch constant (as
with the ML loss alone). With `tokens` the RL sum is also multiplied by (reference tokens / sampled
tokens) of the batch, so that after the trainer's division each term is a mean per token of its own
sequences. gamma = 0 runs no rollout at all and returns the ML loss itself (bit for bit); gamma = 1
skips the ML term. With 0 < gamma < 1 the loss is returned as its two parts, {"ml": (1 - gamma)
L_ml, "rl": gamma L_rl} (`parts`), which the trainer backpropagates one after the other to log the
norm each adds to the update.

The rollouts (y^s, y^ and their shared encoding) run without dropout (`evaluation_mode`), so
the greedy baseline is the model's own greedy decode and y^s is drawn from the distribution the
model has at test time; the ML term keeps training mode (dropout, scheduled sampling). A model
without dropout (`dropout_free`: the paper's configurations have none) encodes its batch ONCE for
both terms: the two modes compute the same encoding then, and the ML term and the rollouts read that
one encoding and the W_out derived from it (interface.py EncoderOutput.per_pass), their gradients
flowing back through one graph; the trainer backpropagates the terms one after the other (retaining
the graph for the second).

Validation is its own method, `validate(model, batch)` (no gradient): the ML statistics and, with
`valid_rouge`, the greedy ROUGE-L F1 of every example, so the RL phase's effect shows in the
validation log. The loss owns its figures (Statistics.extra: the ML loss's, then "rl_examples",
"reward_sample", "reward_greedy", "rl_loss", "sampled_tokens", "copied_tokens" in training and
"valid_rouge_examples", "valid_rougeL", "valid_greedy_tokens" at validation) and names them in
`report`, `scalars` and `valid_report`.

Precision: the rewards are float32 whatever the autocast state (integer counts, F1 in float64), and
the RL term is a float32 island (onmt/modules/precision.py) on the widened log p(y^s): under -amp
the loss is float32 like the ML loss.
"""
import contextlib

import torch
from torch import nn

from onmt.constants import PAD, UNK
from onmt.losses.rewards import reward_function, rouge_l
from onmt.modules.precision import float32_region, widen
from onmt.utils.statistics import Statistics


def reference_tokens(batch):
    """The reference for the reward: (B, T-1) extended ids before </s> (<unk> as -1: it matches
    nothing) and their (B,) lengths."""
    ref = batch.tgt_ex if batch.tgt_ex is not None else batch.tgt
    ref = ref[:, 1:]  # (B, T-1) without <s>
    lengths = (batch.tgt[:, 1:] != PAD).sum(1) - 1  # (B,) without </s>
    return ref.masked_fill(ref == UNK, -1), lengths


def dropout_free(model):
    """Whether `model`'s encoder (the whole model without one) computes the same in training and
    in evaluation mode: no dropout module with p > 0, no multi-layer RNN with inter-layer
    dropout."""
    for m in getattr(model, "encoder", model).modules():
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0:
            return False
        if isinstance(m, nn.RNNBase) and m.num_layers > 1 and m.dropout > 0:
            return False
    return True


@contextlib.contextmanager
def evaluation_mode(model):
    """`model` without dropout inside the block, its modules' modes restored after: every module in
    evaluation mode except the recurrent ones (nn.LSTM / nn.GRU), which keep training mode with
    their inter-layer dropout set to 0 (the only thing their mode changes): cuDNN refuses the
    backward pass of an RNN run in evaluation mode, and the sampled rollout is backpropagated."""
    modes = [(m, m.training) for m in model.modules()]
    rnns = [(m, m.dropout) for m in model.modules() if isinstance(m, nn.RNNBase)]
    model.eval()
    for m, _ in rnns:
        m.dropout = 0.0
        m.training = True
    try:
        yield model
    finally:
        for m, training in modes:
            m.training = training
        for m, dropout in rnns:
            m.dropout = dropout


class MixedLoss:
    """gamma * self-critical RL + (1 - gamma) * `ml_loss` (an MLLoss); `loss(model, batch)`."""

    def __init__(self, ml_loss, gamma=0.0, reward="rougeL", max_length=100, valid_rouge=False,
                 normalization="sum"):
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if normalization not in ("sum", "tokens"):
            raise ValueError(f"normalization must be sum or tokens, got {normalization}")
        self.ml_loss, self.gamma, self.max_length = ml_loss, gamma, max_length
        self.normalization = normalization
        self.reward = reward_function(reward)
        self.valid_rouge = valid_rouge

    @classmethod
    def from_opt(cls, opt, ml_loss):
        """From a run's resolved options
        (-valid_rouge and -max_gen_length resolved: opts.resolve_train_run)."""
        return cls(ml_loss, gamma=opt.rl_gamma or 0.0, reward=opt.rl_reward,
                   max_length=opt.max_gen_length, valid_rouge=bool(opt.valid_rouge),
                   normalization=opt.rl_normalization)

    def __call__(self, model, batch):
        """-> (training loss to backpropagate, Statistics); see the module docstring."""
        parts, stats = self.parts(model, batch)
        return sum(parts.values()), stats

    def parts(self, model, batch):
        """-> ({name: scalar loss with gradient}, Statistics): the loss as the terms that add up to
        it, {"ml": (1 - gamma) L_ml, "rl": gamma L_rl} for 0 < gamma < 1 (one term, "loss",
        otherwise), so the trainer can measure the gradient each term adds to the update."""
        if self.gamma == 0.0:
            loss, stats = self.ml_loss(model, batch)
            return {"loss": loss}, stats
        # one for both terms
        enc = model.encode(batch) if self.gamma < 1.0 and dropout_free(model) else None
        if self.gamma < 1.0:
            ml, stats = self.ml_loss(model, batch, enc=enc)
        else:
            stats = Statistics(n_words=batch.n_tgt_tokens, n_examples=batch.batch_size)
        rl, rl_stats = self.rl_term(model, batch, enc)
        stats.extra.update(rl_stats)
        # per sampled token once the trainer divides by reference tokens
        if self.normalization == "tokens":
            rl = rl * (batch.n_tgt_tokens / max(rl_stats["sampled_tokens"], 1))
        if self.gamma == 1.0:
            return {"loss": rl}, stats
        return {"ml": (1.0 - self.gamma) * ml, "rl": self.gamma * rl}, stats

    def rl_term(self, model, batch, enc=None):
        """-> (sum over the batch of L_rl per example (scalar, with gradient), dict of summed
        stats). The rollouts run in evaluation mode (module docstring), from `enc` when given (the
        ML term's encoding of a dropout-free model), else from their own encoding."""
        with evaluation_mode(model):
            enc = enc if enc is not None else model.encode(batch)
            sampled, greedy = model.rollout(batch, enc, self.max_length, ("sample", "greedy"))
        with float32_region(sampled.tokens):
            log_probs = widen(sampled.log_probs)  # (B, L)
            with torch.no_grad():
                ref, ref_len = reference_tokens(batch)
                r_sample = self.reward(sampled.tokens, sampled.lengths, ref, ref_len)  # (B,)
                r_greedy = self.reward(greedy.tokens, greedy.lengths, ref, ref_len)  # (B,)
                advantage = (r_greedy - r_sample).to(log_probs.dtype)  # (B,)
            per_example = advantage * log_probs.sum(1)  # (B,)
            rl = per_example.sum()
        with torch.no_grad():   # ONE device-to-host copy for the figures
            copied = (sampled.copied.sum() if sampled.copied is not None
                      else r_sample.new_full((), -1.0))
            figures = torch.stack([sampled.mask.sum(), r_sample.sum(), r_greedy.sum(),
                                   per_example.detach().sum(), copied]).double().tolist()
        n_tokens, reward_sample, reward_greedy, rl_loss, n_copied = figures
        n_tokens = round(n_tokens)
        stats = {"rl_examples": batch.batch_size, "reward_sample": reward_sample,
                 "reward_greedy": reward_greedy, "rl_loss": rl_loss, "sampled_tokens": n_tokens}
        if n_copied >= 0:    # the model records its pointer draws (the reinforced model's rollout)
            stats.update(copied_tokens=round(n_copied), copy_recorded_tokens=n_tokens)
        return rl, stats

    @torch.no_grad()
    def validate(self, model, batch):
        """-> the Statistics of `batch` without gradient: the ML loss's, and with `valid_rouge` the
        greedy decode's ROUGE-L F1 and length summed over the examples."""
        stats = self.ml_loss.validate(model, batch)
        if self.valid_rouge:
            greedy, = model.rollout(batch, model.encode(batch), self.max_length, ("greedy",))
            ref, ref_len = reference_tokens(batch)
            stats.extra["valid_rouge_examples"] = batch.batch_size
            stats.extra["valid_rougeL"] = float(
                rouge_l(greedy.tokens, greedy.lengths, ref, ref_len).sum())
            stats.extra["valid_greedy_tokens"] = int(greedy.lengths.sum())
        return stats

    # ------------------------------------------------------------------ its figures
    def report(self, stats):
        """(figures for the training report line, lines of their own): the ML loss's, then
        `reward sample: ..; reward greedy: ..; ml loss: ..; rl loss: ..; copies: ..%` (per example;
        ml loss per token, n/a without the ML term; copies: % of the sampled tokens) when the RL
        term ran."""
        figures, lines = self.ml_loss.report(stats)
        e, n = stats.extra, stats.extra.get("rl_examples", 0)
        if n:
            ml = f"{stats.xent():.4f}" if stats.has_token_loss() else "n/a"
            figures = figures + [f"reward sample: {e['reward_sample'] / n:.4f}; "
                                 f"reward greedy: {e['reward_greedy'] / n:.4f}; ml loss: {ml}; "
                                 f"rl loss: {e['rl_loss'] / n:.4f}"
                                 + (f"; copies: {_copies(e):.1f}%" if "copy_recorded_tokens" in e
                                    else "")]
        return figures, lines

    def scalars(self, stats):
        """name -> value for TensorBoard: the ML loss's; reward_sample, reward_greedy, rl_loss (per
        example) and copies (% of sampled tokens) with the RL term; rougeL (greedy ROUGE-L F1, %)
        and greedy_length at validation with valid_rouge."""
        out, e = self.ml_loss.scalars(stats), stats.extra
        n = e.get("rl_examples", 0)
        if n:
            out.update(reward_sample=e["reward_sample"] / n, reward_greedy=e["reward_greedy"] / n,
                       rl_loss=e["rl_loss"] / n)
            if "copy_recorded_tokens" in e:
                out.update(copies=_copies(e))
        n = e.get("valid_rouge_examples", 0)
        if n:
            out.update(rougeL=100.0 * e["valid_rougeL"] / n,
                       greedy_length=e.get("valid_greedy_tokens", 0) / n)
        return out

    def valid_report(self, stats):
        """The validation lines of the loss's own figures: the ML loss's, then the greedy ROUGE-L
        line."""
        lines, e = self.ml_loss.valid_report(stats), stats.extra
        n = e.get("valid_rouge_examples", 0)
        if n:
            lines = lines + [f"Validation ROUGE-L F1 (greedy): {100.0 * e['valid_rougeL'] / n:.2f}"
                             f"; mean length {e.get('valid_greedy_tokens', 0) / n:.1f}"]
        return lines


def _copies(sums):
    """% of the sampled tokens that the pointer copied (of the rollouts that record it)."""
    return 100.0 * sums.get("copied_tokens", 0) / max(sums.get("copy_recorded_tokens", 0), 1)
