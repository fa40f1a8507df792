"""The self-critical mixed objective (onmt/losses/rl.py) and the rollouts it runs."""
import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.constants import BOS, EOS, PAD, UNK
from onmt.interface import finish_rollout
from onmt.losses.ml import MLLoss
from onmt.losses.rewards import rouge_l
from onmt.losses.rl import MixedLoss, evaluation_mode, reference_tokens
from onmt.models.generic import rollout_from_steps
from onmt.utils.statistics import Statistics

VOCABS = make_vocabs(src_vocab_size=30, tgt_vocab_size=14)


def _model(seed=0, **overrides):
    opt = make_opt(**({"reinforced": True, "rnn_size": 12, "word_vec_size": 6} | overrides))
    model = build(opt, VOCABS, seed=seed).double()
    model.train()
    return model


def _steps_log_prob(model, batch, enc, tokens, mask):
    """Reference: log p of `tokens` (B, L) fed back one step at a time through decode_step."""
    state = model.init_state(batch, enc)
    inputs = torch.full((batch.batch_size,), BOS)
    out = []
    for t in range(tokens.size(1)):
        logp, state, _ = model.decode_step(inputs, state)  # (B, X)
        tok = tokens[:, t].clamp(min=0)
        out.append(logp.gather(1, tok.unsqueeze(1)).squeeze(1))
        inputs = tok
    return torch.stack(out, 1).masked_fill(~mask, 0.0)  # (B, L)


def test_finish_rollout_masks_after_the_first_eos():
    tokens = torch.tensor([[5, EOS, 7, EOS], [5, 6, 7, 8], [EOS, 4, 4, 4]])
    lp = -torch.arange(1.0, 13.0).view(3, 4)
    r = finish_rollout(tokens, lp, torch.ones(3, 4, dtype=torch.bool))
    assert r.lengths.tolist() == [1, 4, 0]
    assert r.mask.tolist() == [[True, True, False, False], [True] * 4, [True, False, False, False]]
    assert r.tokens.tolist() == [[5, EOS, PAD, PAD], [5, 6, 7, 8], [EOS, PAD, PAD, PAD]]
    assert r.log_probs.tolist() == [[-1, -2, 0, 0], [-5, -6, -7, -8], [-9, 0, 0, 0]]
    assert r.copied.tolist() == [[True, False, False, False], [True] * 4, [False] * 4]  # </s> is no copy


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reinforced_rollout_equals_the_step_by_step_reference(seed):
    """The fused sampled rollout: the same log-probabilities and gradients as feeding the sampled
    tokens back through decode_step (the (B, X) distribution of every step)."""
    torch.set_default_dtype(torch.float64)
    try:
        model = _model(seed)
        batch = make_batch(VOCABS, B=4, S=9, T=7, seed=seed)
        enc = model.encode(batch)
        torch.manual_seed(seed)
        r, greedy = model.rollout(batch, enc, 8, ("sample", "greedy"))
        ref = _steps_log_prob(model, batch, enc, r.tokens, r.mask)
        assert torch.allclose(r.log_probs, ref, atol=1e-12)
        params = [p for p in model.parameters()]
        got = torch.autograd.grad(r.log_probs.sum(), params, retain_graph=True, allow_unused=True)
        want = torch.autograd.grad(ref.sum(), params, allow_unused=True)
        for g, w in zip(got, want):
            assert (g is None) == (w is None) or torch.count_nonzero(g if g is not None else w) == 0
            if g is not None and w is not None:
                assert torch.allclose(g, w, atol=1e-12)
        # greedy (in lockstep with the sample): the argmax of each step's distribution, fed back
        assert greedy.log_probs is None
        generic, = rollout_from_steps(model, batch, enc, 8, ("greedy",))
        assert torch.equal(greedy.tokens, generic.tokens) and torch.equal(greedy.lengths, generic.lengths)
        alone, = model.rollout(batch, enc, 8, ("greedy",))
        assert torch.equal(alone.tokens, greedy.tokens)
    finally:
        torch.set_default_dtype(torch.float32)


def test_sampled_tokens_follow_the_model_distribution():
    """Pointer-included sampling: the frequency of each first token matches p(y_1) (drawn 4000 times)."""
    model = _model(3)
    batch = make_batch(VOCABS, B=1, S=6, T=5, seed=3)
    big = make_batch(VOCABS, B=1, S=6, T=5, seed=3)
    rep = 4000
    for name in ("src", "src_ex", "src_lengths", "tgt", "tgt_ex", "indices"):
        t = getattr(big, name)
        setattr(big, name, t.expand(rep, *t.shape[1:]).contiguous())
    big.oovs = big.oovs * rep
    with torch.no_grad():
        enc = model.encode(batch)
        logp, _, _ = model.decode_step(torch.tensor([BOS]), model.init_state(batch, enc))
        torch.manual_seed(0)
        first = model.rollout(big, model.encode(big), 1)[0].tokens[:, 0]
    freq = torch.bincount(first, minlength=logp.size(1)).double() / rep
    assert (freq - logp[0].exp()).abs().max() < 0.03


def _fixed_rewards(sample_reward, greedy_reward):
    calls = []

    def reward(hyp, hyp_len, ref, ref_len):
        calls.append(hyp)
        value = sample_reward if len(calls) % 2 == 1 else greedy_reward  # sample first, then greedy
        return torch.full((hyp.size(0),), value)
    return reward


@pytest.mark.parametrize("sample_wins", [True, False])
def test_sign_of_the_rl_term(sample_wins):
    """One SGD step on L_rl raises log p(y^s) when y^s beats the greedy baseline, lowers it otherwise."""
    model = _model(4)
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=4)
    loss_fn = MixedLoss(MLLoss(), gamma=1.0, max_length=6)
    loss_fn.reward = _fixed_rewards(1.0, 0.0) if sample_wins else _fixed_rewards(0.0, 1.0)
    torch.manual_seed(11)
    r, _ = model.rollout(batch, model.encode(batch), 6, ("sample", "greedy"))
    before = r.log_probs.sum(1).detach()  # (B,)
    torch.manual_seed(11)  # the loss draws the same sample
    loss, stats = loss_fn(model, batch)
    assert stats.extra["reward_sample"] == (3.0 if sample_wins else 0.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        after = _steps_log_prob(model, batch, model.encode(batch), r.tokens, r.mask).sum(1)
    if sample_wins:
        assert (after > before).all()
    else:
        assert (after < before).all()


def test_gamma_zero_is_the_ml_loss_itself():
    model = _model(5)
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=5)
    torch.manual_seed(1)
    ml, ml_stats = MLLoss()(model, batch)
    torch.manual_seed(1)
    mixed, stats = MixedLoss(MLLoss(), gamma=0.0, max_length=6)(model, batch)
    assert torch.equal(ml, mixed) and stats.extra == ml_stats.extra and stats.loss == ml_stats.loss


def test_mixed_loss_weights_and_stats():
    model = _model(6)
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=6)
    loss_fn = MixedLoss(MLLoss(), gamma=0.75, max_length=6)
    torch.manual_seed(2)
    ml, _ = MLLoss()(model, batch)
    rl, rl_stats = loss_fn.rl_term(model, batch)
    torch.manual_seed(2)
    mixed, stats = loss_fn(model, batch)
    assert torch.allclose(mixed, 0.25 * ml + 0.75 * rl)
    assert stats.n_words == batch.n_tgt_tokens and stats.extra["rl_examples"] == 3
    assert 0 <= stats.extra["copied_tokens"] <= stats.extra["sampled_tokens"] <= 3 * 6
    assert set(rl_stats) <= set(stats.extra)
    figures, lines = loss_fn.report(stats)
    assert figures[-1].startswith("reward sample: ") and "copies" in figures[-1] and lines == []


def test_figures_are_aggregated_over_a_window_and_named_by_the_loss():
    """The RL sums of two batches add up (Statistics.update); the loss names the window's figures: its
    part of the report line (after the ML loss's), its TensorBoard scalars, its validation line."""
    loss_fn = MixedLoss(MLLoss(), gamma=0.5, max_length=6, valid_rouge=True)
    a = Statistics(loss=6.0, n_words=3, n_correct=1, n_examples=2,
                   extra={"p_copy": 1.5, "rl_examples": 2, "reward_sample": 0.5, "reward_greedy": 0.25,
                          "rl_loss": -1.0, "sampled_tokens": 6, "copied_tokens": 1, "copy_recorded_tokens": 6})
    b = Statistics(loss=2.0, n_words=1, n_correct=1, n_examples=2,
                   extra={"p_copy": 0.5, "rl_examples": 2, "reward_sample": 0.7, "reward_greedy": 0.35,
                          "rl_loss": 3.0, "sampled_tokens": 4, "copied_tokens": 4, "copy_recorded_tokens": 4})
    window = Statistics().update(a).update(b)
    assert window.extra == {"p_copy": 2.0, "rl_examples": 4, "reward_sample": 1.2, "reward_greedy": 0.6,
                            "rl_loss": 2.0, "sampled_tokens": 10, "copied_tokens": 5, "copy_recorded_tokens": 10}
    assert loss_fn.report(window) == (["p(copy) 0.50", "reward sample: 0.3000; reward greedy: 0.1500; "
                                       "ml loss: 2.0000; rl loss: 0.5000; copies: 50.0%"], [])
    assert loss_fn.scalars(window) == {"p_copy": 0.5, "reward_sample": 0.3, "reward_greedy": 0.15,
                                       "rl_loss": 0.5, "copies": 50.0}
    rl_only = Statistics(n_words=5, extra={k: v for k, v in window.extra.items() if k != "p_copy"})
    assert loss_fn.report(rl_only)[0] == ["reward sample: 0.3000; reward greedy: 0.1500; ml loss: n/a; "
                                          "rl loss: 0.5000; copies: 50.0%"]
    assert loss_fn.valid_report(window) == []
    # a model whose rollout does not record its pointer draws (See et al.'s): no copies figure, not 0 %
    unrecorded = Statistics(n_words=5, extra={k: v for k, v in window.extra.items()
                                              if k not in ("copied_tokens", "copy_recorded_tokens", "p_copy")})
    assert loss_fn.report(unrecorded)[0] == ["reward sample: 0.3000; reward greedy: 0.1500; ml loss: n/a; "
                                             "rl loss: 0.5000"]
    assert "copies" not in loss_fn.scalars(unrecorded)
    valid = Statistics(loss=1.0, n_words=4, n_correct=4,
                       extra={"valid_rouge_examples": 2, "valid_rougeL": 0.5, "valid_greedy_tokens": 7})
    assert loss_fn.scalars(valid) == {"rougeL": 25.0, "greedy_length": 3.5}
    assert loss_fn.valid_report(valid) == ["Validation ROUGE-L F1 (greedy): 25.00; mean length 3.5"]
    assert loss_fn.report(valid) == ([], [])


def test_reward_uses_extended_ids_and_unk_matches_nothing():
    """A reference OOV that is in the source is reached by copying its extended id; one that is not
    (<unk> in tgt_ex) cannot be reached, not even by producing <unk>."""
    V = len(VOCABS.tgt)
    batch = make_batch(VOCABS, B=1, S=6, T=5, seed=7)
    batch.tgt_ex = torch.tensor([[BOS, V, 5, UNK, EOS]])  # an OOV copy, a word, an unreachable OOV
    batch.tgt = batch.tgt_ex.masked_fill(batch.tgt_ex >= V, UNK)
    ref, ref_len = reference_tokens(batch)
    assert ref_len.tolist() == [3]
    hyp = torch.tensor([[V, 5, UNK]])
    assert rouge_l(hyp, torch.tensor([3]), ref, ref_len).item() == pytest.approx(2 / 3)
    hyp = torch.tensor([[V, 5]])
    assert rouge_l(hyp, torch.tensor([2]), ref, ref_len).item() == pytest.approx(0.8)
    hyp = torch.tensor([[UNK, 5]])  # <unk> in place of the copyable OOV: it does not match it
    assert rouge_l(hyp, torch.tensor([2]), ref, ref_len).item() == pytest.approx(0.4)


@pytest.mark.parametrize("family", [dict(copy_attn=True), dict(copy_attn=True, coverage_attn=True), dict()])
def test_baselines_train_with_the_mixed_loss(family):
    """The loss only uses the model interface: See et al.'s pointer-generator and the plain attention
    model train with it too (rollouts through decode_step)."""
    opt = make_opt(**family)
    model = build(opt, VOCABS)
    model.train()
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=8)
    loss, stats = MixedLoss(MLLoss(), gamma=0.9, max_length=5)(model, batch)
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert stats.extra["rl_examples"] == 3


def test_validation_reports_greedy_rouge_without_sampling():
    model = _model(9)
    model.eval()
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=9)
    loss_fn = MixedLoss(MLLoss(), gamma=0.5, max_length=6, valid_rouge=True)
    state = torch.get_rng_state()
    stats = loss_fn.validate(model, batch)
    assert torch.equal(state, torch.get_rng_state())  # greedy only: nothing drawn
    with torch.no_grad():
        greedy, = model.rollout(batch, model.encode(batch), 6, ("greedy",))
    ref, ref_len = reference_tokens(batch)
    assert stats.extra["valid_rouge_examples"] == 3 and "rl_examples" not in stats.extra
    assert stats.extra["valid_rougeL"] == pytest.approx(float(rouge_l(greedy.tokens, greedy.lengths, ref,
                                                                      ref_len).sum()))
    assert loss_fn.valid_report(stats)[0].startswith("Validation ROUGE-L F1 (greedy)")


def test_validation_is_explicit_not_the_grad_mode():
    """Calling the loss is training whatever the grad mode (the RL term runs without autograd too);
    only `validate` validates."""
    model = _model(9)
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=9)
    loss_fn = MixedLoss(MLLoss(), gamma=0.5, max_length=6, valid_rouge=True)
    with torch.no_grad():
        _, stats = loss_fn(model, batch)
    assert stats.extra["rl_examples"] == 3 and "valid_rouge_examples" not in stats.extra
    with torch.enable_grad():
        stats = loss_fn.validate(model, batch)
    assert "rl_examples" not in stats.extra and stats.extra["valid_rouge_examples"] == 3


# --------------------------------------------------------------------------- rollouts, parts, normalization
@pytest.mark.parametrize("family", [dict(reinforced=True, rnn_size=12, word_vec_size=6), dict(copy_attn=True),
                                    dict(layers=2)])
def test_rollouts_run_without_dropout(family):
    """The sample and the greedy baseline are decoded in evaluation mode: with -dropout 0.3 or 0 (same
    weights, same seed) the RL term is the same, and the model is back in training mode after."""
    batch = make_batch(VOCABS, B=4, S=8, T=6, seed=12)
    results = []
    for dropout in (0.3, 0.0):
        model = build(make_opt(dropout=dropout, **family), VOCABS, seed=4).double()
        model.train()
        torch.manual_seed(7)
        rl, stats = MixedLoss(MLLoss(), gamma=1.0, max_length=6).rl_term(model, batch)
        assert model.training and all(m.training for m in model.modules())
        results.append((rl.item(), stats))
    (rl_a, a), (rl_b, b) = results
    assert rl_a == rl_b and a == b


def test_evaluation_mode_keeps_recurrent_modules_trainable_for_cudnn():
    """Inside the rollouts' evaluation_mode every module is in evaluation mode except nn.LSTM / nn.GRU,
    which stay in training mode (cuDNN refuses the backward pass of an RNN in evaluation mode) with their
    inter-layer dropout at 0; modes and dropout are restored after, also when the block raises."""
    model = build(make_opt(dropout=0.3, layers=2), VOCABS, seed=4)
    model.train()
    rnns = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
    assert rnns and all(m.dropout == 0.3 for m in rnns)
    with pytest.raises(RuntimeError, match="inside"):
        with evaluation_mode(model):
            assert all(m.training and m.dropout == 0.0 for m in rnns)
            others = [m for m in model.modules() if not isinstance(m, torch.nn.RNNBase)]
            assert others and not any(m.training for m in others)
            raise RuntimeError("inside")
    assert all(m.training for m in model.modules()) and all(m.dropout == 0.3 for m in rnns)


def test_parts_add_up_to_the_loss_and_tokens_normalization():
    model = _model(13)
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=13)
    loss_fn = MixedLoss(MLLoss(), gamma=0.75, max_length=6)
    torch.manual_seed(3)
    parts, stats = loss_fn.parts(model, batch)
    torch.manual_seed(3)
    total, _ = loss_fn(model, batch)
    assert set(parts) == {"ml", "rl"} and torch.allclose(parts["ml"] + parts["rl"], total)
    per_token = MixedLoss(MLLoss(), gamma=0.75, max_length=6, normalization="tokens")
    torch.manual_seed(3)
    tok_parts, tok_stats = per_token.parts(model, batch)
    scale = batch.n_tgt_tokens / tok_stats.extra["sampled_tokens"]
    assert torch.allclose(tok_parts["ml"], parts["ml"]) and torch.allclose(tok_parts["rl"], parts["rl"] * scale)
    assert set(MixedLoss(MLLoss(), gamma=1.0, max_length=6).parts(model, batch)[0]) == {"loss"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("family", [dict(reinforced=True, rnn_size=12, word_vec_size=6),
                                    dict(copy_attn=True, brnn=True)])
def test_mixed_step_backpropagates_on_cuda(family):
    """The sampled rollout runs through cuDNN's RNNs and is backpropagated: a mixed step on CUDA gives
    gradients (cuDNN refuses the backward pass of an RNN run in evaluation mode)."""
    model = build(make_opt(**family), VOCABS, seed=3).cuda()
    model.train()
    batch = make_batch(VOCABS, B=4, S=8, T=6, seed=5).to("cuda")
    loss, stats = MixedLoss(MLLoss(), gamma=0.9, max_length=6)(model, batch)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert loss.is_cuda and torch.isfinite(loss) and all(g is not None and torch.isfinite(g).all() for g in grads)


def test_build_loss_chooses_the_objective_from_the_resolved_options():
    """onmt.losses.build_loss: ML alone without -rl_gamma and -valid_rouge; the mix otherwise, reading
    -valid_rouge and -max_gen_length as resolve_train_run left them."""
    from onmt.losses import build_loss
    assert isinstance(build_loss(make_opt(reinforced=True)), MLLoss)
    loss = build_loss(make_opt(reinforced=True, rl_gamma=0.9, valid_rouge=True, max_gen_length=7))
    assert isinstance(loss, MixedLoss) and loss.gamma == 0.9 and loss.valid_rouge and loss.max_length == 7
    only_rouge = build_loss(make_opt(valid_rouge=True, max_gen_length=5))
    assert isinstance(only_rouge, MixedLoss) and only_rouge.gamma == 0.0 and only_rouge.valid_rouge
