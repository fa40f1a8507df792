"""Output layers: a plain softmax generator and See et al.'s pointer-generator.

Both take a DecoderOutput (one step (B, ...) or a sequence (B, T, ...)) and return log-probabilities
in float32. The vocabulary projection never gives mass to <blank> (PAD).

Pointer-generator:
    p_gen = sigmoid(w [c_t; h_t; x_t] + b)        context, decoder state, decoder input embedding
    P(w)  = p_gen * softmax(W h~_t)(w)  +  (1 - p_gen) * sum_{i: src_ex_i = w} a_ti
over the extended vocabulary X = V_tgt + n_oov, the copy part being one scatter_add over (B, S)
indices. Source padding has attention exactly 0, so it adds nothing where it is scattered.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.inputters.vocab import PAD

LOG_FLOOR = 1e-20  # probabilities are clamped here before the log (no log(0))


def _vocab_logits(linear, out):
    """W h~ in float32 with the PAD column pushed to the lowest value: (B, [T,] V)."""
    logits = linear(out).float()
    pad_col = torch.zeros(logits.size(-1), dtype=torch.bool, device=logits.device)
    pad_col[PAD] = True
    return logits.masked_fill(pad_col, torch.finfo(torch.float32).min)


class Generator(nn.Module):
    """log_softmax(W h~ + b) over the target vocabulary."""

    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, dec, src_ex=None, n_oov=0):
        """dec: DecoderOutput -> (B, [T,] V) log-probabilities (src_ex and n_oov are ignored)."""
        return torch.log_softmax(_vocab_logits(self.linear, dec.out), dim=-1)


class CopyGenerator(nn.Module):
    """See et al.'s pointer-generator.

    Args:
        hidden_size: size of the attentional vector h~ (and of the context and decoder state).
        vocab_size: V_tgt.
        emb_size: size of the decoder input embedding x_t.
    """

    def __init__(self, hidden_size, vocab_size, emb_size):
        super().__init__()
        self.vocab_size = vocab_size
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.switch = nn.Linear(2 * hidden_size + emb_size, 1)

    def p_gen(self, dec):
        """(B, [T,] 1) probability of generating from the vocabulary."""
        features = torch.cat([dec.context, dec.rnn_out, dec.emb], dim=-1)  # (B, [T,] 2H+E)
        return torch.sigmoid(self.switch(features).float())

    def forward(self, dec, src_ex, n_oov):
        """dec: DecoderOutput with attention, src_ex (B, S) -> (B, [T,] X) log-probabilities."""
        p_gen = self.p_gen(dec)  # (B, [T,] 1)
        gen = torch.softmax(_vocab_logits(self.linear, dec.out), dim=-1) * p_gen  # (B, [T,] V)
        if n_oov > 0:
            gen = F.pad(gen, (0, n_oov))  # (B, [T,] X)
        copy = (1.0 - p_gen) * dec.attn.float()  # (B, [T,] S)
        index = src_ex if copy.dim() == 2 else src_ex.unsqueeze(1).expand_as(copy)  # (B, [T,] S)
        probs = gen.scatter_add(-1, index, copy)  # (B, [T,] X)
        return probs.clamp_min(LOG_FLOOR).log()
