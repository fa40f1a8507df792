"""ReinforcedModel and its fused subclass: interface, teacher forcing vs step decoding, scheduled sampling,
shared embedding (the tests of the interface run on both classes)."""
import pytest
import torch

from bench.lib.per_step import per_step_forward
from helpers.reinforced import V_SRC, V_TGT, _batch, _copy_batch, _model, _opt, _vocabs
from onmt.constants import PAD, UNK
from onmt.execution import PLAIN, Execution
from onmt.model_builder import build_model
from onmt.reinforced.fused import FusedReinforcedModel
from onmt.reinforced.model import ReinforcedModel

BOTH = pytest.mark.parametrize("execution", [PLAIN, Execution()], ids=["plain", "fused"])


def test_the_helper_builds_the_class_of_the_execution():
    assert type(_model(execution=PLAIN)) is ReinforcedModel and type(_model()) is FusedReinforcedModel


def _loop(model, batch, choose=None):
    """decode_step over the target; `choose(logp)` picks the next input, else the reference."""
    state = model.init_state(batch, model.encode(batch))
    inputs, logps, fed = batch.tgt[:, 0], [], []
    for t in range(batch.tgt.size(1) - 1):
        logp, state, attns = model.decode_step(inputs, state)
        logps.append(logp)
        inputs = batch.tgt[:, t + 1] if choose is None else choose(logp)
        fed.append(inputs)
    return torch.stack(logps, 1), torch.stack(fed, 1), state


@pytest.mark.parametrize("more_args", [[], ["-no_temporal_attn", "-no_intra_decoder_attn"], ["-no_tied_output"]])
@BOTH
def test_decode_step_equals_forward(more_args, execution):
    model, batch = _model(*more_args, execution=execution).eval(), _batch()
    logp, attns = model(batch)
    X = V_TGT + batch.n_oov
    assert logp.shape == (3, 5, X) and attns["std"].shape == (3, 5, 7)
    ref, _, _ = _loop(model, batch)
    assert torch.allclose(logp, ref, atol=1e-5)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(3, 5), atol=1e-5)
    pad = ~(torch.arange(7)[None, :] < batch.src_lengths[:, None])
    assert (attns["std"].permute(1, 0, 2)[:, pad] == 0).all()  # padding never attended


@BOTH
def test_scheduled_sampling_zero_is_teacher_forcing_and_per_step_generator_agrees(execution):
    model, batch = _model("-scheduled_sampling", "0", execution=execution).train(), _batch(1)
    logp, _ = model(batch)
    ref, _, _ = _loop(model, batch)
    assert torch.allclose(logp, ref, atol=1e-5)
    assert torch.allclose(per_step_forward(model, batch)[0], ref, atol=1e-5)
    assert torch.allclose(per_step_forward(model, batch, hoisted=True)[0], ref, atol=1e-5)


@BOTH
def test_scheduled_sampling_one_feeds_the_models_own_argmax(execution):
    model, batch = _model("-scheduled_sampling", "1", execution=execution).train(), _copy_batch(2, B=3)
    with torch.no_grad():
        model.generator.switch.bias.fill_(4.0)  # copy a lot, so OOV predictions are fed back too
    logp, _ = model(batch)
    ref, fed, _ = _loop(model, batch, choose=lambda lp: lp.argmax(1))
    assert (fed >= V_TGT).any()
    assert torch.allclose(logp, ref, atol=1e-5)
    assert torch.allclose(per_step_forward(model, batch)[0], ref, atol=1e-5)
    model.eval()  # no scheduled sampling outside training
    assert torch.allclose(model(batch)[0], _loop(model, batch)[0], atol=1e-5)


@BOTH
def test_scheduled_sampling_sample_mode_same_draws_as_per_step_generator(execution):
    model = _model("-scheduled_sampling", "1", "-scheduled_sampling_mode", "sample", execution=execution).train()
    batch = _batch(3)
    torch.manual_seed(5)
    fast, _ = model(batch)
    torch.manual_seed(5)
    per_step, _ = per_step_forward(model, batch)
    assert torch.isfinite(fast).all() and torch.allclose(fast, per_step, atol=1e-5)


@BOTH
def test_partial_sampling_rate_differs_from_teacher_forcing_after_the_first_fed_back_input(execution):
    model, batch = _model("-scheduled_sampling", "0.5", execution=execution).train(), _batch(4, B=8, T=8)
    torch.manual_seed(0)
    logp, attns = model(batch)  # (B, T-1, X)
    with torch.no_grad():
        forced, _ = model.eval()(batch)  # teacher forcing: scheduled sampling is off in eval mode
    sampled = attns["sampled"]  # (B, T-1): step t's input was the model's own prediction
    assert 0 < int(sampled.sum()) < sampled.numel()
    # every step before a row's first fed-back input is teacher forcing, to the last bit of dropout-free math
    before = sampled.long().cumsum(1) == 0  # (B, T-1)
    assert torch.allclose(logp.detach()[before], forced[before], atol=1e-5)
    # a fed-back input that is not the reference changes that step's distribution
    changed = (logp.detach() - forced).abs().amax(-1) > 1e-4  # (B, T-1)
    assert changed[~before].any()
    assert not changed[before].any()
    loss = -logp.gather(2, batch.tgt_ex[:, 1:, None]).squeeze(2)[batch.tgt[:, 1:] != PAD].sum()
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@BOTH
def test_oov_inputs_are_read_as_unk(execution):
    model, batch = _model(execution=execution).eval(), _batch()
    state = model.init_state(batch, model.encode(batch))
    a, _, _ = model.decode_step(torch.full((3,), V_TGT + 1), state)
    b, _, _ = model.decode_step(torch.full((3,), UNK), state)
    assert torch.equal(a, b)


def _nll(model, batch):
    logp, _ = model(batch)
    return -logp.gather(2, batch.tgt_ex[:, 1:, None]).squeeze(2)[batch.tgt[:, 1:] != PAD].sum()


def test_gradients_reach_the_shared_embedding_through_inputs_and_output():
    batch = _batch()
    used_src, used_tgt = set(batch.src.flatten().tolist()), set(batch.tgt.flatten().tolist())
    output_only = next(w for w in range(4, V_TGT) if w not in used_src | used_tgt)
    input_only = next(w for w in range(V_TGT, V_SRC) if w in used_src)   # encoder input, not a target word
    dec_input_only = next(w for w in used_tgt - used_src if w >= 4)
    model = _model()
    assert len({id(p) for p in model.parameters()}) == len(list(model.parameters()))
    _nll(model, batch).backward()
    grad = model.encoder.embeddings.lut.weight.grad
    assert grad[output_only].abs().sum() > 0 and grad[input_only].abs().sum() > 0
    model = _model("-no_tied_output")
    _nll(model, batch).backward()
    grad = model.encoder.embeddings.lut.weight.grad
    assert grad[dec_input_only].abs().sum() > 0 and grad[output_only].abs().sum() == 0
    assert grad[PAD].abs().sum() == 0


def test_state_reorder_follows_beams():
    model = _model().eval()
    _, _, state = _loop(model, _batch(5))  # a state with history, lse and hidden
    index = torch.tensor([2, 0, 0, 1])
    moved = state.reorder(index)
    assert moved.history.shape[:2] == (4, 5) and moved.hidden[0].shape[1] == 4
    inputs = torch.tensor([5, 6, 7])
    logp, _, _ = model.decode_step(inputs, state)
    logp_moved, _, _ = model.decode_step(inputs.index_select(0, index), moved)
    assert torch.allclose(logp_moved, logp.index_select(0, index), atol=1e-6)


def test_learns_to_copy_words_outside_the_target_vocabulary():
    model = _model("-rnn_size", "32", "-word_vec_size", "16")
    optim = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(60):
        batch = _copy_batch(step)
        optim.zero_grad()
        loss = _nll(model, batch) / batch.n_tgt_tokens
        loss.backward()
        optim.step()
    assert loss.item() < 0.5


def test_works_with_the_ml_loss():
    from onmt.losses.ml import MLLoss
    model, batch = _model("-scheduled_sampling", "0.25").train(), _batch(6)
    loss, stats = MLLoss()(model, batch)
    loss.backward()
    assert torch.isfinite(loss) and stats.n_words == batch.n_tgt_tokens


def test_old_checkpoints_with_the_decoder_embedding_key_load_bit_for_bit():
    """`decoder.embedding.*` (the attribute's former name) is read as `decoder.embeddings.*`."""
    opt, batch = _opt("-scheduled_sampling", "0"), _batch(2)
    torch.manual_seed(0)
    model = build_model(opt, _vocabs()).eval()
    old = {k.replace("decoder.embeddings.", "decoder.embedding."): v for k, v in model.state_dict().items()}
    assert "decoder.embedding.full.weight" in old and "decoder.embeddings.full.weight" not in old
    torch.manual_seed(1)  # another initialization, overwritten by the checkpoint
    loaded = build_model(opt, _vocabs(), checkpoint_state=old).eval()
    for (name, p), (name_l, p_l) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert name == name_l and torch.equal(p, p_l), name
    with torch.no_grad():
        assert torch.equal(model(batch)[0], loaded(batch)[0])
        state, state_l = (m.init_state(batch, m.encode(batch)) for m in (model, loaded))
        inputs = batch.tgt[:, 0]
        for _ in range(3):
            logp, state, _ = model.decode_step(inputs, state)
            logp_l, state_l, _ = loaded.decode_step(inputs, state_l)
            assert torch.equal(logp, logp_l)
            inputs = logp.argmax(1)


def test_decoding_without_autograd_takes_the_fused_step_and_equals_the_plain_one():
    model, batch = _model().eval(), _batch()
    want, _, _ = _loop(model, batch)  # autograd on: the plain PointerGenerator.forward at each step
    with torch.no_grad():
        got, _, state = _loop(model, batch)
    assert state.out_packed is not None  # the packed W_out travelled with the state to the last step
    assert torch.allclose(got, want.detach(), atol=1e-5)


def test_w_out_is_evaluated_once_per_set_of_parameters_while_decoding(monkeypatch):
    model, batch = _model().eval(), _batch()
    calls = []
    out_weight = model.generator.out_weight
    monkeypatch.setattr(model.generator, "out_weight", lambda *a: calls.append(1) or out_weight(*a))
    with torch.no_grad():
        first, _, _ = _loop(model, batch)
        _loop(model, batch)
    assert len(calls) == 1  # not once per step, nor once per batch
    with torch.no_grad():  # an optimizer-like in-place update of W_proj: W_out is evaluated again
        model.generator.proj.mul_(0.5)
        moved, _, _ = _loop(model, batch)
    assert len(calls) == 2 and not torch.allclose(moved, first, atol=1e-3)
    model.train()
    model.eval()
    with torch.no_grad():
        again, _, _ = _loop(model, batch)
    assert len(calls) == 3 and torch.allclose(again, moved, atol=1e-6)


def test_attention_scores_scale_by_the_option():
    """-intra_attn_scale sqrt (a fresh model's default) scales both attentions' scores by 1/sqrt(H);
    none (checkpoints written before the option) leaves them as written."""
    fresh, old = _model(), _model("-intra_attn_scale", "none")
    assert fresh.decoder.enc_attn.scale == fresh.decoder.dec_attn.scale == 12 ** -0.5
    assert old.decoder.enc_attn.scale == old.decoder.dec_attn.scale == 1.0
