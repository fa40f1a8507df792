"""One step of a stacked nn.LSTM from its cell equations, for decoders that run one step at a time.

On CPU a call of nn.LSTM for a single time step (and its backward) costs several times more than the
cell math written with two addmm per layer (measured: 2.3 ms forward and 4.0 ms backward per step for
nn.LSTM at batch 16, input 384, hidden 256, against a fraction of that here). Same parameters and
equations as the module (PyTorch's gate order i, f, g, o), so the values match it to float32 rounding.

Decoding (no autograd, the module in eval mode, a model whose decoding precision was set: translate.py,
the API): each layer's gates are ONE product [x ; h] [W_ih ; W_hh]^T + (b_ih + b_hh), its weight
concatenated and prepared once per set of parameters in the model's decoding precision (packed float32,
bf16 or int8; the gates come back float32 and the cell math stays float32), instead of two addmm and an
add per layer and step. `packed_linear.set_decoding_precision` (onmt/fused/, which this package may not
import) puts the provider of those products on the module, under DECODING_GATES_ATTR. Measured at 150 rows, input
128, hidden 256, one thread: 1.38 ms per step for the two addmm, 1.22 packed float32, 0.75 bf16, 0.45 int8.
"""
import torch
import torch.nn as nn

DECODING_GATES_ATTR = "_decoding_gates"   # rnn -> [per layer: (B, E+H) -> (B, 4H) float32], set from onmt/fused


def _cell(gates, c_prev):
    """gates (B, 4H), c_prev (B, H) -> h, c (B, H) each: PyTorch's LSTM cell (gate order i, f, g, o)."""
    i, f, g, o = gates.chunk(4, dim=1)  # (B, H) each
    c = torch.sigmoid(f) * c_prev + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
    return torch.sigmoid(o) * torch.tanh(c), c  # (B, H) x2


def lstm_step(rnn, x, hidden):
    """rnn: an nn.LSTM (batch_first or not; no projections, unidirectional); x (B, E) this step's input;
    hidden (h, c) each (L, B, H). Returns the top layer's h (B, H) and the new (h, c), each (L, B, H).
    Dropout between layers as the module applies it (rnn.dropout, only in training mode). Without
    autograd, in eval mode, with float32 inputs, the gates come from the prepared products (above)."""
    h_prev, c_prev = hidden
    products, provider = None, rnn.__dict__.get(DECODING_GATES_ATTR)
    decoding = provider is not None and not (torch.is_grad_enabled() or rnn.training)
    if decoding and x.dtype == h_prev.dtype == torch.float32:
        products = provider(rnn)
    hs, cs = [], []
    for layer in range(rnn.num_layers):
        if layer > 0 and rnn.training and rnn.dropout > 0:
            x = nn.functional.dropout(x, rnn.dropout, training=True)
        if products is not None:
            gates = products[layer](torch.cat([x, h_prev[layer]], dim=1))  # (B, 4H) float32
        else:
            w_ih, w_hh, b_ih, b_hh = (getattr(rnn, f"{name}_l{layer}")
                                      for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            gates = torch.addmm(b_ih, x, w_ih.t()) + torch.addmm(b_hh, h_prev[layer], w_hh.t())  # (B, 4H)
        x, c = _cell(gates, c_prev[layer])  # (B, H) x2
        hs.append(x)
        cs.append(c)
    return x, (torch.stack(hs), torch.stack(cs))  # (B, H), (L, B, H) x2
