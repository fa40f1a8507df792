"""The copy mixture shared by See et al.'s and Paulus et al.'s pointer-generators, in log space.

    p(y) = p(u=0) p(y | u=0) + p(u=1) sum_{i: src_ex_i = y} a_i        over X = V_tgt + n_oov ids

Paulus et al. eqs. 10 (copy: the attention summed over the positions holding y) and 12
(the mixture); See et al. eq. 9 (p_gen = p(u=0)). Only the source positions change the generation
distribution, so the mixture is computed on the (N, S) source positions (duplicates summed onto each
word's first position with one scatter_add) and written back into the (N, X) generation
log-probabilities with one scatter: a few passes over (N, X) instead of a softmax, a product, a
padding copy, a scatter_add, a clamp and a log. This is the plain formula the generators' `forward`
computes; the paths that need only log p(gold) or the argmax are in onmt/fused/gold_mixture.py,
decoding's row-blocked and in-place versions in onmt/fused/step_mixture.py.
"""
import torch

# log-probability of extended ids that neither generation nor copying can produce (an OOV slot of a
# shorter OOV list): exp() of it is 0, yet it stays finite (also in float16).
IMPOSSIBLE = -1e4


def first_occurrence(src_ex):
    """For each (n, i), the first position j with src_ex[n, j] == src_ex[n, i]. src_ex: (N, S).
    Memory linear in S (a 200k-token source needs no (S, S) table): a stable sort puts each id's
    positions together, first one first; each sorted position takes the position at the start of its
    run."""
    N, S = src_ex.shape
    if S == 0:
        return src_ex.new_zeros(N, 0)
    values, order = torch.sort(src_ex, dim=1, stable=True)  # (N, S) ids sorted, their positions
    start = torch.ones_like(values, dtype=torch.bool)  # (N, S) where a run of one id begins
    start[:, 1:] = values[:, 1:] != values[:, :-1]
    # (N, S)
    run_start = torch.where(start, torch.arange(S, device=src_ex.device), 0).cummax(1).values
    first = order.gather(1, run_start)  # (N, S) each sorted position's first position of its id
    return torch.empty_like(order).scatter_(1, order, first)  # (N, S) back in source order


def repeat_per_step(per_example, n_steps):
    """(B, S) -> (B*n_steps, S): each example's row repeated for each of its steps
    (example-major)."""
    B, S = per_example.shape
    return per_example.unsqueeze(1).expand(B, n_steps, S).reshape(B * n_steps, S)  # (B*T, S)


def copy_at_sources(attn, first_pos):
    """(N, S) copy probability of the word at each source position, duplicates summed:
    p(y = x_i | u=1) = sum_{j: x_j = x_i} a_j (Paulus et al. eq. 10, See et al.'s sum in eq. 9)."""
    # (N, S) on first positions
    summed = attn.new_zeros(attn.shape).scatter_add_(1, first_pos, attn)
    return summed.gather(1, first_pos)  # (N, S)


def mix_at_sources(gen_at_src, log_copy_switch, copy):
    """log of p(u=0) p(y|u=0) + p(u=1) copy(y) at the source positions (N, S); no log(0).
    (Paulus et al. eq. 12, See et al. eq. 9.)"""
    tiny = torch.finfo(copy.dtype).tiny
    log_copy = log_copy_switch + torch.log(copy.clamp_min(tiny))  # (N, S)
    return torch.where(copy > 0, torch.logaddexp(gen_at_src, log_copy), gen_at_src)  # (N, S)


def generation_log_probs(logits, log_gen_switch, n_oov):
    """log p(u=0) + log_softmax(logits): (N, V) logits, (N, 1) log switch -> (N, X) with the n_oov
    extra slots at IMPOSSIBLE, a fresh tensor: log p_gen P_vocab(w) (See et al. eqs. 4, 9).
    (Decoding's row-blocked version: onmt/fused/step_mixture.py.)"""
    N, V = logits.shape
    norm = torch.logsumexp(logits, dim=1, keepdim=True)  # (N, 1)
    gen = logits - (norm - log_gen_switch)  # (N, V) log p_gen + log softmax(logits)
    if n_oov > 0:
        gen = torch.cat([gen, gen.new_full((N, n_oov), IMPOSSIBLE)], dim=1)  # (N, X)
    return gen


def scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos):
    """gen (N, X): log p(u=0) p(y | u=0); log_copy_switch (N, 1); attn (N, S), 0 on padding; src_ex
    (N, S) extended ids; first_pos (N, S) from first_occurrence. Returns log p over the extended
    vocabulary (N, X): the mixture (Paulus et al. eq. 12, See et al. eq. 9) written at the source
    words, the generation part everywhere else. (Decoding's in-place version:
    onmt/fused/step_mixture.py.)"""
    mixed = mix_at_sources(gen.gather(1, src_ex), log_copy_switch, copy_at_sources(attn, first_pos))
    # Duplicated positions write the same value; only the first one carries the gradient.
    positions = torch.arange(src_ex.size(1), device=src_ex.device)
    mixed = torch.where(first_pos == positions, mixed, mixed.detach())  # (N, S)
    return gen.scatter(1, src_ex, mixed)  # (N, X)
