"""The pointer mixture's log p(gold) and argmax without the (N, X) distribution (docs/DESIGN.md
section 4).

Training needs log p(y*) of the mixture (Paulus et al. eq. 12, See et al. eq. 9) at the gold word
only, and scheduled sampling / greedy rollouts need its argmax only. Both follow from the generation
logits' row statistics (gold_softmax.py) and the copy mass at the (N, S) source positions, so
neither builds the (N, X) log-probabilities that the generators' `forward` (the plain formula)
returns.

    gold_mixture, mixture_argmax          the kernels, on (N, ...) tensors
    pointer_generator_gold_log_prob       PointerGenerator.forward(...).gather(1, gold), fused
    pointer_generator_predict             PointerGenerator.forward(...).argmax(1), fused
    packed_out_weight                     PointerGenerator.out_weight() packed for small products
    copy_generator_gold_log_prob          CopyGenerator.forward(...).gather(-1, gold), fused
"""
import torch
import torch.nn.functional as F

from onmt.constants import PAD
from onmt.fused.gold_softmax import gold_log_softmax, logit_stats
from onmt.fused.low_precision import CAST_DTYPES, CastLinear, prepared_linear
from onmt.fused.packed_linear import PackedLinear
from onmt.modules.copy_mixture import IMPOSSIBLE, copy_at_sources, mix_at_sources
from onmt.modules.precision import autocast_dtype, float32_region, widen


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


# ----------------------------------------------------------------- Paulus et al.'s PointerGenerator
def pointer_generator_gold_log_prob(generator, o, attn, src_ex, first_pos, gold, weight=None,
                                    logits=None, return_p_copy=False):
    """log p(gold) under the mixture of `generator` (a PointerGenerator) without the (N, X)
    distribution.

    o (N, D); attn (N, S); src_ex (N, S); first_pos (N, S); gold (N,) extended ids;
    weight: a `generator.out_weight()` result (unpadded) to reuse; logits: the (N, V) generation
    logits o W_out^T + b_out already computed from the same o and weight (overwritten), or None.
    Returns log p(gold) (N,) and the argmax of the full mixture (N,) (no gradient).
    Value and gradients equal those of `generator(...).gather(1, gold)`.
    With `return_p_copy`, also p(u=1) per row (N,), without gradient.
    """
    w_out, b_out = generator.out_weight() if weight is None else weight
    low = autocast_dtype(o)  # -amp: the vocabulary products in its precision, all else in float32
    with float32_region(o):
        o, attn, w_out, b_out, logits = (widen(x) for x in (o, attn, w_out, b_out, logits))
        # the switch gives p(u=1), the copy probability: generation is sigmoid of minus its logit
        switch = generator.switch(o)  # (N, 1)
        ll, pred = gold_mixture(o, w_out, b_out, -switch, attn, src_ex, first_pos, gold,
                                logits, low)
        if return_p_copy:
            return ll, pred, torch.sigmoid(switch.detach()).squeeze(1)  # (N,)
        return ll, pred


def packed_out_weight(generator, weight=None, precision="fp32"):
    """W_out, b_out of `generator` (an `out_weight()` result, unpadded) packed for many small
    products without gradient (the scheduled-sampling rows of each step, the rollouts' rows).
    precision: the decoding precision (low_precision.prepared_linear; anything but fp32 for
    beam / greedy decoding only)."""
    w_out, b_out = generator.out_weight() if weight is None else weight
    if precision != "fp32":
        return prepared_linear(w_out, b_out, precision)
    return PackedLinear(w_out.detach(), b_out.detach())


_CAST_NAMES = {dtype: name for name, dtype in CAST_DTYPES.items()}  # torch.bfloat16 -> "bf16", ...


def training_loop_product(generator, weight):
    """W_out, b_out of `generator` (an `out_weight()` result, unpadded) prepared for the many small
    products without gradient of one training pass (scheduled sampling's rows, the rollouts' steps):
    packed float32, or under autocast (-amp) in autocast's precision (low_precision.CastLinear: cast
    once, packed for oneDNN on the CPU), as the pass's other vocabulary products run
    (gold_softmax.py)."""
    low = autocast_dtype(weight[0])
    return packed_out_weight(generator, weight, _CAST_NAMES.get(low, "fp32"))


def logits_on(product, o):
    """o W_out^T + b_out (N, V) float32 without gradient, on `product` (a training_loop_product),
    where that gives what gold_log_softmax computes from o itself (a float32 product with autocast
    off, or a product in autocast's precision, widened) on a weight packed for oneDNN, so faster;
    else None."""
    low = autocast_dtype(o)
    if low is None:
        usable = isinstance(product, PackedLinear) and o.dtype == torch.float32
    else:
        usable = isinstance(product, CastLinear) and product.dtype == low
    if not usable or product.packed is None:
        return None
    with torch.no_grad():
        return product(o)  # (N, V)


@torch.no_grad()
def pointer_generator_predict(generator, o, attn, src_ex, first_pos, weight=None, logits=None):
    """argmax of `generator`'s mixture over the extended vocabulary (N,), without the (N, X)
    distribution. weight: a `packed_out_weight()` or `training_loop_product()` result, or an
    unpadded `out_weight()` result; logits: the (N, V) generation logits if already computed
    (overwritten)."""
    with float32_region(o):
        o, attn, logits = widen(o), widen(attn), widen(logits)
        if logits is None:
            if not isinstance(weight, (PackedLinear, CastLinear)):
                weight = PackedLinear(*(generator.out_weight() if weight is None else weight),
                                      pack=False)
            logits = weight(o)  # (N, V)
        lse, top, top_id, at_src = logit_stats(logits, src_ex, IMPOSSIBLE)  # (N,) x3, (N, S)
        switch = generator.switch(o)  # (N, 1)
        log_copy_switch, log_gen_switch = F.logsigmoid(switch), F.logsigmoid(-switch)  # (N, 1) x2
        copy = copy_at_sources(attn, first_pos)  # (N, S)
        return mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy,
                              src_ex, logits.size(1))


# ----------------------------------------------------------------- See et al.'s CopyGenerator
def copy_generator_gold_log_prob(generator, dec, src_ex, first_pos, gold, return_p_copy=False,
                                 mask=None):
    """The training path of `generator` (a CopyGenerator): log p(gold) (B, T) and the argmax (B, T)
    of the mixture for a teacher-forced sequence, without the (B, T, X) distribution; same values
    and gradients as `generator(...)` gathered at gold. dec: DecoderOutput (B, T, ...);
    src_ex, first_pos (B, S); gold (B, T) extended ids. With `return_p_copy` also 1 - p_gen
    (B, T) (no gradient). mask (B, T): the positions to compute (the real tokens); the others (the
    padding, a fifth of Gigaword's batches) cost nothing and read 0 (log p and p_copy) and PAD
    (argmax).
    """
    B, T = gold.shape
    S = src_ex.size(-1)
    # (N,) the rows computed, example-major (row b*T + t), and each one's example
    rows = (torch.arange(B * T, device=gold.device) if mask is None
            else mask.reshape(-1).nonzero().squeeze(1))
    example = torch.div(rows, T, rounding_mode="floor")  # (N,)
    # -amp: the vocabulary products in its precision, all else in float32
    low = autocast_dtype(dec.out)
    with float32_region(dec.out):
        # (B, T, 2H+E)
        features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)
        features = features.reshape(B * T, -1).index_select(0, rows)  # (N, 2H+E)
        gen_logit = generator.switch(features).float()  # (N, 1)
        pad_col = torch.zeros_like(generator.linear.bias, dtype=torch.bool)
        pad_col[PAD] = True
        # PAD never generated
        bias = generator.linear.bias.masked_fill(pad_col, torch.finfo(torch.float32).min)
        out = widen(dec.out).reshape(B * T, -1).index_select(0, rows)  # (N, D)
        attn = dec.attn.float().reshape(B * T, S).index_select(0, rows)  # (N, S)
        ll, pred = gold_mixture(out, generator.linear.weight, bias, gen_logit, attn,
                                src_ex.index_select(0, example), first_pos.index_select(0, example),
                                gold.reshape(B * T).index_select(0, rows), product_dtype=low)

        def per_position(values, fill):  # (N,) at the computed rows -> (B, T), `fill` elsewhere
            return values.new_full((B * T,), fill).index_copy(0, rows, values).view(B, T)

        ll, pred = per_position(ll, 0.0), per_position(pred, PAD)  # (B, T) x2
        if return_p_copy:
            # (B, T)
            return ll, pred, per_position(torch.sigmoid(-gen_logit.detach()).squeeze(1), 0.0)
        return ll, pred
