"""DecoderStateBase.reorder: a within-source reorder (beam backpointers) equals a full reorder."""
import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs


@pytest.mark.parametrize("overrides", [
    dict(copy_attn=True, coverage_attn=True, global_attention="mlp", brnn=True),
    dict(global_attention="none", rnn_type="GRU"),
    dict(reinforced=True, brnn=True),
])
def test_within_source_reorder_equals_full_reorder(overrides):
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build(make_opt(param_init=1.0, **overrides), vocabs).eval()  # peaked attention
    batch = make_batch(vocabs, B=2, S=7, T=6)
    K = 3
    state = model.init_state(batch, model.encode(batch)).reorder(torch.arange(2).repeat_interleave(K))
    inputs = torch.randint(4, len(vocabs.tgt), (2 * K,))
    for _ in range(2):  # some per-hypothesis history (coverage, lse, intra-decoder states)
        _, state, _ = model.decode_step(inputs, state)
        inputs = torch.randint(4, len(vocabs.tgt) + batch.n_oov, (2 * K,))
    rows = torch.tensor([2, 0, 0, 4, 5, 5])  # backpointers, each within its example
    full = state.reorder(rows)
    fast = state.reorder(rows, within_source=True)
    a, _, _ = model.decode_step(inputs, full)
    b, _, _ = model.decode_step(inputs, fast)
    assert torch.equal(a, b)
    # and the reorder really matters: without it the prediction differs
    c, _, _ = model.decode_step(inputs, state)
    assert not torch.allclose(a, c)


@pytest.mark.parametrize("overrides,steps_keys,forward_keys", [
    (dict(), {"std"}, {"std"}),
    (dict(global_attention="none", rnn_type="GRU"), set(), set()),
    (dict(copy_attn=True, coverage_attn=True, global_attention="mlp", brnn=True),
     {"std", "coverage", "p_copy"}, {"std", "coverage", "p_copy"}),
    (dict(reinforced=True, brnn=True, scheduled_sampling=0.5), {"std", "p_copy", "intra"},
     {"std", "p_copy", "sampled"}),
])
def test_every_family_implements_the_protocol_and_only_documented_attns_keys(overrides, steps_keys, forward_keys):
    from onmt.interface import ATTN_KEYS, DecoderState, Model
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build(make_opt(**overrides), vocabs).train()
    batch = make_batch(vocabs, B=3, S=6, T=5)
    assert isinstance(model, Model)
    state = model.init_state(batch, model.encode(batch))
    assert isinstance(state, DecoderState)
    _, _, attns = model.decode_step(torch.full((3,), 2), state)
    assert set(attns) == steps_keys and set(attns) <= set(ATTN_KEYS)
    _, attns = model(batch)
    assert set(attns) == forward_keys and set(attns) <= set(ATTN_KEYS)
    _, _, attns = model.gold_log_likelihood(batch)
    assert set(attns) == forward_keys


@pytest.mark.parametrize("name", ["reinforced", "copy", "rnn"])
def test_every_registered_family_has_the_protocols_members_with_defaults(name):
    """Every family of the registry is a Model with the members that have defaults (models/generic.py
    ModelDefaults): its execution, decode_step_scores (the full log p of decode_step), upgrade_state_dict
    (today's keys unchanged), execution_notes (a list of sentences) and embeddings(side)."""
    from onmt.execution import Execution
    from onmt.interface import Model
    from onmt.model_builder import MODEL_REGISTRY, build_model
    from onmt.modules.embeddings import Embeddings
    assert sorted(MODEL_REGISTRY) == ["copy", "reinforced", "rnn"]
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build_model(make_opt(model_family=name), vocabs).eval()
    assert isinstance(model, Model) and model.execution == Execution()
    for member in ("decode_step_scores", "upgrade_state_dict", "execution_notes", "embeddings"):
        assert callable(getattr(type(model), member)), member
    state_dict = model.state_dict()
    assert list(model.upgrade_state_dict(state_dict)) == list(state_dict)
    assert isinstance(model.execution_notes(), list)
    assert isinstance(model.embeddings("encoder"), Embeddings) and model.embeddings("decoder") is not None
    assert model.embeddings("generator") is None
    batch = make_batch(vocabs, B=2, S=6, T=5)
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch))
        inputs = torch.full((2,), 5)
        logp, _, _ = model.decode_step(inputs, state)
        scores, _, _ = model.decode_step_scores(inputs, state)
    torch.testing.assert_close(scores.full(), logp.float(), atol=2e-5, rtol=1e-6)


@pytest.mark.parametrize("gamma,valid_rouge", [(None, False), (0.5, False), (None, True)])
def test_every_objective_meets_the_loss_protocol(gamma, valid_rouge):
    """build_loss's every objective is a Loss (onmt/interface.py): the trainer asks nothing else of it, and
    its terms add up to the loss."""
    from helpers.models import train_opt
    from onmt.interface import Loss
    from onmt.losses import build_loss
    argv = (["-rl_gamma", str(gamma)] if gamma is not None else []) + (["-valid_rouge"] if valid_rouge else [])
    opt = train_opt("-layers", "1", "-rnn_size", "8", "-word_vec_size", "6", "-copy_attn", "-max_gen_length", "5",
                    *argv)
    loss_fn = build_loss(opt)
    assert isinstance(loss_fn, Loss)
    vocabs = make_vocabs()
    model = build(make_opt(copy_attn=True), vocabs).train()
    batch = make_batch(vocabs, B=3, S=6, T=5)
    torch.manual_seed(0)
    parts, stats = loss_fn.parts(model, batch)
    torch.manual_seed(0)
    loss, again = loss_fn(model, batch)
    assert torch.equal(sum(parts.values()), loss) and stats.n_words == again.n_words
