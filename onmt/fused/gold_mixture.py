"""The pointer mixture's log p(gold) and argmax without the (N, X) distribution (docs/DESIGN.md
section 4).

Training needs log p(y*) of the mixture (Paulus et al. eq. 12, See et al. eq. 9) at the gold word
only, and scheduled sampling / greedy rollouts need its argmax only. Both follow from the generation
logits' row statistics (gold_softmax.py) and the copy mass at the (N, S) source positions, so
neither builds the (N, X) log-probabilities that the generators' `forward` (the plain formula)
returns.

    gold_mixture, mixture_argmax          the kernels, on (N, ...) tensors
    predict_from_logits                   the mixture's argmax from the logits, switch and attention
    packed_weight, training_loop_product  a (W, b) packed / prepared for many small products
    logits_on                             the pass's logits on such a product, where they are exact

The model classes call them from their fused subclasses (onmt/reinforced/fused.py:
FusedPointerGenerator.gold_log_prob / predict; onmt/models/fused.py: copy_gold_log_prob); nothing
here knows a model class.
"""
import torch
import torch.nn.functional as F

from onmt.fused.gold_softmax import gold_log_softmax, logit_stats
from onmt.fused.low_precision import CAST_DTYPES, CastLinear, prepared_linear
from onmt.fused.packed_linear import PackedLinear
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, mix_at_sources
from onmt.modules.precision import autocast_dtype


def gold_mixture(o, weight, bias, gen_logit, attn, src_ex, first_pos, gold, logits=None,
                 product_dtype=None):
    """log p(gold) of the mixture and its exact argmax, without the (N, X) distribution.

    o (N, D) generator input; weight (V, D), bias (V,) of the generation softmax (a masked word has
    a very negative bias); gen_logit (N, 1): p(generate) = sigmoid(gen_logit); attn (N, S);
    src_ex (N, S); first_pos (N, S); gold (N,) extended ids; logits: o W^T + b (N, V) if already
    computed (it is overwritten); product_dtype: the -amp precision of the vocabulary products
    (gold_log_softmax), or None.
    Returns log p(gold) (N,) and the argmax (N,) (no gradient); value and gradients equal those of
    the full distribution gathered at gold.
    """
    z, lse, top, top_id, at_src = gold_log_softmax(o, weight, bias, gold, src_ex, IMPOSSIBLE,
                                                   logits, product_dtype)  # (N,) ...
    log_gen_switch, log_copy_switch = F.logsigmoid(gen_logit), F.logsigmoid(-gen_logit)  # (N, 1)
    V = weight.size(0)
    # (N,) log p(u=0) p(gold | u=0); exactly IMPOSSIBLE (no gradient) for an OOV slot, as in the
    # full distribution, whatever the logits
    gen_gold = torch.where(gold < V, z + log_gen_switch.squeeze(1), z.new_full((), IMPOSSIBLE))
    copy_gold = (attn * (src_ex == gold.unsqueeze(1))).sum(1)  # (N,) p(gold | u=1)
    tiny = torch.finfo(copy_gold.dtype).tiny
    log_copy = log_copy_switch.squeeze(1) + torch.log(copy_gold.clamp_min(tiny))  # (N,)
    ll = torch.where(copy_gold > 0, torch.logaddexp(gen_gold, log_copy), gen_gold)  # (N,)
    with torch.no_grad():
        copy = copy_at_sources(attn, first_pos)  # (N, S)
        pred = mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy,
                              src_ex, V)
    return ll, pred


def mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy, src_ex,
                   tgt_vocab_size):
    """The best word is the best generated word or a source word (copy only adds mass there).
    top, top_id (N,): largest generation logit and its id; at_src (N, S): logits at the source ids;
    lse (N,): their log-sum-exp; a source id >= tgt_vocab_size (an OOV) has generation part
    IMPOSSIBLE.
    Ties go to the smaller id, as argmax over the full distribution does."""
    norm = (lse.unsqueeze(1) - log_gen_switch)  # (N, 1)
    best_gen = top - norm.squeeze(1)  # (N,)
    gen_at_src = torch.where(src_ex < tgt_vocab_size, at_src - norm,
                             at_src.new_full((), IMPOSSIBLE))  # (N, S)
    mixed = mix_at_sources(gen_at_src, log_copy_switch, copy)  # (N, S)
    best_src = mixed.max(1, keepdim=True).values  # (N, 1)
    src_id = src_ex.masked_fill(mixed < best_src, torch.iinfo(src_ex.dtype).max).amin(1)  # (N,)
    best_src = best_src.squeeze(1)
    return torch.where(best_src > best_gen, src_id,
                       torch.where(best_src < best_gen, top_id, torch.minimum(src_id, top_id)))


# ----------------------------------------------------------------- the pointer mixture's pieces
def predict_from_logits(logits, switch, attn, src_ex, first_pos):
    """argmax of the pointer mixture over the extended vocabulary (N,) from its pieces, without the
    (N, X) distribution: logits (N, V) the generation logits o W_out^T + b_out (float32; may be
    overwritten), switch (N, 1) the logit of p(u=1), attn (N, S), src_ex, first_pos (N, S)."""
    lse, top, top_id, at_src = logit_stats(logits, src_ex, IMPOSSIBLE)  # (N,) x3, (N, S)
    log_copy_switch, log_gen_switch = F.logsigmoid(switch), F.logsigmoid(-switch)  # (N, 1) x2
    copy = copy_at_sources(attn, first_pos)  # (N, S)
    return mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy,
                          src_ex, logits.size(1))


def as_product(weight):
    """A product o -> o W^T + b (N, V) without gradient from `weight`: a PackedLinear or CastLinear
    as it is, an unpacked (W, b) pair as an unpacked PackedLinear."""
    if isinstance(weight, (PackedLinear, CastLinear)):
        return weight
    return PackedLinear(*weight, pack=False)


def packed_weight(weight, precision="fp32"):
    """(W (V, D), b (V,)) packed for many small products without gradient (the scheduled-sampling
    rows of each step, the rollouts' rows, a decoding step). precision: the decoding precision
    (low_precision.prepared_linear; anything but fp32 for beam / greedy decoding only)."""
    w, b = weight
    if precision != "fp32":
        return prepared_linear(w, b, precision)
    return PackedLinear(w.detach(), b.detach())


_CAST_NAMES = {dtype: name for name, dtype in CAST_DTYPES.items()}  # torch.bfloat16 -> "bf16", ...


def training_loop_product(weight):
    """(W, b) prepared for the many small products without gradient of one training pass
    (scheduled sampling's rows, the rollouts' steps): packed float32, or under autocast (-amp) in
    autocast's precision (low_precision.CastLinear: cast once, packed for oneDNN on the CPU), as the
    pass's other vocabulary products run (gold_softmax.py)."""
    low = autocast_dtype(weight[0])
    return packed_weight(weight, _CAST_NAMES.get(low, "fp32"))


def logits_on(product, o):
    """o W^T + b (N, V) float32 without gradient, on `product` (a training_loop_product), where
    that gives what gold_log_softmax computes from o itself (a float32 product with autocast off,
    or a product in autocast's precision, widened) on a weight packed for oneDNN, so faster; else
    None."""
    low = autocast_dtype(o)
    if low is None:
        usable = isinstance(product, PackedLinear) and o.dtype == torch.float32
    else:
        usable = isinstance(product, CastLinear) and product.dtype == low
    if not usable or product.packed is None:
        return None
    with torch.no_grad():
        return product(o)  # (N, V)
