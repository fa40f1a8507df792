"""Maximum-likelihood loss with See et al.'s coverage penalty.

Normalization: MLLoss returns the SUM over target tokens (and the coverage sum); the token count is
in stats.n_words and the trainer divides by it (or by whatever it chooses).

    L = sum_{b,t} -log p(y*_bt)  +  lambda_coverage * sum_{b,t} sum_i min(a_bti, cov_bti)

over real target steps (gold not PAD) and real source positions (padding has a = cov = 0).
The gold is batch.tgt_ex[:, 1:] with ids >= X replaced by <unk>: copy models (X = V_tgt + n_oov)
learn the extended ids of copyable OOVs, plain models (X = V_tgt) learn <unk> for them.
"""
import torch

from onmt.inputters.vocab import PAD, UNK
from onmt.utils.statistics import Statistics


def gold_targets(batch, extended_size):
    """(B, T-1) gold ids for teacher forcing, and the (B, T-1) mask of real tokens."""
    tgt = batch.tgt_ex if batch.tgt_ex is not None else batch.tgt
    gold = tgt[:, 1:]
    gold = gold.masked_fill(gold >= extended_size, UNK)  # (B, T-1)
    return gold, batch.tgt[:, 1:] != PAD


def token_log_likelihood(logp, gold, mask):
    """logp (B, T, X), gold (B, T), mask (B, T) -> (B, T) log p(gold), 0 at padding."""
    ll = logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return ll.masked_fill(~mask, 0.0)


def coverage_penalty(attns, mask):
    """(B,) sum over real steps of sum_i min(a_ti, cov_ti); zeros when the model has no coverage."""
    attn, cov = attns.get("std"), attns.get("coverage")
    if attn is None or cov is None:
        return None
    per_step = torch.minimum(attn, cov).sum(-1)  # (B, T)
    return per_step.masked_fill(~mask, 0.0).sum(-1)  # (B,)


def gold_log_likelihood(model, batch):
    """(B,) sum over target tokens of log p(gold) under teacher forcing (the translator's gold score)."""
    logp, _ = model(batch)
    gold, mask = gold_targets(batch, logp.size(-1))
    return token_log_likelihood(logp, gold, mask).sum(-1)


class MLLoss:
    """Teacher-forced negative log-likelihood (summed), plus lambda_coverage * coverage loss."""

    def __init__(self, lambda_coverage=0.0):
        self.lambda_coverage = lambda_coverage

    @classmethod
    def from_opt(cls, opt):
        return cls(lambda_coverage=opt.lambda_coverage if opt.coverage_attn else 0.0)

    def __call__(self, model, batch):
        """-> (scalar loss to backpropagate, Statistics of this batch)."""
        logp, attns = model(batch)  # (B, T-1, X)
        gold, mask = gold_targets(batch, logp.size(-1))
        nll = -token_log_likelihood(logp, gold, mask).sum()
        loss = nll
        cov_sum = 0.0
        cov = coverage_penalty(attns, mask)
        if cov is not None:
            cov_total = cov.sum()
            cov_sum = cov_total.detach().item()
            if self.lambda_coverage:
                loss = loss + self.lambda_coverage * cov_total
        with torch.no_grad():
            correct = ((logp.argmax(-1) == gold) & mask).sum()
        stats = Statistics(loss=nll.detach().item(), n_words=int(mask.sum()), n_correct=int(correct),
                           coverage_loss=cov_sum, n_examples=batch.batch_size)
        if "sampled" in attns:  # scheduled sampling: inputs that were the model's own predictions
            stats.extra["sampled_inputs"] = int((attns["sampled"] & mask).sum())
        return loss, stats

    score = staticmethod(gold_log_likelihood)
