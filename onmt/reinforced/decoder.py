"""The reinforced model's decoder: an LSTM with intra-temporal and intra-decoder attention.

One `step` maps the previous token and the state to o_t = [h^d_t ; c^e_t ; c^d_t] (the input of
Paulus et al.'s eqs. 9 and 11) and the encoder attention (eqs. 2-5, 10); the attentions are
intra_attention.py's (eqs. 2-8), the pointer-generator (pointer_generator.py, eqs. 9-13) turns o_t
into a distribution. With `intra_decoder=False` (-no_intra_decoder_attn) c^d_t is all zeros, so o_t
keeps its 3H size and the generator's parameters keep their shapes. `step` is the formula:
nn.Dropout, the LSTM cell's two addmm per layer, the embedding lookup and the attention's own
products. The fused subclass (FusedReinforcedDecoder, onmt/reinforced/fused.py) draws its dropout
masks with torch.rand, prepares the LSTM gates of a model decoding in a chosen precision (`_gates`)
and gives a teacher-forced pass or a rollout per-pass lookups and products (`step_embedding()` /
`step_source()`), which `step` takes as `embed` / `source`: the same values and gradients.
"""
from dataclasses import dataclass, replace
from typing import Any, Optional, Tuple

import torch
import torch.nn as nn

from onmt.constants import UNK
from onmt.interface import DecoderStateBase
from onmt.models.components import register_decoder
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.lstm_step import lstm_step
from onmt.reinforced.intra_attention import IntraDecoderAttention, IntraTemporalAttention


@dataclass
class ReinforcedState(DecoderStateBase):
    """Everything decoding needs; every tensor has the batch on dim 0 except `hidden` (dim 1). The
    source fields (memory, enc_keys, mask, src_ex, first_pos) hold one row per source: B /
    source_rows rows (DecoderStateBase.per_row gives them per row)."""
    hidden: Tuple[torch.Tensor, torch.Tensor]  # (h, c), each (L, B, H)
    memory: torch.Tensor                       # (B, S, H) encoder states h^e
    enc_keys: torch.Tensor                     # (B, S, H) W^e_attn h^e, computed once
    mask: torch.Tensor                         # (B, S) True at real source positions
    src_ex: torch.Tensor                       # (B, S) extended ids of the source words
    first_pos: torch.Tensor                    # (B, S) first position holding the same word
    n_oov: int                                 # extended slots beyond V_tgt
    lse: Optional[torch.Tensor] = None         # (B, S) log sum_{j<t} exp(e_ji); None before step 1
    # (B, t, H) previous decoder states; None before step 1
    history: Optional[torch.Tensor] = None
    step: int = 0                              # decoding steps taken
    # G: rows per source; the source fields hold B/G rows (interface.py)
    source_rows: int = 1
    # (V, 3H), (V,) W_out, b_out once per batch
    out_weight: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
    # fused, without autograd: out_weight as a PackedLinear
    out_packed: Optional[Any] = None

    _batch_dims = {"hidden": 1}
    _source_fields = frozenset({"memory", "enc_keys", "mask", "src_ex", "first_pos"})
    _shared_fields = frozenset({"out_weight", "out_packed"})


@register_decoder("reinforced")
class ReinforcedDecoder(nn.Module):
    """LSTM decoder reading the embedding of y_{t-1}.

    Args:
        embeddings: PartialEmbedding over the target rows of the shared matrix.
        hidden_size: H, the decoder size, equal to the encoder's output size.
        num_layers: stacked LSTM layers (the encoder's final states initialize each layer).
        dropout: dropout on the input embeddings and between LSTM layers.
        temporal: intra-temporal (True) or plain (False) attention over the encoder.
        intra_decoder: use intra-decoder attention (else c^d_t = 0).
        score_scale: factor of both attentions' bilinear scores (1 / sqrt(H) with
            -intra_attn_scale sqrt).
    """

    dropout_cls = nn.Dropout   # the input embedding's dropout

    def __init__(self, embeddings, hidden_size, num_layers=1, dropout=0.0, temporal=True,
                 intra_decoder=True, score_scale=1.0):
        super().__init__()
        self.embeddings = embeddings
        self.tgt_vocab_size = embeddings.tgt_vocab_size
        self.hidden_size = hidden_size
        self.dropout = self.dropout_cls(dropout)
        self.rnn = nn.LSTM(embeddings.embedding_dim, hidden_size, num_layers=num_layers,
                           dropout=dropout if num_layers > 1 else 0.0, batch_first=True)
        self.enc_attn = IntraTemporalAttention(hidden_size, temporal=temporal, scale=score_scale)
        self.dec_attn = (IntraDecoderAttention(hidden_size, scale=score_scale) if intra_decoder
                         else None)

    @classmethod
    def from_opt(cls, opt, embeddings, **fixed):
        """The decoder of the model options (-rnn_size, -dec_layers, -dropout, -no_temporal_attn,
        -no_intra_decoder_attn, -intra_attn_scale) over the PartialEmbedding `embeddings`;
        `fixed`: constructor arguments set by the builder (a fused class's execution)."""
        return cls(embeddings, opt.rnn_size, num_layers=opt.dec_layers, dropout=opt.dropout,
                   temporal=not opt.no_temporal_attn, intra_decoder=not opt.no_intra_decoder_attn,
                   score_scale=opt.rnn_size ** -0.5 if opt.intra_attn_scale == "sqrt" else 1.0,
                   **fixed)

    @property
    def output_size(self):
        return 3 * self.hidden_size

    def init_state(self, enc, src_ex, n_oov):
        """enc: EncoderOutput (memory (B, S, H), final (h, c) each (L, B, H), mask (B, S))."""
        h, c = enc.final
        if h.size(0) != self.rnn.num_layers:
            raise ValueError(f"the decoder has {self.rnn.num_layers} layers but the encoder's "
                             f"final state has {h.size(0)}; use as many encoder as decoder layers")
        return ReinforcedState(hidden=(h, c), memory=enc.memory,
                               enc_keys=self.enc_attn.keys(enc.memory), mask=enc.mask,
                               src_ex=src_ex, first_pos=first_occurrence(src_ex), n_oov=int(n_oov))

    def _gates(self, x, hidden):
        """The LSTM cell's gates of this step, or None: the cell computes them (lstm_step)."""
        return None

    def step(self, inputs, state, embed=None, source=None, return_intra=False):
        """inputs (B,) extended ids of y_{t-1} (>= V_tgt read as <unk>); embed: a lookup to use
        instead of self.embeddings (the same rows); source: the encoder-side products of this pass
        (IntraTemporalAttention's `source`), or None.

        Returns o_t (B, 3H), the encoder attention (B, S) and the new state; with `return_intra`
        also the intra-decoder attention over the t previous decoder states (B, t) ((B, 0) at the
        first step; None without intra-decoder attention), the weights c^d_t is computed from.
        """
        inputs = inputs.masked_fill(inputs >= self.tgt_vocab_size, UNK)  # (B,)
        emb = self.dropout((embed or self.embeddings)(inputs)).unsqueeze(1)  # (B, 1, E)
        x = emb.squeeze(1)  # (B, E)
        h_t, hidden = lstm_step(self.rnn, x, state.hidden, self._gates(x, state.hidden))
        # the source fields per row (a beam state keeps them once per example); a `source` reads
        # them as stored
        keys, memory = (state.enc_keys, state.memory) if source is not None else (
            state.per_row("enc_keys"), state.per_row("memory"))  # (B, S, H) x2
        c_enc, attn, lse = self.enc_attn(h_t, keys, memory, state.per_row("mask"), state.lse,
                                        source=source)  # (B, H) c^e_t, (B, S) a^e_t: eqs. 2-5
        intra = None
        if self.dec_attn is not None:
            if return_intra:
                # (B, H), (B, t): eqs. 6-8
                c_dec, intra = self.dec_attn(h_t, state.history, return_attn=True)
            else:
                c_dec = self.dec_attn(h_t, state.history)  # (B, H) c^d_t: eqs. 6-8
            history = h_t.unsqueeze(1) if state.history is None else torch.cat(
                [state.history, h_t.unsqueeze(1)], dim=1)  # (B, t, H)
        else:
            c_dec, history = torch.zeros_like(h_t), None  # (B, H)
        # (B, 3H) [h^d_t ; c^e_t ; c^d_t] of eqs. 9 and 11
        o_t = torch.cat([h_t, c_enc, c_dec], dim=1)
        # the source fields and the per-batch W_out (out_weight, out_packed) carry over unchanged
        new_state = replace(state, hidden=hidden, lse=lse, history=history, step=state.step + 1)
        if return_intra:
            return o_t, attn, new_state, intra
        return o_t, attn, new_state
