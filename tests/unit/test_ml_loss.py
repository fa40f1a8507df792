"""MLLoss: NLL sum and coverage loss against naive loops; its figures (sums, report line, TensorBoard)."""
import math

import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.constants import PAD, UNK
from onmt.losses.ml import MLLoss, gold_log_likelihood
from onmt.utils.statistics import Statistics


def _naive(model, batch, lam):
    logp, attns = model(batch)
    X = logp.size(-1)
    nll = cov = 0.0
    n = correct = 0
    B, T1 = batch.tgt.size(0), batch.tgt.size(1) - 1
    for b in range(B):
        for t in range(T1):
            if int(batch.tgt[b, t + 1]) == PAD:
                continue
            g = int(batch.tgt_ex[b, t + 1])
            g = UNK if g >= X else g
            nll -= float(logp[b, t, g])
            n += 1
            correct += int(int(logp[b, t].argmax()) == g)
            if "coverage" in attns:
                for i in range(int(batch.src_lengths[b])):
                    cov += min(float(attns["std"][b, t, i]), float(attns["coverage"][b, t, i]))
    return nll + lam * cov, nll, cov, n, correct


def attns_of(model, batch):
    with torch.no_grad():
        return model(batch)[1]


def _check(opt, seed):
    vocabs = make_vocabs()
    model = build(opt, vocabs, seed)
    batch = make_batch(vocabs, B=4, S=7, T=6, seed=seed)
    loss_fn = MLLoss.from_opt(opt)
    with torch.no_grad():
        loss, stats = loss_fn(model, batch)
        total, nll, cov, n, correct = _naive(model, batch, loss_fn.lambda_coverage)
    assert math.isclose(float(loss), total, rel_tol=1e-5)
    assert math.isclose(stats.loss, nll, rel_tol=1e-5)
    assert math.isclose(stats.extra.get("coverage_loss", 0.0), cov, rel_tol=1e-5, abs_tol=1e-6)
    assert ("coverage_loss" in stats.extra) == ("coverage" in attns_of(model, batch))
    assert stats.n_words == n == batch.n_tgt_tokens and stats.n_correct == correct
    return model, batch, stats


def test_copy_coverage_loss_matches_naive():
    _, _, stats = _check(make_opt(copy_attn=True, coverage_attn=True, lambda_coverage=0.5,
                                  global_attention="mlp"), seed=1)
    assert stats.extra["coverage_loss"] > 0


def test_plain_model_gold_uses_unk_for_extended_ids():
    _check(make_opt(global_attention="general"), seed=2)


def test_coverage_without_copy():
    _check(make_opt(global_attention="dot", coverage_attn=True), seed=3)


def test_loss_backward_and_gold_score():
    opt = make_opt(copy_attn=True, coverage_attn=True)
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=3, S=5, T=5, seed=4)
    loss, stats = MLLoss.from_opt(opt)(model, batch)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    with torch.no_grad():
        scores = gold_log_likelihood(model, batch)
    assert scores.shape == (3,)
    assert math.isclose(-float(scores.sum()), stats.loss, rel_tol=1e-5)


def test_p_copy_is_summed_over_real_target_tokens_only():
    opt = make_opt(copy_attn=True)
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=3, S=5, T=6, seed=5)
    p_copy = torch.rand(batch.tgt.size(0), batch.tgt.size(1) - 1, generator=torch.Generator().manual_seed(0))

    class WithPCopy(torch.nn.Module):  # the model, its attns carrying a known p(copy)
        tgt_vocab_size, copy = model.tgt_vocab_size, model.copy

        def gold_log_likelihood(self, b, enc=None):
            ll, pred, attns = model.gold_log_likelihood(b, enc)
            return ll, pred, dict(attns, p_copy=p_copy)

    _, stats = MLLoss.from_opt(opt)(WithPCopy(), batch)
    want = sum(float(p_copy[b, t]) for b in range(3) for t in range(p_copy.size(1))
               if int(batch.tgt[b, t + 1]) != PAD)
    assert math.isclose(stats.extra["p_copy"], want, rel_tol=1e-6)
    assert math.isclose(MLLoss.scalars(stats)["p_copy"], want / stats.n_words, rel_tol=1e-6)
    assert MLLoss.report(stats) == ([f"p(copy) {want / stats.n_words:.2f}"], [])
    assert MLLoss.report(Statistics(loss=1.0, n_words=2)) == ([], [])


def test_figures_are_aggregated_over_a_window_and_named_by_the_loss():
    """The loss's sums add up over the batches of a window (Statistics.update), and the loss turns the
    window's sums into its report line, its lines of their own and its TensorBoard scalars."""
    opt, vocabs = make_opt(reinforced=True, rnn_size=12, word_vec_size=6, scheduled_sampling=0.5), make_vocabs()
    model, loss_fn = build(opt, vocabs), MLLoss.from_opt(opt)
    model.train()
    torch.manual_seed(0)
    parts = [loss_fn(model, make_batch(vocabs, B=3, S=7, T=6, seed=s))[1] for s in (1, 2)]
    window = Statistics()
    for s in parts:
        window.update(s)
    e = window.extra
    assert set(e) == {"sampled_inputs", "p_copy"}
    assert e["sampled_inputs"] == sum(s.extra["sampled_inputs"] for s in parts) > 0
    assert e["p_copy"] == sum(s.extra["p_copy"] for s in parts)
    share = 100.0 * e["sampled_inputs"] / window.n_words
    assert MLLoss.report(window) == ([f"p(copy) {e['p_copy'] / window.n_words:.2f}"],
                                     [f"{share:.1f}% of decoder inputs were the model's own predictions "
                                      "(scheduled sampling)"])
    assert MLLoss.scalars(window) == {"p_copy": e["p_copy"] / window.n_words, "sampled_inputs": share}
    assert MLLoss.valid_report(window) == []


def test_scalars_hold_what_the_window_has():
    assert MLLoss.scalars(Statistics(loss=4.0, n_words=2, n_correct=1)) == {}
    s = MLLoss.scalars(Statistics(loss=1.0, n_words=4, n_correct=4,
                                  extra={"coverage_loss": 2.0, "p_copy": 1.0, "sampled_inputs": 1}))
    assert s == {"coverage": 0.5, "p_copy": 0.25, "sampled_inputs": 25.0}
    assert "coverage" not in MLLoss.scalars(Statistics(n_words=4, extra={"coverage_loss": 0.0}))
