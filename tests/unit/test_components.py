"""onmt/models/components.py: the encoder and decoder tables the models' from_opt build from."""
import pytest
import torch
import torch.nn as nn

from helpers.models import make_opt, make_vocabs
from onmt.execution import PLAIN, Execution
from onmt.models import components
from onmt.models.components import (
    DECODERS,
    ENCODERS,
    FUSED_DECODERS,
    FUSED_ENCODERS,
    build_decoder,
    build_encoder,
    register_encoder,
)
from onmt.models.fused import FusedNMTModel, FusedRNNDecoder, FusedRNNEncoder
from onmt.models.rnn_decoder import RNNDecoder
from onmt.models.rnn_encoder import RNNEncoder
from onmt.models.seq2seq import NMTModel
from onmt.modules.embeddings import Embeddings
from onmt.reinforced.decoder import ReinforcedDecoder
from onmt.reinforced.fused import FusedReinforcedDecoder, FusedReinforcedModel
from onmt.reinforced.model import ReinforcedModel


def test_every_component_is_in_its_table():
    assert ENCODERS == {"rnn": RNNEncoder} and FUSED_ENCODERS == {"rnn": FusedRNNEncoder}
    assert DECODERS == {"rnn": RNNDecoder, "reinforced": ReinforcedDecoder}
    assert FUSED_DECODERS == {"rnn": FusedRNNDecoder, "reinforced": FusedReinforcedDecoder}
    for plain, fused in ((ENCODERS, FUSED_ENCODERS), (DECODERS, FUSED_DECODERS)):
        assert all(issubclass(fused[name], plain[name]) for name in fused)


@pytest.mark.parametrize("model_cls,fused_cls,overrides", [
    (NMTModel, FusedNMTModel, {}), (ReinforcedModel, FusedReinforcedModel, {"reinforced": True})])
def test_the_models_build_their_components_from_the_tables(model_cls, fused_cls, overrides):
    for cls, execution, encoders, decoders in ((model_cls, PLAIN, ENCODERS, DECODERS),
                                               (fused_cls, Execution(), FUSED_ENCODERS, FUSED_DECODERS)):
        model = cls.from_opt(make_opt(**overrides), make_vocabs(), execution=execution)
        assert type(model.encoder) is encoders[cls.ENCODER] and type(model.decoder) is decoders[cls.DECODER]
        assert model.execution == execution
        fused_modules = [m for m in model.modules() if m is not model and "execution" in vars(m)]
        assert all(m.execution == execution for m in fused_modules) and bool(fused_modules) == execution.fused


def test_a_new_encoder_joins_the_table_and_a_model_builds_it(monkeypatch):
    monkeypatch.setattr(components, "ENCODERS", dict(ENCODERS))

    @register_encoder("mean")
    class MeanEncoder(nn.Module):
        def __init__(self, embeddings):
            super().__init__()
            self.embeddings = embeddings

        @classmethod
        def from_opt(cls, opt, embeddings):
            return cls(embeddings)

    emb = Embeddings(10, 4)
    # no fused subclass: the plain class under either execution, never given one
    assert type(build_encoder("mean", make_opt(), emb, PLAIN)) is MeanEncoder
    assert type(build_encoder("mean", make_opt(), emb, Execution())) is MeanEncoder
    with pytest.raises(ValueError, match="two encoders named 'mean'"):
        register_encoder("mean")(type("Other", (), {}))
    with pytest.raises(ValueError, match="unknown encoder 'transformer'; registered: mean, rnn"):
        build_encoder("transformer", make_opt(), emb)


def test_the_encoder_s_from_opt_is_the_constructor_of_the_options():
    opt = make_opt(brnn=True, bridge=True)
    emb = Embeddings(10, 6)
    torch.manual_seed(0)
    built = RNNEncoder.from_opt(opt, emb)
    torch.manual_seed(0)
    direct = RNNEncoder(opt.rnn_type, opt.enc_layers, opt.rnn_size, emb, bidirectional=True, dropout=opt.dropout,
                        bridge=True)
    assert built.bidirectional and built.bridge is not None
    for (k, a), (_, b) in zip(built.state_dict().items(), direct.state_dict().items()):
        assert torch.equal(a, b), k
    assert RNNEncoder.from_opt(opt, emb, rnn_type="GRU", bridge=False).bridge is None


def test_a_fused_subclass_is_built_for_a_fused_execution_with_it():
    monkey_tables = dict(ENCODERS), dict(FUSED_ENCODERS)
    try:
        @register_encoder("mean2")
        class Plain(nn.Module):
            def __init__(self, embeddings):
                super().__init__()
                self.embeddings = embeddings

            @classmethod
            def from_opt(cls, opt, embeddings, **fixed):
                return cls(embeddings, **fixed)

        @register_encoder("mean2", fused=True)
        class Fused(Plain):
            def __init__(self, embeddings, execution=None):
                super().__init__(embeddings)
                self.execution = execution

        emb = Embeddings(10, 4)
        assert type(build_encoder("mean2", make_opt(), emb, PLAIN)) is Plain
        built = build_encoder("mean2", make_opt(), emb, Execution(precision="bf16"))
        assert type(built) is Fused and built.execution == Execution(precision="bf16")
    finally:
        ENCODERS.clear(), ENCODERS.update(monkey_tables[0])
        FUSED_ENCODERS.clear(), FUSED_ENCODERS.update(monkey_tables[1])


def test_compile_decoder_step_is_applied_as_the_decoder_is_built():
    emb = Embeddings(10, 4)
    for execution in (Execution(kernels="plain", compile="decoder-step"), Execution(compile="decoder-step")):
        decoder = build_decoder("rnn", make_opt(), emb, execution)
        assert "step" in vars(decoder)          # the instance's compiled step, the class's untouched
    assert "step" not in vars(build_decoder("rnn", make_opt(), emb, PLAIN))
