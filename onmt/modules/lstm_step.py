"""One step of a stacked nn.LSTM from its cell equations, for decoders that run one step at a time.

On CPU a call of nn.LSTM for a single time step (and its backward) costs several times more than the
cell math written with two addmm per layer (measured: 2.3 ms forward and 4.0 ms backward per step
for nn.LSTM at batch 16, input 384, hidden 256, against a fraction of that here). Same parameters
and equations as the module (PyTorch's gate order i, f, g, o), so the values match it to float32
rounding.

A decoder built with fused kernels may pass `gates`: per layer, a prepared layer whose call gives
the pre-activations of [x ; h] as one product of the same weights and whose `cell(z, c)` evaluates
the cell on them (onmt/fused/low_precision.py `decoding_gates`, DecodingLSTMLayer: prepared once in
the model's decoding precision, while decoding only).
"""
import torch
import torch.nn as nn


def _cell(gates, c_prev):
    """gates (B, 4H), c_prev (B, H) -> h, c (B, H) each: PyTorch's LSTM cell
    (gate order i, f, g, o)."""
    i, f, g, o = gates.chunk(4, dim=1)  # (B, H) each
    c = torch.sigmoid(f) * c_prev + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
    return torch.sigmoid(o) * torch.tanh(c), c  # (B, H) x2


def lstm_step(rnn, x, hidden, gates=None):
    """rnn: an nn.LSTM (batch_first or not; no projections, unidirectional); x (B, E) this step's
    input; hidden (h, c) each (L, B, H). Returns the top layer's h (B, H) and the new (h, c), each
    (L, B, H). Dropout between layers as the module applies it (rnn.dropout, only in training mode).
    gates: per layer, a prepared layer (above: its call and its `cell`), or None."""
    h_prev, c_prev = hidden
    hs, cs = [], []
    for layer in range(rnn.num_layers):
        if layer > 0 and rnn.training and rnn.dropout > 0:
            x = nn.functional.dropout(x, rnn.dropout, training=True)
        if gates is not None:
            prepared = gates[layer]
            # (B, H) x2
            x, c = prepared.cell(prepared(torch.cat([x, h_prev[layer]], dim=1)), c_prev[layer])
        else:
            w_ih, w_hh, b_ih, b_hh = (getattr(rnn, f"{name}_l{layer}")
                                      for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            # (B, 4H)
            z = torch.addmm(b_ih, x, w_ih.t()) + torch.addmm(b_hh, h_prev[layer], w_hh.t())
            x, c = _cell(z, c_prev[layer])  # (B, H) x2
        hs.append(x)
        cs.append(c)
    return x, (torch.stack(hs), torch.stack(cs))  # (B, H), (L, B, H) x2
