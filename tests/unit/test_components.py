"""onmt/models/components.py: the encoder and decoder tables the models' from_opt build from."""
import pytest
import torch
import torch.nn as nn

from helpers.models import make_opt, make_vocabs
from onmt.models import components
from onmt.models.components import DECODERS, ENCODERS, build_encoder, register_encoder
from onmt.models.rnn_decoder import RNNDecoder
from onmt.models.rnn_encoder import RNNEncoder
from onmt.models.seq2seq import NMTModel
from onmt.modules.embeddings import Embeddings
from onmt.reinforced.decoder import ReinforcedDecoder
from onmt.reinforced.model import ReinforcedModel


def test_every_component_is_in_its_table():
    assert ENCODERS == {"rnn": RNNEncoder}
    assert DECODERS == {"rnn": RNNDecoder, "reinforced": ReinforcedDecoder}


@pytest.mark.parametrize("model_cls,overrides", [(NMTModel, {}), (ReinforcedModel, {"reinforced": True})])
def test_the_models_build_their_components_from_the_tables(model_cls, overrides):
    model = model_cls.from_opt(make_opt(**overrides), make_vocabs())
    assert type(model.encoder) is ENCODERS[model_cls.ENCODER]
    assert type(model.decoder) is DECODERS[model_cls.DECODER]


def test_a_new_encoder_joins_the_table_and_a_model_builds_it(monkeypatch):
    monkeypatch.setattr(components, "ENCODERS", dict(ENCODERS))

    @register_encoder("mean")
    class MeanEncoder(nn.Module):
        def __init__(self, embeddings, execution=None):
            super().__init__()
            self.embeddings, self.execution = embeddings, execution

        @classmethod
        def from_opt(cls, opt, embeddings, execution=None):
            return cls(embeddings, execution)

    emb = Embeddings(10, 4)
    assert isinstance(build_encoder("mean", make_opt(), emb), MeanEncoder)
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
