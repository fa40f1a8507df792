"""GRU/LSTM encoder over packed sequences; -brnn concatenates the two directions per layer.

The plain class; FusedRNNEncoder (onmt/models/fused.py) lowers the RNN of a model decoding at
-precision bf16 / int8."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from onmt.interface import EncoderOutput
from onmt.models.components import register_encoder

RNN_TYPES = {"LSTM": nn.LSTM, "GRU": nn.GRU}      # -rnn_type -> torch module (the decoders' too)


@register_encoder("rnn")
class RNNEncoder(nn.Module):
    """Embeds source ids and runs a (bi)directional RNN.

    Args:
        rnn_type: "LSTM" or "GRU".
        num_layers: stacked layers.
        hidden_size: output size H; each direction gets H/2 when bidirectional.
        embeddings: an Embeddings module (ids -> (B, S, E)).
        bidirectional: -brnn.
        dropout: dropout between layers.
        bridge: -bridge, OpenNMT-py's: each final state s (L, B, H) becomes
            relu(W [s_1; ..; s_L] + b) per example (one W (LH, LH) per state: h, and c for an LSTM),
            split back into L layers. (OpenNMT-py reshapes the (L*dirs, B, H/dirs) tensor without
            transposing, which mixes examples when it has more than one layer or direction; here the
            layers of one example are concatenated.)
    """

    def __init__(self, rnn_type, num_layers, hidden_size, embeddings, bidirectional=False,
                 dropout=0.0, bridge=False):
        super().__init__()
        if bidirectional and hidden_size % 2:
            raise ValueError("a bidirectional encoder needs an even hidden size, "
                             f"got {hidden_size}")
        self.embeddings = embeddings
        self.rnn_type, self.num_layers, self.bidirectional = rnn_type, num_layers, bidirectional
        self.hidden_size = hidden_size
        n_dir = 2 if bidirectional else 1
        self.rnn = RNN_TYPES[rnn_type](
            input_size=embeddings.embedding_size, hidden_size=hidden_size // n_dir,
            num_layers=num_layers, dropout=dropout if num_layers > 1 else 0.0,
            bidirectional=bidirectional, batch_first=True)
        if bridge:
            n_states = 2 if rnn_type == "LSTM" else 1
            self.bridge = nn.ModuleList(nn.Linear(num_layers * hidden_size,
                                                  num_layers * hidden_size)
                                        for _ in range(n_states))
        else:
            self.bridge = None

    @classmethod
    def from_opt(cls, opt, embeddings, **fixed):
        """The encoder of the model options (-rnn_type, -enc_layers, -rnn_size, -brnn, -dropout,
        -bridge); `fixed`: constructor arguments the model (or the builder: a fused class's
        execution) sets itself, over the options'."""
        args = dict(rnn_type=opt.rnn_type, bidirectional=opt.brnn, dropout=opt.dropout,
                    bridge=opt.bridge)
        args.update(fixed)
        return cls(args.pop("rnn_type"), opt.enc_layers, opt.rnn_size, embeddings, **args)

    def _bridge(self, linear, s):
        """(L, B, H) -> (L, B, H): relu(linear([s_1; ..; s_L])) per example."""
        L, B, H = s.shape
        out = torch.relu(linear(s.transpose(0, 1).reshape(B, L * H)))  # (B, L*H)
        return out.view(B, L, H).transpose(0, 1).contiguous()  # (L, B, H)

    def _merge_directions(self, h):
        """(L*2, B, H/2) -> (L, B, H): [forward; backward] per layer."""
        if not self.bidirectional:
            return h
        L2, B, half = h.shape
        h = h.view(L2 // 2, 2, B, half)  # (L, 2, B, H/2)
        return torch.cat([h[:, 0], h[:, 1]], dim=-1)  # (L, B, H)

    def _run_rnn(self, packed):
        """self.rnn on a packed sequence."""
        return self.rnn(packed)

    def forward(self, src, lengths):
        """src (B, S) ids, lengths (B,) >= 1 -> EncoderOutput(memory (B, S, H), final (L, B, H),
        mask)."""
        S = src.size(1)
        emb = self.embeddings(src)  # (B, S, E)
        packed = pack_padded_sequence(emb, lengths.detach().cpu().clamp_min(1), batch_first=True,
                                      enforce_sorted=False)
        out, final = self._run_rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, H)
        if isinstance(final, tuple):
            final = tuple(self._merge_directions(x) for x in final)  # (h, c), each (L, B, H)
        else:
            final = self._merge_directions(final)  # (L, B, H)
        if self.bridge is not None:
            final = (tuple(self._bridge(lin, x) for lin, x in zip(self.bridge, final))
                     if isinstance(final, tuple) else self._bridge(self.bridge[0], final))
        positions = torch.arange(S, device=src.device).unsqueeze(0)  # (1, S)
        mask = positions < lengths.to(src.device).unsqueeze(1)  # (B, S)
        return EncoderOutput(memory=memory, final=final, mask=mask)
