"""MLLoss: NLL sum and coverage loss against naive loops; Statistics."""
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
    assert math.isclose(stats.coverage_loss, cov, rel_tol=1e-5, abs_tol=1e-6)
    assert stats.n_words == n == batch.n_tgt_tokens and stats.n_correct == correct
    return model, batch, stats


def test_copy_coverage_loss_matches_naive():
    _, _, stats = _check(make_opt(copy_attn=True, coverage_attn=True, lambda_coverage=0.5,
                                  global_attention="mlp"), seed=1)
    assert stats.coverage_loss > 0


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
    assert torch.equal(MLLoss.score(model, batch), scores)


def test_statistics():
    a = Statistics(loss=6.0, n_words=3, n_correct=1, coverage_loss=0.3, n_examples=1, extra={"r": 1.0})
    b = Statistics(loss=2.0, n_words=1, n_correct=1, n_examples=2, extra={"r": 0.5, "s": 2.0})
    a.update(b)
    assert (a.loss, a.n_words, a.n_correct, a.n_examples) == (8.0, 4, 2, 3)
    assert a.extra == {"r": 1.5, "s": 2.0}
    assert math.isclose(a.xent(), 2.0) and math.isclose(a.ppl(), math.exp(2.0))
    assert a.accuracy() == 50.0
    assert math.isfinite(Statistics(loss=1e6, n_words=1).ppl())
    assert Statistics().ppl() == 1.0


def test_p_copy_is_summed_over_real_target_tokens_only():
    opt = make_opt(copy_attn=True)
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=3, S=5, T=6, seed=5)
    p_copy = torch.rand(batch.tgt.size(0), batch.tgt.size(1) - 1, generator=torch.Generator().manual_seed(0))

    class WithPCopy(torch.nn.Module):  # the model, its attns carrying a known p(copy)
        tgt_vocab_size, copy = model.tgt_vocab_size, model.copy

        def gold_log_likelihood(self, b):
            ll, pred, attns = model.gold_log_likelihood(b)
            return ll, pred, dict(attns, p_copy=p_copy)

    _, stats = MLLoss.from_opt(opt)(WithPCopy(), batch)
    want = sum(float(p_copy[b, t]) for b in range(3) for t in range(p_copy.size(1))
               if int(batch.tgt[b, t + 1]) != PAD)
    assert math.isclose(stats.extra["p_copy"], want, rel_tol=1e-6)
    assert math.isclose(stats.mean_p_copy(), want / stats.n_words, rel_tol=1e-6)
    assert stats.scalars()["p_copy"] == stats.mean_p_copy()
    assert Statistics(loss=1.0, n_words=2).mean_p_copy() is None


def test_statistics_scalars_hold_what_the_window_has():
    ml = Statistics(loss=4.0, n_words=2, n_correct=1)
    assert ml.scalars() == {"xent": 2.0, "ppl": math.exp(2.0), "accuracy": 50.0}
    rl_only = Statistics(n_words=5, extra={"rl_examples": 2, "reward_sample": 0.6, "reward_greedy": 0.8,
                                           "rl_loss": -1.0, "sampled_tokens": 8, "copied_tokens": 2})
    assert rl_only.scalars() == {"reward_sample": 0.3, "reward_greedy": 0.4, "rl_loss": -0.5, "copies": 25.0}
    valid = Statistics(loss=1.0, n_words=4, n_correct=4, coverage_loss=2.0,
                       extra={"p_copy": 1.0, "sampled_inputs": 1, "valid_rouge_examples": 2,
                              "valid_rougeL": 0.5, "valid_greedy_tokens": 7})
    s = valid.scalars()
    assert s["coverage"] == 0.5 and s["p_copy"] == 0.25 and s["sampled_inputs"] == 25.0
    assert s["rougeL"] == 25.0 and s["greedy_length"] == 3.5 and s["accuracy"] == 100.0
