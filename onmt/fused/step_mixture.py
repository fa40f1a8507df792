"""The pointer-generator's full distribution at one decoding step, without autograd (beam search).

Beam search needs log p over the whole extended vocabulary for every live row (B*K rows) at every
step: Paulus et al. eqs. 9-12, which `PointerGenerator.forward` computes plainly with `F.linear` over
the padded (X, 3H) W_out. Here the (N, V) generation logits come from W_out packed once per batch
for oneDNN (packed_linear.py; 1.5-3x faster than addmm for these few hundred rows on CPU), and the
softmax is written in cache-sized row blocks into the (N, X) output (copy_mixture.generation_log_probs),
then the copy mass is scattered in place. Same values as the plain forward up to float32 rounding of
the product's summation order.
"""
import torch
import torch.nn.functional as F

from onmt.modules.copy_mixture import generation_log_probs, scatter_mixture
from onmt.modules.precision import float32_region, widen


@torch.no_grad()
def pointer_generator_step_log_probs(generator, o, attn, src_ex, first_pos, n_oov, packed):
    """`generator(o, attn, src_ex, first_pos, n_oov, return_p_copy=True)` without autograd.

    generator: a PointerGenerator; o (N, D); attn (N, S); src_ex, first_pos (N, S); n_oov: extended
    slots beyond V_tgt; packed: `gold_mixture.packed_out_weight(generator)` (a PackedLinear of the
    unpadded W_out, b_out). Returns log p (N, X) and p(u=1) (N,).
    """
    with float32_region(o):
        o, attn = widen(o), widen(attn)
        logits = packed(o)  # (N, V) (9) W_out o_t + b_out
        switch = generator.switch(o)  # (N, 1) (11) the logit of p(u=1)
        log_copy_switch, log_gen_switch = F.logsigmoid(switch), F.logsigmoid(-switch)  # (N, 1) x2
        gen = generation_log_probs(logits, log_gen_switch, n_oov)  # (N, X) log p(u=0) p(y | u=0)
        logp = scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos)  # (N, X) (10) and (12)
        return logp, log_copy_switch.squeeze(1).exp()  # (N, X), (N,)
