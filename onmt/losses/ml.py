"""Maximum-likelihood loss with See et al.'s coverage penalty.

Normalization: MLLoss returns the SUM over target tokens (and the coverage sum); the token count is
in stats.n_words and the trainer divides by it (or by whatever it chooses).

    L = sum_{b,t} -log p(y*_bt)  +  lambda_coverage * sum_{b,t} sum_i min(a_bti, cov_bti)
                                                                 See et al. eqs. 6, 12-13

over real target steps (gold not PAD) and real source positions (padding has a = cov = 0).
The gold is batch.tgt_ex[:, 1:] with ids >= X replaced by <unk> (`gold_targets`): copy models
(X = V_tgt + n_oov) learn the extended ids of copyable OOVs, plain models (X = V_tgt) learn <unk>.
The loss asks the model for log p(gold) only (`model.gold_log_likelihood`, onmt/interface.py),
so a model may skip the (B, T-1, X) distribution.
Besides the loss, the statistics sum the coverage loss and what the model's attns carry: the decoder
inputs scheduled sampling replaced ("sampled") and the pointer probability p(copy) over the target
tokens ("p_copy"). The loss owns these figures (Statistics.extra: "coverage_loss", "sampled_inputs",
"p_copy"): `report`, `scalars` and `valid_report` name them for the trainer's lines and TensorBoard.
Under autocast (-amp) the loss is a float32 island (onmt/modules/precision.py): the generators give
float32 log p(gold), and the attention and coverage are widened before the coverage sum.
"""
import torch

from onmt.interface import extended_size, gold_targets
from onmt.modules.precision import float32_region, widen
from onmt.utils.statistics import Statistics

__all__ = ["MLLoss", "gold_targets", "gold_log_likelihood", "token_log_likelihood",
           "coverage_penalty"]


def token_log_likelihood(logp, gold, mask):
    """logp (B, T, X), gold (B, T), mask (B, T) -> (B, T) log p(gold), 0 at padding."""
    ll = logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return ll.masked_fill(~mask, 0.0)


def coverage_penalty(attns, mask):
    """(B,) sum over real steps of sum_i min(a_ti, cov_ti); zeros when the model has no coverage."""
    attn, cov = attns.get("std"), attns.get("coverage")
    if attn is None or cov is None:
        return None
    with float32_region(attn):
        # (B, T) See et al. eq. 12: covloss_t
        per_step = torch.minimum(widen(attn), widen(cov)).sum(-1)
        return per_step.masked_fill(~mask, 0.0).sum(-1)  # (B,)


def gold_log_likelihood(model, batch):
    """(B,) sum over target tokens of log p(gold) under teacher forcing
    (the translator's gold score)."""
    return model.gold_log_likelihood(batch)[0].sum(-1)


class MLLoss:
    """Teacher-forced negative log-likelihood (summed), plus lambda_coverage * coverage loss."""

    def __init__(self, lambda_coverage=0.0, by_seqlength=False):
        self.lambda_coverage = lambda_coverage
        # -copy_loss_by_seqlength (OpenNMT-py's): the loss is
        # sum_b (nll_b + lambda_coverage * cov_b) / n_b, n_b the target tokens of example b (those
        # counted in n_words; OpenNMT-py counts <s> too).
        # The statistics keep the plain sums.
        self.by_seqlength = by_seqlength
        # the teacher-forced pass and loss as run: `terms`, or its capture (capture_with)
        self.region = None

    @classmethod
    def from_opt(cls, opt):
        return cls(lambda_coverage=opt.lambda_coverage if opt.coverage_attn else 0.0,
                   by_seqlength=opt.copy_loss_by_seqlength)

    def __call__(self, model, batch, enc=None):
        """-> (scalar loss to backpropagate, Statistics of this batch); `enc`: the batch's encoding
        when the caller has it (interface.py gold_log_likelihood)."""
        if self.region is None:
            loss, figures = self.terms(model, batch, enc)
        else:  # captured: the encoder (its packing reads host lengths) outside the region
            loss, figures = self.region(model, batch, model.encode(batch) if enc is None else enc)
        return loss, _statistics(*figures, batch.batch_size)

    def capture_with(self, wrap):
        """Run `terms` as wrap(terms) from now on (train.py -cuda_graphs:
        onmt/execution.py `captured`)."""
        self.region = wrap(self.terms)

    def terms(self, model, batch, enc=None):
        """-> (scalar loss, the tensors its Statistics are made of): the teacher-forced pass and the
        loss without a host synchronization in the rnn and reinforced families, and in See et al.'s
        built to be captured (what a CUDA graph can capture, issue 56;
        tests/unit/test_length_buckets.py); the statistics' one copy to the host comes after, in
        __call__."""
        ll, pred, attns = model.gold_log_likelihood(batch, enc=enc)  # (B, T-1) x2
        gold, mask = gold_targets(batch, extended_size(model, batch))
        with float32_region(ll):
            nll = -widen(ll).sum()
            loss = nll
            cov = coverage_penalty(attns, mask)
            cov_total = cov.sum() if cov is not None else None
            if cov is not None and self.lambda_coverage:
                loss = loss + self.lambda_coverage * cov_total
            if self.by_seqlength:
                per_example = -widen(ll).sum(-1)  # (B,)
                if cov is not None and self.lambda_coverage:
                    per_example = per_example + self.lambda_coverage * cov
                loss = (per_example / mask.sum(-1).clamp_min(1)).sum()
        return loss, (nll, cov_total, pred, gold, mask, attns)

    def parts(self, model, batch):
        """-> ({"loss": the loss}, Statistics): the loss as one term (onmt/interface.py Loss)."""
        loss, stats = self(model, batch)
        return {"loss": loss}, stats

    @torch.no_grad()
    def validate(self, model, batch):
        """-> the Statistics of `batch` without gradient (the trainer's validation)."""
        return self(model, batch)[1]

    # ------------------------------------------------------------------ its figures
    @staticmethod
    def report(stats):
        """(figures for the training report line, lines of their own) from this loss's sums in
        `stats`: `p(copy) 0.31` with a pointer; the share of decoder inputs scheduled sampling
        replaced."""
        e = stats.extra
        figures = [f"p(copy) {e['p_copy'] / max(stats.n_words, 1):.2f}"] if "p_copy" in e else []
        lines = []
        if "sampled_inputs" in e:   # a model trained with scheduled sampling (the reinforced one)
            share = 100.0 * e["sampled_inputs"] / max(stats.n_words, 1)
            lines.append(f"{share:.1f}% of decoder inputs were the model's own predictions "
                         "(scheduled sampling)")
        return figures, lines

    @staticmethod
    def scalars(stats):
        """name -> value for TensorBoard, where the model has them: coverage (mean coverage loss per
        target token), p_copy (mean p(copy)), sampled_inputs (% of decoder inputs from scheduled
        sampling)."""
        e, n, out = stats.extra, max(stats.n_words, 1), {}
        if e.get("coverage_loss"):
            out["coverage"] = e["coverage_loss"] / n
        if "p_copy" in e:
            out["p_copy"] = e["p_copy"] / n
        if "sampled_inputs" in e:
            out["sampled_inputs"] = 100.0 * e["sampled_inputs"] / n
        return out

    @staticmethod
    def valid_report(stats):
        """The validation lines of this loss's own figures (after the trainer's perplexity, accuracy
        and xent): none."""
        return []


@torch.no_grad()
def _statistics(nll, cov_total, pred, gold, mask, attns, n_examples):
    """The step's Statistics from ONE device-to-host copy (a .tolist() of the stacked figures): the
    NLL, target tokens, correct argmaxes, coverage loss, the scheduled-sampling and p_copy sums."""
    zero = nll.new_zeros(())
    figures = [nll.detach().float(), mask.sum().float(), ((pred == gold) & mask).sum().float(),
               cov_total.detach().float() if cov_total is not None else zero]
    # (B, T-1) each, when the model gives them
    sampled, p_copy = attns.get("sampled"), attns.get("p_copy")
    figures.append((sampled & mask).sum().float() if sampled is not None else zero)
    figures.append(p_copy.detach().float().masked_fill(~mask, 0.0).sum() if p_copy is not None
                   else zero)
    nll_v, n_words, correct, cov_v, n_sampled, copy_v = torch.stack(figures).tolist()
    stats = Statistics(loss=nll_v, n_words=round(n_words), n_correct=round(correct),
                       n_examples=n_examples)
    # the coverage loss sum_t sum_i min(a_ti, cov_ti) (unweighted); coverage models only
    if cov_total is not None:
        stats.extra["coverage_loss"] = cov_v
    if sampled is not None:  # scheduled sampling: inputs that were the model's own predictions
        stats.extra["sampled_inputs"] = round(n_sampled)
    if p_copy is not None:  # pointer probability 1 - p_gen; copy models only
        stats.extra["p_copy"] = copy_v
    return stats
