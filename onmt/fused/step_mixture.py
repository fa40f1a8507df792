"""The pointer-generators' full distribution at one decoding step, without autograd (beam search).

Beam search needs log p over the whole extended vocabulary for every live row (B*K rows) at every
step: Paulus et al. eqs. 9-12, which `PointerGenerator.forward` computes plainly with `F.linear`
over the padded (X, 3H) W_out (FusedPointerGenerator.step_log_probs, onmt/reinforced/fused.py, calls
these on its pieces). Here the (N, V) generation logits come from W_out packed once per
batch for oneDNN (packed_linear.py; 1.5-3x faster than addmm for these few hundred rows on CPU), and
the softmax is written in cache-sized row blocks (on the CPU; one block elsewhere) into the (N, X)
output (`generation_log_probs`), then the copy mass is scattered in place (`scatter_mixture`). Same
values as the plain forward up to float32 rounding of the product's summation order. See et al.'s
CopyGenerator, built with fused kernels, decodes through the same two functions (given to it as
`generation` and `scatter`); under autograd they are the plain formulas of
onmt/modules/copy_mixture.py. The searches ask a step for bans, its top K and best token only: the
fused subclasses' step scores (FusedPointerGenerator.step_scores, onmt/models/fused.py's
copy_step_scores) give the same step as a mixture_scores.MixtureScores, without the (N, X) output
written.
"""
import torch

from onmt.execution import gradients_wanted
from onmt.fused.kernels import block_rows
from onmt.modules import copy_mixture
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, mix_at_sources

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
