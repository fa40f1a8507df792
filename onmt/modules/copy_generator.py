"""Output layers: a plain softmax generator and See et al.'s pointer-generator.

Both take a DecoderOutput (one step (B, ...) or a sequence (B, T, ...)) and return log-probabilities
in float32. The vocabulary projection never gives mass to <blank> (PAD).

Precision: each generator's forward is a float32 island (onmt/modules/precision.py): under autocast
(-amp) the decoder's outputs arrive in bfloat16 / float16 and are widened on entry, so the
vocabulary product W h~ + b, the switch, the log-softmax and the copy mixture all run in float32.
The fused training path (onmt/fused/gold_mixture.py) runs the vocabulary products in autocast's
precision instead, their results widened at once (the -amp speed: they are most of a step's FLOPs).

Pointer-generator (See et al. 2017; the attention a_t, eqs. 1-3 and 11, is global_attention.py's):
    P_vocab = softmax(W h~_t + b)                  eq. 4 (h~_t Luong's attentional vector,
                                                   not V[s_t, h*_t])
    p_gen = sigmoid(w [c_t; h_t; x_t] + b)        eq. 8: context, decoder state, decoder input
                                                  embedding
    P(w)  = p_gen * P_vocab(w)  +  (1 - p_gen) * sum_{i: src_ex_i = w} a_ti        eq. 9
over the extended vocabulary X = V_tgt + n_oov, computed in log space by copy_mixture.py (one
scatter_add over (B, S) indices for duplicated source words, one scatter back into the (B, X)
log-probabilities). Source padding has attention exactly 0, so it adds nothing.
`CopyGenerator.forward` is the plain formula; the training path that needs log P(w*) only (eq. 6) is
onmt/models/fused.py's `copy_gold_log_prob` (on onmt/fused/gold_mixture.py), tested against it, and
the fused copy model (FusedCopyNMTModel) gives the CopyGenerator decoding's versions of the two
mixture functions (onmt/fused/step_mixture.py: row blocks, in place, the plain formulas under
autograd).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.constants import PAD
from onmt.modules.copy_mixture import (
    first_occurrence,
    generation_log_probs,
    repeat_per_step,
    scatter_mixture,
)
from onmt.modules.precision import float32_region, widen


def vocab_logits(linear, out):
    """W h~ in float32 with the PAD column pushed to the lowest value: (B, [T,] V). Call inside a
    float32 region with a widened `out`."""
    logits = linear(out).float()
    logits[..., PAD] = torch.finfo(torch.float32).min  # in place: the projection's output is fresh
    return logits


class TiedLinear(nn.Module):
    """x -> x E[:V]^T + b: a vocabulary projection whose matrix is the first V rows of an
    embedding's (-share_decoder_embeddings). The embedding is not a submodule here (its owner, the
    decoder, holds it), so the state dict has it once; this module's own parameter is the bias."""

    def __init__(self, embeddings, tgt_vocab_size):
        super().__init__()
        self._embeddings = (embeddings,)   # a tuple: not registered as a submodule
        self.tgt_vocab_size = tgt_vocab_size
        self.bias = nn.Parameter(torch.zeros(tgt_vocab_size))

    @property
    def weight(self):
        # (V, E) view of the embedding's rows
        return self._embeddings[0].weight[:self.tgt_vocab_size]

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


def vocab_projection(hidden_size, tgt_vocab_size, tied_embeddings=None):
    """nn.Linear(hidden_size, tgt_vocab_size), or a TiedLinear on `tied_embeddings` when given."""
    if tied_embeddings is None:
        return nn.Linear(hidden_size, tgt_vocab_size)
    if tied_embeddings.embedding_size != hidden_size:
        raise ValueError(f"a tied projection needs embeddings of size {hidden_size}, "
                         f"got {tied_embeddings.embedding_size}")
    return TiedLinear(tied_embeddings, tgt_vocab_size)


class Generator(nn.Module):
    """log_softmax(W h~ + b) over the target vocabulary (W the decoder embedding with
    `tied_embeddings`)."""

    def __init__(self, hidden_size, tgt_vocab_size, tied_embeddings=None):
        super().__init__()
        self.linear = vocab_projection(hidden_size, tgt_vocab_size, tied_embeddings)

    def forward(self, dec, src_ex=None, n_oov=0, first_pos=None, linear=None):
        """dec: DecoderOutput -> (B, [T,] V) log-probabilities (the copy arguments are ignored).
        linear: a callable computing what `self.linear` computes (decoding passes a packed copy)."""
        with float32_region(dec.out):
            return torch.log_softmax(vocab_logits(self.linear if linear is None else linear,
                                                  widen(dec.out)), dim=-1)


class CopyGenerator(nn.Module):
    """See et al.'s pointer-generator.

    Args:
        hidden_size: size of the attentional vector h~ (and of the context and decoder state).
        tgt_vocab_size: V_tgt.
        emb_size: size of the decoder input embedding x_t.
        generation, scatter: copy_mixture's generation_log_probs and scatter_mixture, or functions
            computing the same values (a model built with fused kernels gives
            onmt/fused/step_mixture.py's).
    """

    def __init__(self, hidden_size, tgt_vocab_size, emb_size, tied_embeddings=None,
                 generation=generation_log_probs, scatter=scatter_mixture):
        super().__init__()
        self.tgt_vocab_size = tgt_vocab_size
        self._generation, self._scatter = generation, scatter
        self.linear = vocab_projection(hidden_size, tgt_vocab_size, tied_embeddings)
        self.switch = nn.Linear(2 * hidden_size + emb_size, 1)  # eq. 8: w_h*, w_s, w_x, b_ptr

    def forward(self, dec, src_ex, n_oov, first_pos=None, return_p_copy=False, linear=None):
        """dec: DecoderOutput with attention, src_ex (B, S) -> (B, [T,] X) log-probabilities, and
        with `return_p_copy` also the pointer's probability 1 - p_gen (B, [T]) (no gradient).
        first_pos (B, S): first_occurrence(src_ex), computed here when not given. linear: a callable
        computing what `self.linear` computes (decoding passes a packed copy of its weight).

        Log space (onmt/modules/copy_mixture.py): log p_gen + log_softmax over V, the OOV slots at
        IMPOSSIBLE, and the mixture with the copy distribution written at the source positions.
        """
        with float32_region(dec.out):
            # (B, [T,] 2H+E)
            features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)
            switch = self.switch(features).float()  # (B, [T,] 1) logit of p_gen (eq. 8)
            proj = self.linear if linear is None else linear
            logits = vocab_logits(proj, widen(dec.out))  # (B, [T,] V) eq. 4 before the softmax
            shape = logits.shape[:-1]
            V, S = logits.size(-1), src_ex.size(-1)
            logits = logits.reshape(-1, V)  # (N, V)
            switch = switch.reshape(-1, 1)  # (N, 1)
            attn = dec.attn.float().reshape(-1, S)  # (N, S)
            if first_pos is None:
                first_pos = first_occurrence(src_ex)  # (B, S)
            if len(shape) == 2:  # a sequence: every step reads the same source
                # (N, S)
                src_ex, first_pos = (repeat_per_step(src_ex, shape[1]),
                                     repeat_per_step(first_pos, shape[1]))
            # (N, X) log p_gen P_vocab (eq. 4)
            gen = self._generation(logits, F.logsigmoid(switch), n_oov)
            # (N, X) eq. 9
            logp = self._scatter(gen, F.logsigmoid(-switch), attn, src_ex, first_pos)
            if return_p_copy:
                # (B, [T,] X), (B, [T])
                return logp.view(*shape, -1), torch.sigmoid(-switch.detach()).view(shape)
            return logp.view(*shape, -1)  # (B, [T,] X)
