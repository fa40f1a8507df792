"""The interface's generic implementations for models without a fused path (the baselines, test
models): the gold log-likelihood from the full distribution, rollouts through decode_step; and
`ModelDefaults`, the defaults of interface.Model's optional members, which every registered model
inherits."""
import torch

from onmt.constants import BOS, EOS
from onmt.execution import PLAIN, gradients_wanted
from onmt.interface import check_rollout_modes, finish_rollout, gold_targets
from onmt.modules.sampling import sample_rows
from onmt.modules.step_scores import DenseScores


class ModelDefaults:
    """interface.Model's optional members with their defaults (a model class lists it before
    nn.Module and overrides what it does better), so that callers call them instead of asking
    `hasattr`."""

    execution = PLAIN   # what runs (onmt/execution.py); a registered model keeps the builder's

    @property
    def kernels(self):
        """"plain" or "fused": its execution's."""
        return self.execution.kernels

    def decode_step_scores(self, inputs, state):
        """decode_step with its log p (float32) as a DenseScores (onmt/modules/step_scores.py)."""
        logp, state, attns = self.decode_step(inputs, state)
        return DenseScores(logp.float()), state, attns

    @classmethod
    def upgrade_state_dict(cls, state):
        """A checkpoint's model state with the keys of older versions renamed to today's: none to
        rename."""
        return state

    def execution_notes(self):
        """The fused paths of `execution` that do not apply to this model, each with why: none."""
        return []

    def begin_training_step(self, step):
        """Called by the trainer before each training step (1-based), for a model whose training
        changes with the step (the reinforced model's scheduled-sampling schedule): nothing
        changes."""

    def embeddings(self, side):
        """The word embeddings of `side` ("encoder" or "decoder"): its `.embeddings` module, or
        None."""
        return getattr(getattr(self, side, None), "embeddings", None)


def gold_from_forward(model, batch, enc=None):
    """gold_log_likelihood computed from the full distribution of `model(batch)`
    (`model(batch, enc=enc)` given an encoding): log p(gold) (B, T-1) with 0 at padding, argmax
    ids (B, T-1), attns. For models without a fused path."""
    logp, attns = model(batch) if enc is None else model(batch, enc=enc)  # (B, T-1, X)
    gold, mask = gold_targets(batch, logp.size(-1))
    ll = logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1).masked_fill(~mask, 0.0)  # (B, T-1)
    return ll, logp.detach().argmax(-1), attns


def rollout_from_steps(model, batch, enc, max_length, modes=("sample",)):
    """`model.rollout` through the interface's decode_step, one mode after the other: one (B, X)
    distribution per step (with gradient when sampling under autograd). `copied` is None: the step
    distribution does not say which tokens the pointer produced (an OOV id is a copy, an
    in-vocabulary word may be either), so nothing is recorded rather than a share that reads as the
    pointer's."""
    check_rollout_modes(modes, max_length)
    out = []
    for mode in modes:
        with torch.set_grad_enabled(gradients_wanted() and mode == "sample"):
            out.append(_rollout_one(model, batch, enc, max_length, mode == "sample"))
    return tuple(out)


def _rollout_one(model, batch, enc, max_length, sample):
    state = model.init_state(batch, enc)
    B = batch.batch_size
    inputs = torch.full((B,), BOS, dtype=torch.long, device=batch.src.device)  # (B,)
    done = torch.zeros(B, dtype=torch.bool, device=inputs.device)  # (B,)
    tokens, log_probs = [], []
    for _ in range(max_length):
        logp, state, _ = model.decode_step(inputs, state)  # (B, X)
        with torch.no_grad():
            chosen = sample_rows(logp.detach().exp()) if sample else logp.argmax(1)  # (B,)
        tokens.append(chosen)
        if sample:
            log_probs.append(logp.gather(1, chosen.unsqueeze(1)).squeeze(1))  # (B,)
        done = done | (chosen == EOS)
        if bool(done.all()):
            break
        inputs = chosen
    tokens = torch.stack(tokens, dim=1)  # (B, L)
    return finish_rollout(tokens, torch.stack(log_probs, dim=1) if sample else None, None)
