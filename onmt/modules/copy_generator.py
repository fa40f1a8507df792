"""Output layers: a plain softmax generator and See et al.'s pointer-generator.

Both take a DecoderOutput (one step (B, ...) or a sequence (B, T, ...)) and return log-probabilities
in float32. The vocabulary projection never gives mass to <blank> (PAD).

Precision: each generator is a float32 island (onmt/modules/precision.py): under autocast (-amp) the
decoder's outputs arrive in bfloat16 / float16 and are widened on entry, so the vocabulary product
W h~ + b, the switch, the log-softmax and the copy mixture all run in float32.

Pointer-generator:
    p_gen = sigmoid(w [c_t; h_t; x_t] + b)        context, decoder state, decoder input embedding
    P(w)  = p_gen * softmax(W h~_t)(w)  +  (1 - p_gen) * sum_{i: src_ex_i = w} a_ti
over the extended vocabulary X = V_tgt + n_oov, computed in log space by copy_mixture.py (one
scatter_add over (B, S) indices for duplicated source words, one scatter back into the (B, X)
log-probabilities). Source padding has attention exactly 0, so it adds nothing.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.constants import PAD
from onmt.modules.copy_mixture import first_occurrence, generation_log_probs, gold_mixture, scatter_mixture
from onmt.modules.precision import float32_region, widen


def _vocab_logits(linear, out):
    """W h~ in float32 with the PAD column pushed to the lowest value: (B, [T,] V). Call inside a float32
    region with a widened `out`."""
    logits = linear(out).float()
    logits[..., PAD] = torch.finfo(torch.float32).min  # in place: the projection's output is fresh
    return logits


class TiedLinear(nn.Module):
    """x -> x E[:V]^T + b: a vocabulary projection whose matrix is the first V rows of an embedding's
    (-share_decoder_embeddings). The embedding is not a submodule here (its owner, the decoder, holds
    it), so the state dict has it once; this module's own parameter is the bias."""

    def __init__(self, embeddings, vocab_size):
        super().__init__()
        self._embeddings = (embeddings,)   # a tuple: not registered as a submodule
        self.vocab_size = vocab_size
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    @property
    def weight(self):
        return self._embeddings[0].weight[:self.vocab_size]  # (V, E) view of the embedding's rows

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


def vocab_projection(hidden_size, vocab_size, tied_embeddings=None):
    """nn.Linear(hidden_size, vocab_size), or a TiedLinear on `tied_embeddings` when given."""
    if tied_embeddings is None:
        return nn.Linear(hidden_size, vocab_size)
    if tied_embeddings.embedding_size != hidden_size:
        raise ValueError(f"a tied projection needs embeddings of size {hidden_size}, got {tied_embeddings.embedding_size}")
    return TiedLinear(tied_embeddings, vocab_size)


class Generator(nn.Module):
    """log_softmax(W h~ + b) over the target vocabulary (W the decoder embedding with `tied_embeddings`)."""

    def __init__(self, hidden_size, vocab_size, tied_embeddings=None):
        super().__init__()
        self.linear = vocab_projection(hidden_size, vocab_size, tied_embeddings)

    def forward(self, dec, src_ex=None, n_oov=0, first_pos=None):
        """dec: DecoderOutput -> (B, [T,] V) log-probabilities (the copy arguments are ignored)."""
        with float32_region(dec.out):
            return torch.log_softmax(_vocab_logits(self.linear, widen(dec.out)), dim=-1)


class CopyGenerator(nn.Module):
    """See et al.'s pointer-generator.

    Args:
        hidden_size: size of the attentional vector h~ (and of the context and decoder state).
        vocab_size: V_tgt.
        emb_size: size of the decoder input embedding x_t.
    """

    def __init__(self, hidden_size, vocab_size, emb_size, tied_embeddings=None):
        super().__init__()
        self.vocab_size = vocab_size
        self.linear = vocab_projection(hidden_size, vocab_size, tied_embeddings)
        self.switch = nn.Linear(2 * hidden_size + emb_size, 1)

    def forward(self, dec, src_ex, n_oov, first_pos=None, return_p_copy=False):
        """dec: DecoderOutput with attention, src_ex (B, S) -> (B, [T,] X) log-probabilities, and
        with `return_p_copy` also the pointer's probability 1 - p_gen (B, [T]) (no gradient).
        first_pos (B, S): first_occurrence(src_ex), computed here when not given.

        Log space (onmt/modules/copy_mixture.py): log p_gen + log_softmax over V, the OOV slots at
        IMPOSSIBLE, and the mixture with the copy distribution written at the source positions.
        """
        with float32_region(dec.out):
            features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)  # (B, [T,] 2H+E)
            switch = self.switch(features).float()  # (B, [T,] 1) logit of p_gen
            logits = _vocab_logits(self.linear, widen(dec.out))  # (B, [T,] V)
            shape = logits.shape[:-1]
            V, S = logits.size(-1), src_ex.size(-1)
            logits = logits.reshape(-1, V)  # (N, V)
            switch = switch.reshape(-1, 1)  # (N, 1)
            attn = dec.attn.float().reshape(-1, S)  # (N, S)
            if first_pos is None:
                first_pos = first_occurrence(src_ex)  # (B, S)
            if len(shape) == 2:  # a sequence: every step reads the same source
                src_ex = src_ex.unsqueeze(1).expand(*shape, S).reshape(-1, S)  # (N, S)
                first_pos = first_pos.unsqueeze(1).expand(*shape, S).reshape(-1, S)  # (N, S)
            gen = generation_log_probs(logits, F.logsigmoid(switch), n_oov)  # (N, X) log p_gen + log softmax
            logp = scatter_mixture(gen, F.logsigmoid(-switch), attn, src_ex, first_pos)
            if return_p_copy:
                return logp.view(*shape, -1), torch.sigmoid(-switch.detach()).view(shape)  # (B, [T,] X), (B, [T])
            return logp.view(*shape, -1)  # (B, [T,] X)

    def gold_log_prob(self, dec, src_ex, first_pos, gold, return_p_copy=False):
        """The training path: log p(gold) (B, T) and the argmax (B, T) of the mixture for a teacher-
        forced sequence, without the (B, T, X) distribution (copy_mixture.gold_mixture); same
        values and gradients as `forward(...)` gathered at gold. dec: DecoderOutput (B, T, ...);
        src_ex, first_pos (B, S); gold (B, T) extended ids. With `return_p_copy` also 1 - p_gen
        (B, T) (no gradient)."""
        B, T = gold.shape
        S = src_ex.size(-1)
        with float32_region(dec.out):
            features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)  # (B, T, 2H+E)
            gen_logit = self.switch(features).float().reshape(B * T, 1)  # (B*T, 1)
            pad_col = torch.zeros_like(self.linear.bias, dtype=torch.bool)
            pad_col[PAD] = True
            bias = self.linear.bias.masked_fill(pad_col, torch.finfo(torch.float32).min)  # PAD never generated

            def rows(x):
                return x.unsqueeze(1).expand(B, T, S).reshape(B * T, S)  # (B*T, S)
            ll, pred = gold_mixture(widen(dec.out).reshape(B * T, -1), self.linear.weight, bias, gen_logit,
                                    dec.attn.float().reshape(B * T, S), rows(src_ex), rows(first_pos),
                                    gold.reshape(B * T))
            if return_p_copy:
                return ll.view(B, T), pred.view(B, T), torch.sigmoid(-gen_logit.detach()).view(B, T)  # (B, T)
            return ll.view(B, T), pred.view(B, T)
