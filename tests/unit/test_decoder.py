"""The reinforced model's decoder (onmt/reinforced/decoder.py): it starts from the encoder's final states,
one step gives o_t = [h^d_t ; c^e_t ; c^d_t] with c^d_1 = 0, and an extended id is read as <unk>.
The attentions themselves are tested in test_intra_attention.py, the whole model in test_reinforced_model.py."""
import pytest
import torch

from helpers.reinforced import V_TGT, _batch, _model
from onmt.constants import UNK
from onmt.reinforced.decoder import ReinforcedDecoder, ReinforcedState


def start(*args):
    model, batch = _model(*args, seed=2).eval(), _batch(3)
    enc = model.encode(batch)
    return model.decoder, enc, batch, model.decoder.init_state(enc, batch.src_ex, batch.n_oov)


def test_the_state_starts_from_the_encoders_final_states():
    decoder, enc, batch, state = start()
    assert isinstance(decoder, ReinforcedDecoder) and isinstance(state, ReinforcedState)
    assert state.hidden[0] is enc.final[0] and state.hidden[1] is enc.final[1]
    assert state.memory is enc.memory and state.step == 0 and state.history is None and state.lse is None
    h, c = enc.final
    with pytest.raises(ValueError, match="the decoder has 1 layers but the encoder's final state has 2"):
        decoder.init_state(type(enc)(enc.memory, (torch.cat([h, h]), torch.cat([c, c])), enc.mask),
                           batch.src_ex, batch.n_oov)


@torch.no_grad()
def test_o_t_is_the_decoder_state_and_both_contexts():
    decoder, enc, batch, state = start()
    H, B = decoder.hidden_size, batch.batch_size
    for t in range(3):
        o_t, attn, state = decoder.step(batch.tgt[:, t], state)
        assert o_t.shape == (B, 3 * H) and decoder.output_size == 3 * H
        assert torch.equal(o_t[:, :H], state.hidden[0][-1])                  # h^d_t, the top layer's
        torch.testing.assert_close(o_t[:, H:2 * H], torch.bmm(attn.unsqueeze(1), enc.memory).squeeze(1))  # c^e_t
        assert (o_t[:, 2 * H:] == 0).all() == (t == 0)                        # c^d_1 = 0, then not
        assert state.step == t + 1 and state.history.shape == (B, t + 1, H)
    decoder, _, batch, state = start("-no_intra_decoder_attn")
    for t in range(2):
        o_t, _, state = decoder.step(batch.tgt[:, t], state)
        assert (o_t[:, 2 * H:] == 0).all() and state.history is None        # o_t keeps its 3H size


@torch.no_grad()
def test_an_extended_id_is_read_as_unk():
    decoder, _, batch, state = start()
    ids = torch.full((batch.batch_size,), V_TGT + 1)
    assert torch.equal(decoder.step(ids, state)[0], decoder.step(torch.full_like(ids, UNK), state)[0])
