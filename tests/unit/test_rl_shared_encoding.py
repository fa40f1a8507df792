"""A mixed step of a dropout-free model encodes its batch once (onmt/losses/rl.py `dropout_free`, interface.py
EncoderOutput.per_pass): the ML term and the rollouts read one encoding and one W_out, with the same loss
terms and gradients as two encodings; a model with dropout still encodes twice."""
import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt.interface import per_pass
from onmt.losses import rl
from onmt.losses.ml import MLLoss
from onmt.losses.rl import MixedLoss, dropout_free
from onmt.model_builder import build_model

VOCABS = make_vocabs(src_vocab_size=30, tgt_vocab_size=14)
FAMILIES = {"reinforced": dict(reinforced=True, rnn_size=12, word_vec_size=6, scheduled_sampling=0.25),
            "copy": dict(copy_attn=True, coverage_attn=True, global_attention="mlp"),
            "rnn": dict(global_attention="general")}


def _model(family, kernels="fused", dropout=0.0, seed=3):
    torch.manual_seed(seed)
    model = build_model(make_opt(dropout=dropout, **FAMILIES[family]), VOCABS, execution=kernels).double()
    model.train()
    return model


def _counted(model):
    """Counts of the encoder's forward passes and of W_out's computations while the model runs."""
    counts = {"encode": 0, "out_weight": 0}
    model.encoder.register_forward_hook(lambda *_: counts.__setitem__("encode", counts["encode"] + 1))
    generator = getattr(model, "generator", None)
    if hasattr(generator, "out_weight"):
        compute = generator.out_weight

        def counted_out_weight(*args, **kwargs):
            counts["out_weight"] += 1
            return compute(*args, **kwargs)
        generator.out_weight = counted_out_weight
    return counts


def _step(model, batch, gamma=0.5):
    """The mixed step's terms (as floats) and every parameter's gradient after backpropagating them one
    after the other, as the trainer does (the graph kept for the second)."""
    torch.manual_seed(11)
    parts, stats = MixedLoss(MLLoss(lambda_coverage=1.0), gamma=gamma, max_length=6).parts(model, batch)
    names = list(parts)
    for i, name in enumerate(names):
        parts[name].backward(retain_graph=i < len(names) - 1)
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return {k: v.item() for k, v in parts.items()}, grads, stats


def test_dropout_free_reads_every_dropout_of_the_encoder():
    assert dropout_free(_model("reinforced"))
    assert not dropout_free(_model("reinforced", dropout=0.3))   # the embedding's dropout
    two_layers = build_model(make_opt(layers=2, dropout=0.0), VOCABS)
    assert dropout_free(two_layers)
    two_layers.encoder.rnn.dropout = 0.2                            # inter-layer dropout of nn.LSTM only
    assert not dropout_free(two_layers)


@pytest.mark.parametrize("kernels", ["fused", "plain"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_one_encoding_gives_the_terms_and_gradients_of_two(family, kernels, monkeypatch):
    """Same weights, same seed: sharing the encoding (and W_out) changes neither term nor any gradient,
    and the encoder (and W_out) runs once instead of twice."""
    batch = make_batch(VOCABS, B=4, S=9, T=7, seed=5)
    shared = _model(family, kernels)
    counts = _counted(shared)
    terms, grads, stats = _step(shared, batch)
    assert counts["encode"] == 1
    assert counts["out_weight"] == (1 if family == "reinforced" else 0)
    assert stats.extra["rl_examples"] == 4 and set(terms) == {"ml", "rl"}

    monkeypatch.setattr(rl, "dropout_free", lambda model: False)   # the encoding per term, as before
    apart = _model(family, kernels)
    counts = _counted(apart)
    want_terms, want_grads, _ = _step(apart, batch)
    assert counts["encode"] == 2
    assert counts["out_weight"] == (2 if family == "reinforced" else 0)
    assert terms == pytest.approx(want_terms, rel=1e-12, abs=1e-12)
    assert grads.keys() == want_grads.keys() and grads
    for name, g in grads.items():
        assert torch.allclose(g, want_grads[name], rtol=1e-10, atol=1e-12), name


def test_a_model_with_dropout_encodes_once_per_term():
    """Training mode's dropout makes the ML term's encoding differ from the rollouts' (evaluation mode)."""
    model = _model("reinforced", dropout=0.3)
    counts = _counted(model)
    _step(model, make_batch(VOCABS, B=3, S=8, T=6, seed=2))
    assert counts == {"encode": 2, "out_weight": 2}


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_a_single_term_encodes_once(gamma):
    model = _model("reinforced")
    counts = _counted(model)
    _step(model, make_batch(VOCABS, B=3, S=8, T=6, seed=2), gamma=gamma)
    assert counts == {"encode": 1, "out_weight": 1}


def test_per_pass_values_are_kept_per_grad_mode():
    """A value built without autograd never stands in for one a gradient must flow through."""
    model = _model("reinforced")
    enc = model.encode(make_batch(VOCABS, B=2, S=5, T=4, seed=1))
    built = []

    def build():
        built.append(torch.is_grad_enabled())
        return model.generator.out_weight()[0]
    with torch.no_grad():
        a = per_pass(enc, "w", build)
        assert per_pass(enc, "w", build) is a and not a.requires_grad
    b = per_pass(enc, "w", build)
    assert b.requires_grad and per_pass(enc, "w", build) is b
    assert built == [False, True]
