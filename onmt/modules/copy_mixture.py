"""The copy mixture shared by See et al.'s and Paulus et al.'s pointer-generators, in log space.

    p(y) = p(u=0) p(y | u=0) + p(u=1) sum_{i: src_ex_i = y} a_i        over X = V_tgt + n_oov ids

Only the source positions change the generation distribution, so the mixture is computed on the
(N, S) source positions (duplicates summed onto each word's first position with one scatter_add)
and written back into the (N, X) generation log-probabilities with one in-place scatter: a few
passes over (N, X) instead of a softmax, a product, a padding copy, a scatter_add, a clamp and a log.
"""
import torch
import torch.nn.functional as F

# log-probability of extended ids that neither generation nor copying can produce (an OOV slot of a
# shorter OOV list): exp() of it is 0, yet it stays finite (also in float16).
IMPOSSIBLE = -1e4


def first_occurrence(src_ex):
    """For each (n, i), the first position j with src_ex[n, j] == src_ex[n, i]. src_ex: (N, S)."""
    same = src_ex.unsqueeze(2) == src_ex.unsqueeze(1)  # (N, S, S)
    return same.to(torch.uint8).argmax(dim=2)  # (N, S) argmax returns the first maximum


def copy_at_sources(attn, first_pos):
    """(N, S) copy probability of the word at each source position, duplicates summed."""
    summed = attn.new_zeros(attn.shape).scatter_add_(1, first_pos, attn)  # (N, S) on first positions
    return summed.gather(1, first_pos)  # (N, S)


def mix_at_sources(gen_at_src, log_copy_switch, copy):
    """log of p(u=0) p(y|u=0) + p(u=1) copy(y) at the source positions (N, S); no log(0)."""
    tiny = torch.finfo(copy.dtype).tiny
    log_copy = log_copy_switch + torch.log(copy.clamp_min(tiny))  # (N, S)
    return torch.where(copy > 0, torch.logaddexp(gen_at_src, log_copy), gen_at_src)  # (N, S)


# rows of one block of the decoding-time softmax (~4 MB of float32 per block: it stays in cache)
SOFTMAX_BLOCK = 1 << 20


def generation_log_probs(logits, log_gen_switch, n_oov):
    """log p(u=0) + log_softmax(logits): (N, V) logits, (N, 1) log switch -> (N, X) with the n_oov
    extra slots at IMPOSSIBLE, a fresh tensor. Without autograd (decoding) it writes one output
    buffer in cache-sized row blocks instead of making several passes over the whole (N, X)."""
    N, V = logits.shape
    if torch.is_grad_enabled():
        norm = torch.logsumexp(logits, dim=1, keepdim=True)  # (N, 1)
        gen = logits - (norm - log_gen_switch)  # (N, V)
        if n_oov > 0:
            gen = torch.cat([gen, gen.new_full((N, n_oov), IMPOSSIBLE)], dim=1)  # (N, X)
        return gen
    out = logits.new_empty(N, V + n_oov)  # (N, X)
    out[:, V:] = IMPOSSIBLE
    rows = max(1, SOFTMAX_BLOCK // V)
    for i in range(0, N, rows):  # blocks of rows, not examples: cache blocking
        blk = logits[i:i + rows]
        shift = torch.logsumexp(blk, dim=1, keepdim=True) - log_gen_switch[i:i + rows]  # (r, 1)
        torch.sub(blk, shift, out=out[i:i + rows, :V])
    return out


def scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos):
    """gen (N, X): log p(u=0) p(y | u=0), a fresh tensor (written in place); log_copy_switch (N, 1);
    attn (N, S), 0 on padding; src_ex (N, S) extended ids; first_pos (N, S) from first_occurrence.
    Returns log p over the extended vocabulary (N, X)."""
    mixed = mix_at_sources(gen.gather(1, src_ex), log_copy_switch, copy_at_sources(attn, first_pos))
    # Duplicated positions write the same value; only the first one carries the gradient.
    positions = torch.arange(src_ex.size(1), device=src_ex.device)
    if not torch.is_grad_enabled():
        return gen.scatter_(1, src_ex, mixed)  # (N, X), in place while decoding
    mixed = torch.where(first_pos == positions, mixed, mixed.detach())  # (N, S)
    return gen.scatter(1, src_ex, mixed)  # (N, X)


def gold_mixture(o, weight, bias, gen_logit, attn, src_ex, first_pos, gold, logits=None):
    """log p(gold) of the mixture and its exact argmax, without the (N, X) distribution.

    o (N, D) generator input; weight (V, D), bias (V,) of the generation softmax (a masked word has
    a very negative bias); gen_logit (N, 1): p(generate) = sigmoid(gen_logit); attn (N, S); src_ex (N, S);
    first_pos (N, S); gold (N,) extended ids; logits: o W^T + b (N, V) if already computed (it is
    overwritten). Returns log p(gold) (N,) and the argmax (N,) (no gradient); value and gradients
    equal those of the full distribution gathered at gold.
    """
    from onmt.modules.gold_softmax import gold_log_softmax
    z, lse, top, top_id, at_src = gold_log_softmax(o, weight, bias, gold, src_ex, IMPOSSIBLE, logits)  # (N,) ...
    log_gen_switch, log_copy_switch = F.logsigmoid(gen_logit), F.logsigmoid(-gen_logit)  # (N, 1)
    V = weight.size(0)
    # (N,) log p(u=0) p(gold | u=0); exactly IMPOSSIBLE (no gradient) for an OOV slot, as in the full
    # distribution, whatever the logits
    gen_gold = torch.where(gold < V, z + log_gen_switch.squeeze(1), z.new_full((), IMPOSSIBLE))
    copy_gold = (attn * (src_ex == gold.unsqueeze(1))).sum(1)  # (N,) p(gold | u=1)
    tiny = torch.finfo(copy_gold.dtype).tiny
    log_copy = log_copy_switch.squeeze(1) + torch.log(copy_gold.clamp_min(tiny))  # (N,)
    ll = torch.where(copy_gold > 0, torch.logaddexp(gen_gold, log_copy), gen_gold)  # (N,)
    with torch.no_grad():
        copy = copy_at_sources(attn, first_pos)  # (N, S)
        pred = mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy, src_ex, V)
    return ll, pred


def mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy, src_ex, vocab_size):
    """The best word is the best generated word or a source word (copy only adds mass there).
    top, top_id (N,): largest generation logit and its id; at_src (N, S): logits at the source ids;
    lse (N,): their log-sum-exp; a source id >= vocab_size (an OOV) has generation part IMPOSSIBLE.
    Ties go to the smaller id, as argmax over the full distribution does."""
    norm = (lse.unsqueeze(1) - log_gen_switch)  # (N, 1)
    best_gen = top - norm.squeeze(1)  # (N,)
    gen_at_src = torch.where(src_ex < vocab_size, at_src - norm, at_src.new_full((), IMPOSSIBLE))  # (N, S)
    mixed = mix_at_sources(gen_at_src, log_copy_switch, copy)  # (N, S)
    best_src = mixed.max(1, keepdim=True).values  # (N, 1)
    src_id = src_ex.masked_fill(mixed < best_src, torch.iinfo(src_ex.dtype).max).amin(1)  # (N,)
    best_src = best_src.squeeze(1)
    return torch.where(best_src > best_gen, src_id,
                       torch.where(best_src < best_gen, top_id, torch.minimum(src_id, top_id)))
