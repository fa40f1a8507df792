"""A whole model with kernels="plain" against the same model with kernels="fused" (onmt/execution.py).

Each family is built twice with the same parameters: once with the plain reference formulas only, once
with the fused kernels (the default). On the same batch and the same seeds, a whole ML training step
and a whole mixed (ML + self-critical RL) step give the same losses and the same gradient of every
parameter, and a whole beam search and a greedy search (float32 decoding precision set, as translate.py
sets it) give the same tokens with the same scores and attention.

Float32 throughout; the tolerances are float32 rounding through a few recurrent steps: losses rtol 1e-5
(atol 1e-5); gradients rtol 1e-4, atol 1e-5 (the largest gradient of these models is ~5-10); beam scores
and log-probabilities rel 1e-6 (abs 1e-5; scores are ~-15); attention rtol 1e-5, atol 1e-6. Measured:
at most 4e-6 apart on the scores, 2e-7 on the attention, 4e-4 relative on a gradient element above 1e-3.
Dropout is 0: the two settings draw their masks differently (torch.rand in onmt/fused/dropout.py against
nn.Dropout's bernoulli_), with the same distribution.

A last test checks that the plain model really runs no fused kernel: only the deciding functions of
onmt/fused (kernels.py and the two that say whether the prepared products apply) are called.
"""
import os
import sys

import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from helpers.search import search
from onmt.execution import Execution
from onmt.losses import build_loss
from onmt.losses.ml import MLLoss
from onmt.model_builder import build_model

FAMILIES = {
    "rnn_general": dict(global_attention="general"),
    "rnn_mlp": dict(global_attention="mlp"),                        # the fused decoder pass
    "copy_coverage_mlp": dict(copy_attn=True, coverage_attn=True, global_attention="mlp", lambda_coverage=1.0),
    "reinforced": dict(reinforced=True, scheduled_sampling=0.25),   # the paper's scheduled sampling
}
SIZES = dict(brnn=True, rnn_size=16, word_vec_size=8, param_init=1.0, dropout=0.0)
GRAD_TOL = dict(rtol=1e-4, atol=1e-5)
VALUE_TOL = dict(rtol=1e-5, atol=1e-5)
ATTN_TOL = dict(rtol=1e-5, atol=1e-6)


def _pair(family, precision=None, **more):
    """(options, plain model, fused model) with the same parameters, built to decode in `precision`."""
    opt = make_opt(**SIZES, **FAMILIES[family], **more)
    torch.manual_seed(0)
    fused = build_model(opt, make_vocabs(), execution=Execution("fused", precision))
    plain = build_model(opt, make_vocabs(), execution=Execution("plain", precision))
    plain.load_state_dict(fused.state_dict())
    assert (plain.kernels, fused.kernels) == ("plain", "fused")
    return opt, plain, fused


def _batch():
    return make_batch(make_vocabs(), B=5, S=8, T=7, seed=3)


def _train_step(model, loss_fn, batch, seed):
    """One training step's loss terms, statistics and the gradient of every parameter."""
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    if hasattr(loss_fn, "parts"):   # MixedLoss: the ML and RL terms
        parts, stats = loss_fn.parts(model, batch)
    else:
        loss, stats = loss_fn(model, batch)
        parts = {"loss": loss}
    sum(parts.values()).backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return {k: v.detach() for k, v in parts.items()}, stats, grads


def _assert_same_step(plain, fused):
    (p_parts, p_stats, p_grads), (f_parts, f_stats, f_grads) = plain, fused
    assert p_parts.keys() == f_parts.keys()
    for k in p_parts:
        torch.testing.assert_close(f_parts[k], p_parts[k], **VALUE_TOL, msg=f"loss term {k}")
    assert f_stats.n_words == p_stats.n_words and f_stats.n_correct == p_stats.n_correct
    assert p_grads.keys() == f_grads.keys()
    for name in p_grads:
        assert (p_grads[name] is None) == (f_grads[name] is None), name
        if p_grads[name] is not None:
            torch.testing.assert_close(f_grads[name], p_grads[name], **GRAD_TOL, msg=f"gradient of {name}")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_ml_training_step_is_the_same_plain_and_fused(family):
    opt, plain, fused = _pair(family)
    batch = _batch()
    loss_fn = MLLoss.from_opt(opt)
    got_plain, got_fused = _train_step(plain, loss_fn, batch, seed=7), _train_step(fused, loss_fn, batch, seed=7)
    _assert_same_step(got_plain, got_fused)
    if family == "reinforced":   # scheduled sampling fed back some of the model's own predictions
        assert got_fused[1].extra["sampled_inputs"] > 0
        assert got_plain[1].extra["sampled_inputs"] == got_fused[1].extra["sampled_inputs"]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_mixed_training_step_is_the_same_plain_and_fused(family):
    opt, plain, fused = _pair(family, rl_gamma=0.5, max_gen_length=6)
    batch = _batch()
    loss_fn = build_loss(opt)
    got_plain, got_fused = _train_step(plain, loss_fn, batch, seed=2), _train_step(fused, loss_fn, batch, seed=2)
    assert set(got_fused[0]) == {"ml", "rl"} and got_fused[0]["rl"] != 0   # the RL term has a gradient
    for key in ("sampled_tokens", "reward_sample", "reward_greedy", "copied_tokens"):   # the same rollouts
        assert got_plain[1].extra.get(key) == got_fused[1].extra.get(key), key   # copies: the reinforced model's
    _assert_same_step(got_plain, got_fused)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_beam_and_greedy_search_are_the_same_plain_and_fused(family):
    _, plain, fused = _pair(family, precision="fp32")   # as translate.py and the API decode: prepared LSTM gates
    batch = _batch()
    coverage = dict(coverage_penalty="wu", beta=0.3)
    results = {}
    for name, model in (("plain", plain), ("fused", fused)):
        model.eval()
        with torch.no_grad():
            results[name] = (search(model, batch, beam_size=4, n_best=2, max_length=8, block_ngram_repeat=2,
                                    keep_inspection=True, **coverage)
                             + search(model, batch, beam_size=1, max_length=8, keep_attn=True))
    for p_hyps, f_hyps in zip(results["plain"], results["fused"]):
        assert [h.tokens for h in p_hyps] == [h.tokens for h in f_hyps]
        for p, f in zip(p_hyps, f_hyps):
            assert f.score == pytest.approx(p.score, rel=1e-6, abs=1e-5)
            assert f.log_prob == pytest.approx(p.log_prob, rel=1e-6, abs=1e-5)
            torch.testing.assert_close(f.attn, p.attn, **ATTN_TOL)


def test_a_plain_model_runs_no_fused_kernel():
    """A training step (mixed, dropout on) and a beam search with kernels="plain" call no function of
    onmt/fused at all (the plain classes know none); the fused subclasses call their kernels."""
    import onmt.fused
    folder = os.path.dirname(onmt.fused.__file__)
    for kernels in ("plain", "fused"):
        called = set()

        def profile(frame, event, arg):
            if event == "call" and frame.f_code.co_filename.startswith(folder):
                called.add(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}")
        for family in FAMILIES:
            opt = make_opt(**{**SIZES, "dropout": 0.2}, **FAMILIES[family], rl_gamma=0.5, max_gen_length=4)
            model = build_model(opt, make_vocabs(), execution=kernels)
            sys.setprofile(profile)
            try:
                _train_step(model, build_loss(opt), _batch(), seed=1)
                model.eval()
                with torch.no_grad():
                    search(model, _batch(), beam_size=3, max_length=4)
            finally:
                sys.setprofile(None)
        if kernels == "plain":
            assert not called, sorted(called)
        else:
            assert {"decoder_pass.py:lstm_mlp_decoder_pass", "gold_mixture.py:gold_mixture",
                    "gold_mixture.py:predict_from_logits", "mixture_scores.py:beam_topk",
                    "dropout.py:forward", "step_source.py:scores"} <= called
