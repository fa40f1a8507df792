"""RNN decoder: input feeding (Luong) with global attention, or Cho et al.'s fixed-context model.

At step t the RNN reads [emb(y_{t-1}); feed], where feed is
  - the previous attentional vector h~_{t-1} with input feeding (-input_feed 1),
  - the fixed context c (the encoder's top-layer final state) with -global_attention none,
  - nothing otherwise.
Its top-layer output h_t gives the attentional vector h~_t = tanh(W_out [c_t; h_t]) (c_t = c for the
fixed-context model); dropout is applied to it before the generator and before it is fed back.

This class is the formula: the step loop of the equations, nn.Dropout, the LSTM cell's two addmm per
layer, the attention's own scores. FusedRNNDecoder (onmt/models/fused.py), which the component
tables give a fused model, runs a teacher-forced pass of See et al.'s structure as one fused
autograd function, the attention of the other passes per pass (`step_attention`), the mlp score
blocked or compiled (`mlp_score`, given to GlobalAttention), the dropout masks from torch.rand and,
in a model built to decode in a chosen precision, the prepared LSTM gates (`_gates`).
"""
from dataclasses import dataclass, fields, replace
from typing import Optional

import torch
import torch.nn as nn

from onmt.interface import DecoderStateBase
from onmt.models.components import register_decoder
from onmt.models.rnn_encoder import RNN_TYPES
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.global_attention import GlobalAttention
from onmt.modules.lstm_step import lstm_step


@dataclass
class RNNDecoderState(DecoderStateBase):
    hidden: object                            # (L, B, H) tensor (GRU) or (h, c) pair (LSTM)
    memory: torch.Tensor                      # (B, S, H) encoder states
    mask: torch.Tensor                        # (B, S) True at real source positions
    keys: Optional[torch.Tensor] = None       # (B, S, H) precomputed attention keys
    input_feed: Optional[torch.Tensor] = None  # (B, H) previous attentional vector
    coverage: Optional[torch.Tensor] = None   # (B, S) sum of the previous attention distributions
    context: Optional[torch.Tensor] = None    # (B, H) fixed context (-global_attention none)
    src_ex: Optional[torch.Tensor] = None     # (B, S) extended-vocabulary ids (copy)
    first_pos: Optional[torch.Tensor] = None  # (B, S) first position holding the same word (copy)
    n_oov: int = 0                            # X = V_tgt + n_oov
    # G: rows decoding each stored source (a beam's: its width)
    source_rows: int = 1

    _batch_dims = {"hidden": 1}
    _source_fields = frozenset({"memory", "mask", "keys", "context", "src_ex", "first_pos"})


@dataclass
class DecoderOutput:
    """What the generators need; every tensor is (B, ...) for one step or (B, T, ...) for a
    sequence."""
    out: torch.Tensor                         # (B, H) attentional vector after dropout
    rnn_out: torch.Tensor                     # (B, H) top-layer RNN output (the decoder state)
    context: torch.Tensor                     # (B, H) context vector
    emb: torch.Tensor                         # (B, E) embedding of the decoder input
    attn: Optional[torch.Tensor] = None       # (B, S) attention
    coverage: Optional[torch.Tensor] = None   # (B, S) coverage before this step

    @staticmethod
    def stack(steps):
        """A list of T one-step outputs -> one output with (B, T, ...) tensors."""
        stacked = {}
        for f in fields(DecoderOutput):
            values = [getattr(s, f.name) for s in steps]
            stacked[f.name] = None if values[0] is None else torch.stack(values, dim=1)
        return DecoderOutput(**stacked)


def fit_layers(final, num_layers):
    """Adapt an encoder final state (L_enc, B, H) to the decoder's layer count.

    Keeps the top layers when the encoder is deeper; repeats its top layer when it is shallower.
    """
    if final is None:
        return None
    if isinstance(final, tuple):
        return tuple(fit_layers(x, num_layers) for x in final)
    L = final.size(0)
    if L >= num_layers:
        return final[L - num_layers:]
    return torch.cat([final, final[-1:].expand(num_layers - L, -1, -1)], dim=0)  # (L_dec, B, H)


@register_decoder("rnn")
class RNNDecoder(nn.Module):
    """Args:
        rnn_type: "LSTM" or "GRU".
        num_layers: stacked layers.
        hidden_size: H (equals the encoder output size).
        embeddings: an Embeddings module for target ids.
        attn_type: "none", "dot", "general" or "mlp".
        input_feed: feed the previous attentional vector (ignored with attn_type "none").
        coverage: coverage vector in the attention.
        dropout: between RNN layers and on the attentional vector.
        mlp_score: the mlp attention's score function (GlobalAttention's `mlp_score`; None: its
            own formula).
    """

    dropout_cls = nn.Dropout   # the attentional vector's dropout

    def __init__(self, rnn_type, num_layers, hidden_size, embeddings, attn_type="general",
                 input_feed=True, coverage=False, dropout=0.0, mlp_score=None):
        super().__init__()
        if coverage and attn_type == "none":
            raise ValueError("coverage needs attention")
        self.embeddings = embeddings
        self.num_layers, self.hidden_size = num_layers, hidden_size
        self.attn_type = attn_type
        self.input_feed = bool(input_feed) and attn_type != "none"
        self.coverage = coverage
        feed_size = hidden_size if (self.input_feed or attn_type == "none") else 0
        self.rnn = RNN_TYPES[rnn_type](
            input_size=embeddings.embedding_size + feed_size, hidden_size=hidden_size,
            num_layers=num_layers, dropout=dropout if num_layers > 1 else 0.0, batch_first=True)
        if attn_type == "none":
            self.attn = None
            self.linear_out = nn.Linear(2 * hidden_size, hidden_size)
        else:
            self.attn = GlobalAttention(hidden_size, attn_type, coverage=coverage,
                                        mlp_score=mlp_score)
        self.dropout = self.dropout_cls(dropout)

    @classmethod
    def from_opt(cls, opt, embeddings, **fixed):
        """The decoder of the model options (-rnn_type, -dec_layers, -rnn_size,
        -global_attention, -input_feed, -coverage_attn, -dropout); `fixed`: constructor arguments
        set by the builder (a fused class's execution)."""
        return cls(opt.rnn_type, opt.dec_layers, opt.rnn_size, embeddings,
                   attn_type=opt.global_attention, input_feed=bool(opt.input_feed),
                   coverage=opt.coverage_attn, dropout=opt.dropout, **fixed)

    def init_state(self, enc, src_ex=None, n_oov=0):
        """enc: EncoderOutput -> RNNDecoderState at the start of decoding."""
        B, S, H = enc.memory.shape
        hidden = fit_layers(enc.final, self.num_layers)
        top = hidden[0] if isinstance(hidden, tuple) else hidden
        zeros = enc.memory.new_zeros
        return RNNDecoderState(
            hidden=hidden, memory=enc.memory, mask=enc.mask,
            keys=self.attn.precompute_keys(enc.memory) if self.attn is not None else None,
            input_feed=zeros(B, H) if self.input_feed else None,  # (B, H)
            coverage=zeros(B, S) if self.coverage else None,  # (B, S)
            context=top[-1] if self.attn is None else None,  # (B, H)
            src_ex=src_ex, first_pos=first_occurrence(src_ex) if src_ex is not None else None,
            n_oov=int(n_oov))

    def _rnn_input(self, emb, state):
        """emb (B, [T,] E) -> RNN input (B, [T,] E [+ H])."""
        feed = state.input_feed if self.input_feed else state.per_row("context")
        if feed is None:
            return emb
        if emb.dim() == 3:
            feed = feed.unsqueeze(1).expand(-1, emb.size(1), -1)  # (B, T, H)
        return torch.cat([emb, feed], dim=-1)

    def _attend(self, rnn_out, emb, state, coverage, step=None):
        """One step's output from the top-layer RNN output rnn_out (B, H); step: a StepAttention of
        this pass (onmt/fused/step_attention.py) or None."""
        if self.attn is None:
            context = state.per_row("context")  # (B, H)
            out = torch.tanh(self.linear_out(torch.cat([context, rnn_out], dim=-1)))  # (B, H)
            return DecoderOutput(out=self.dropout(out), rnn_out=rnn_out, context=context, emb=emb)
        out, attn, context = self.attn(rnn_out, state.memory, state.mask, keys=state.keys,
                                       coverage=coverage, step=step)
        return DecoderOutput(out=self.dropout(out), rnn_out=rnn_out, context=context, emb=emb,
                             attn=attn, coverage=coverage)

    def _next_coverage(self, coverage, attn):
        # See et al. eq. 10: c^t = sum_{t'<t} a^t'
        return coverage + attn if coverage is not None else None

    def step(self, emb, state, attention=None):
        """emb (B, E) embedding of the previous token -> (DecoderOutput of (B, ...), new state);
        attention: a `step_attention(state)` of this pass, or None (the plain attention)."""
        if isinstance(self.rnn, nn.LSTM):  # the cell equations: a per-step nn.LSTM call costs more
            x = self._rnn_input(emb, state)  # (B, E [+ H])
            rnn_out, hidden = lstm_step(self.rnn, x, state.hidden, self._gates(x, state.hidden))
        else:
            rnn_out, hidden = self.rnn(self._rnn_input(emb, state).unsqueeze(1), state.hidden)
            rnn_out = rnn_out.squeeze(1)  # (B, H)
        dec = self._attend(rnn_out, emb, state, state.coverage, attention)
        new_state = replace(state, hidden=hidden,
                            input_feed=dec.out if self.input_feed else state.input_feed,
                            coverage=self._next_coverage(state.coverage, dec.attn))
        return dec, new_state

    def _gates(self, x, hidden):
        """An LSTM step's gates, or None: the cell computes them (lstm_step)."""
        return None

    def step_attention(self, state):
        """The attention's per-pass products for a teacher-forced pass from `state`, or None: the
        attention's own, step by step."""
        return None

    def forward(self, emb, state):
        """Teacher forcing. emb (B, T, E) -> (DecoderOutput of (B, T, ...), final state).

        Without input feeding the RNN runs over the whole sequence at once and only the attention
        loops over steps; the numbers equal those of T calls to step().
        """
        attention = self.step_attention(state)
        if self.input_feed:
            steps = []
            for t in range(emb.size(1)):
                dec, state = self.step(emb[:, t], state, attention)
                steps.append(dec)
            return DecoderOutput.stack(steps), state
        rnn_out, hidden = self.rnn(self._rnn_input(emb, state), state.hidden)  # (B, T, H)
        coverage, steps = state.coverage, []
        for t in range(emb.size(1)):
            dec = self._attend(rnn_out[:, t], emb[:, t], state, coverage, attention)
            coverage = self._next_coverage(coverage, dec.attn)
            steps.append(dec)
        return DecoderOutput.stack(steps), replace(state, hidden=hidden, coverage=coverage)
