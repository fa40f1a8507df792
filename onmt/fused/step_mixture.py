"""The pointer-generators' full distribution at one decoding step, without autograd (beam search).

Beam search needs log p over the whole extended vocabulary for every live row (B*K rows) at every
step: Paulus et al. eqs. 9-12, which `PointerGenerator.forward` computes plainly with `F.linear`
over the padded (X, 3H) W_out. Here the (N, V) generation logits come from W_out packed once per
batch for oneDNN (packed_linear.py; 1.5-3x faster than addmm for these few hundred rows on CPU), and
the softmax is written in cache-sized row blocks (on the CPU; one block elsewhere) into the (N, X)
output (`generation_log_probs`), then the copy mass is scattered in place (`scatter_mixture`). Same
values as the plain forward up to float32 rounding of the product's summation order. See et al.'s
CopyGenerator, built with fused kernels, decodes through the same two functions (given to it as
`generation` and `scatter`); under autograd they are the plain formulas of
onmt/modules/copy_mixture.py. The searches ask a step for bans, its top K and best token only:
`pointer_generator_step_scores` and `copy_generator_step_scores` give the same step as a
mixture_scores.MixtureScores, without the (N, X) output written.
"""
import torch
import torch.nn.functional as F

from onmt.execution import gradients_wanted
from onmt.fused.kernels import block_rows
from onmt.fused.mixture_scores import MixtureScores
from onmt.modules import copy_mixture
from onmt.modules.copy_generator import vocab_logits
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, mix_at_sources
from onmt.modules.precision import float32_region, widen

# elements of one block of the decoding-time softmax (~0.5 MB of float32 per block: it stays in
# cache)
SOFTMAX_BLOCK = 1 << 17


def generation_log_probs(logits, log_gen_switch, n_oov):
    """copy_mixture.generation_log_probs: log p(u=0) + log_softmax(logits) (N, X), the n_oov slots
    at IMPOSSIBLE. Without autograd it writes one output buffer in cache-sized row blocks instead of
    making several passes over the whole (N, X): log_softmax of the block (one fused kernel;
    logsumexp alone makes several passes), then the switch added on the way into the output, whose
    rows are X long: the same values up to float32 rounding. Under autograd, the plain formula."""
    if gradients_wanted():
        return copy_mixture.generation_log_probs(logits, log_gen_switch, n_oov)
    N, V = logits.shape
    out = logits.new_empty(N, V + n_oov)  # (N, X)
    out[:, V:] = IMPOSSIBLE
    rows = block_rows(logits.device, N, V, SOFTMAX_BLOCK)  # one block off the CPU
    for i in range(0, N, rows):  # blocks of rows, not examples: cache blocking
        blk = torch.log_softmax(logits[i:i + rows], dim=1)  # (r, V) in cache
        torch.add(blk, log_gen_switch[i:i + rows], out=out[i:i + rows, :V])
    return out


def scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos):
    """copy_mixture.scatter_mixture, written into `gen` (a fresh tensor) in place without autograd
    (the same values); under autograd, the plain formula."""
    if gradients_wanted():
        return copy_mixture.scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos)
    mixed = mix_at_sources(gen.gather(1, src_ex), log_copy_switch,
                           copy_at_sources(attn, first_pos))  # (N, S)
    return gen.scatter_(1, src_ex, mixed)  # (N, X), in place


@torch.no_grad()
def pointer_generator_step_log_probs(generator, o, attn, src_ex, first_pos, n_oov, packed):
    """`generator(o, attn, src_ex, first_pos, n_oov, return_p_copy=True)` without autograd.

    generator: a PointerGenerator; o (N, D); attn (N, S); src_ex, first_pos (N, S); n_oov: extended
    slots beyond V_tgt; packed: `gold_mixture.packed_out_weight(generator)` (a PackedLinear of the
    unpadded W_out, b_out). Returns log p (N, X) and p(u=1) (N,).
    """
    with float32_region(o):
        logits, attn, log_copy_switch, log_gen_switch = _pointer_generator_step(
            generator, o, attn, packed)
        gen = generation_log_probs(logits, log_gen_switch, n_oov)  # (N, X) log p(u=0) p(y | u=0)
        # (N, X) (10) and (12)
        logp = scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos)
        return logp, log_copy_switch.squeeze(1).exp()  # (N, X), (N,)


@torch.no_grad()
def pointer_generator_step_scores(generator, o, attn, src_ex, first_pos, n_oov, packed):
    """`pointer_generator_step_log_probs` as a mixture_scores.MixtureScores (the searches' top K
    without the (N, X) log-probabilities written) and p(u=1) (N,)."""
    with float32_region(o):
        logits, attn, log_copy_switch, log_gen_switch = _pointer_generator_step(
            generator, o, attn, packed)
        scores = MixtureScores(logits, log_gen_switch, log_copy_switch, attn, src_ex, first_pos,
                               n_oov)
        return scores, log_copy_switch.squeeze(1).exp()  # (N,)


def _pointer_generator_step(generator, o, attn, packed):
    """The step's float32 pieces, inside a float32 region: the logits (N, V) W_out o_t + b_out
    (eq. 9), the attention (N, S), log p(u=1) and log p(u=0) (N, 1) each (eq. 11)."""
    o, attn = widen(o), widen(attn)
    switch = generator.switch(o)  # (N, 1) (11) the logit of p(u=1)
    return packed(o), attn, F.logsigmoid(switch), F.logsigmoid(-switch)  # (N, V), (N, S), (N, 1) x2


@torch.no_grad()
def copy_generator_step_scores(generator, dec, src_ex, first_pos, n_oov, linear):
    """See et al.'s CopyGenerator at one decoding step (dec: its DecoderOutput, (N, ...)) as a
    mixture_scores.MixtureScores, and 1 - p_gen (N,). linear: the vocabulary projection to use
    (decoding's packed copy of generator.linear). The same switch, logits (PAD at the lowest value)
    and mixture as CopyGenerator.forward (eqs. 4, 8, 9)."""
    with float32_region(dec.out):
        # (N, 2H+E)
        features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)
        switch = generator.switch(features).float()  # (N, 1) logit of p_gen (eq. 8)
        logits = vocab_logits(linear, widen(dec.out))  # (N, V) eq. 4 before the softmax
        scores = MixtureScores(logits, F.logsigmoid(switch), F.logsigmoid(-switch),
                               dec.attn.float(), src_ex, first_pos, n_oov)
        return scores, torch.sigmoid(-switch).squeeze(1)  # (N,)
