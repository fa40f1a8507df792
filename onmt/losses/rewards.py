"""Batched ROUGE rewards on token-id tensors, for self-critical policy-gradient training.

Every function takes a batch of hypotheses and references as padded id tensors with lengths:
    hyp (B, L1) int64, hyp_len (B,) int64   ref (B, L2) int64, ref_len (B,) int64
Positions at or beyond a length are ignored whatever they hold; lengths may be 0 and L1 or L2
may be 0 (0 <= len <= L is assumed). Ids are compared for equality only, and a NEGATIVE id (in
either sequence) matches nothing, not even an equal negative id on the other side: callers use
this to make some tokens unmatchable. The results are (B,) float32 F1 scores (beta = 1), computed
with tensor operations over the whole batch on the inputs' device:

  lcs_length  longest common subsequence by the row recurrence of the textbook table. Row i of
              the table is a running maximum over the columns,
                  dp[i][j] = cummax_{k<=j} max(dp[i-1][k], match[i,k] * (dp[i-1][k-1] + 1)),
              computed as max(dp[i-1], cummax(match[i] * (dp[i-1] shifted + 1))) since dp[i-1] is
              non-decreasing: the loop is over the positions of one side, four in-place ops each.
  rouge_l     ROUGE-L F1 from the LCS: P = lcs / len(hyp), R = lcs / len(ref).
  rouge_n     ROUGE-N F1 with clipped n-gram counts: every n-gram gets an exact integer key
              (example, tokens) by torch.unique renumbering, counts are bincounts of the keys, and
              the overlap sums min(count in hyp, count in ref) over the distinct hyp n-grams.
              O(B L log L): no (L1, L2) matrix, so L of a few hundred stays cheap.
  mix         the mean of the ROUGE-1, ROUGE-2 and ROUGE-L F1 scores.
  rouge_l_recall   LCS / len(ref): what the reference keeps, whatever the hypothesis adds.
  rouge_l_bp  ROUGE-L F1 times BLEU's brevity penalty min(1, exp(1 - len(ref) / len(hyp))): F1 with
              a hypothesis shorter than its reference paid less (length-aware; 0 for an empty one).

F1 = 2PR / (P + R) = 2 overlap / (n_hyp + n_ref), and 0 when a side is empty or nothing matches.
"""
import torch


def _valid(lengths, size):
    """(B, size) mask of the positions before each length."""
    return torch.arange(size, device=lengths.device) < lengths.unsqueeze(1)  # (B, size)


def _f1(overlap, n_hyp, n_ref):
    """F1 of integer overlap counts, 0 where a side has nothing (no division by zero)."""
    overlap, n_hyp, n_ref = overlap.double(), n_hyp.double(), n_ref.double()
    f = 2 * overlap / (n_hyp + n_ref).clamp_min(1)
    return torch.where((n_hyp > 0) & (n_ref > 0), f, torch.zeros_like(f)).float()


def _masked(seq, lengths, fill):
    """`seq` with the ignored tokens (beyond the length, or negative) replaced by `fill`."""
    ok = _valid(lengths, seq.size(1)) & (seq >= 0)                         # (B, L)
    return torch.where(ok, seq, torch.full_like(seq, fill))


def _masked_pair(hyp, hyp_len, ref, ref_len):
    """hyp and ref with ignored tokens set to -1 in hyp and -2 in ref: equal ids are then exactly
    the matches, as -1 != -2 and neither equals a real id."""
    return _masked(hyp, hyp_len, -1), _masked(ref, ref_len, -2)


def lcs_length(hyp, hyp_len, ref, ref_len):
    """(B,) int64 length of the longest common subsequence of each hyp / ref pair.

    With D = dp[i-1] (non-decreasing in j), row i is max(D, cummax_j(match[i,j] * (D[j-1] + 1))).
    Ignored hyp rows and ref columns never match, so they change nothing; the answer is the last
    entry of the last row. Four preallocated in-place ops per loop position, none per example;
    the LCS being symmetric, the loop runs over the shorter of the two sides.
    """
    if hyp.size(1) > ref.size(1):
        hyp, hyp_len, ref, ref_len = ref, ref_len, hyp, hyp_len
    B, L1, L2 = hyp.size(0), hyp.size(1), ref.size(1)
    hyp, ref = _masked_pair(hyp, hyp_len, ref, ref_len)
    hyp_cols = hyp.t().unsqueeze(2).unbind(0)                               # L1 x (B, 1)
    # (B, L2 + 1), dp[:, 0] = 0
    dp = torch.zeros(B, L2 + 1, dtype=torch.int32, device=ref.device)
    prev, cur = dp[:, :-1], dp[:, 1:]                                       # (B, L2) views
    match, diag, run = (torch.empty(B, L2, dtype=torch.int32, device=ref.device) for _ in range(3))
    idx = torch.empty(B, L2, dtype=torch.int64, device=ref.device)          # (B, L2) unused argmax
    for i in range(L1):
        torch.eq(hyp_cols[i], ref, out=match)                               # (B, L2) 0 / 1
        torch.addcmul(match, match, prev, out=diag)                         # match * (D[j-1] + 1)
        torch.cummax(diag, 1, out=(run, idx))
        torch.maximum(cur, run, out=cur)
    return dp[:, -1].long()


def rouge_l(hyp, hyp_len, ref, ref_len):
    """(B,) float32 ROUGE-L F1 (beta = 1); 0 when either side is empty or the LCS is empty."""
    return _f1(lcs_length(hyp, hyp_len, ref, ref_len), hyp_len, ref_len)


def _dense(x):
    """x with its values renumbered 0, 1, 2, ... in increasing order (same shape, int64)."""
    return torch.unique(x, return_inverse=True)[1]


def _ngram_keys(hyp, ref, n):
    """(B, Ng_h), (B, Ng_r) int64 ids of the n-grams, equal iff same example and same n tokens.

    Tokens are renumbered densely first (ids < span), then each key is (example, t_1, ..., t_n)
    folded left one token at a time as key * span + t_k and renumbered again, so it stays
    below span ** 2 whatever n is.
    """
    B, L1, L2 = hyp.size(0), hyp.size(1), ref.size(1)
    ng_h, ng_r = max(L1 - n + 1, 0), max(L2 - n + 1, 0)
    toks = _dense(torch.cat([hyp, ref], 1))                                 # (B, L1 + L2)
    span = toks.numel() + 1                                                 # > every dense id
    # (B, Ng_h + Ng_r)
    keys = torch.arange(B, device=hyp.device).unsqueeze(1).expand(B, ng_h + ng_r)
    for k in range(n):
        # (B, Ng_h + Ng_r)
        tok_k = torch.cat([toks[:, k:k + ng_h], toks[:, L1 + k:L1 + k + ng_r]], 1)
        keys = _dense(keys * span + tok_k)
    return keys[:, :ng_h], keys[:, ng_h:]


def ngram_overlap(hyp, hyp_len, ref, ref_len, n):
    """(B,) int64 clipped n-gram overlap: sum over distinct n-grams of min(count hyp, count ref).

    Counts come from a bincount of exact n-gram keys; each distinct hyp n-gram is summed once, at
    its first place in the sorted keys of its row. An n-gram holding an ignored token (-1 in hyp,
    -2 in ref) has no equal on the other side, so its clipped count is 0.
    """
    if n < 1:
        raise ValueError(f"n-gram order must be >= 1, got {n}")
    hyp, ref = _masked_pair(hyp, hyp_len, ref, ref_len)
    key_h, key_r = _ngram_keys(hyp, ref, n)
    K = key_h.numel() + key_r.numel()
    clipped = torch.minimum(torch.bincount(key_h.reshape(-1), minlength=K),
                            torch.bincount(key_r.reshape(-1), minlength=K))  # (K,)
    key_h = key_h.sort(1).values                                            # (B, Ng_h)
    first = torch.ones_like(key_h, dtype=torch.bool)                        # (B, Ng_h)
    first[:, 1:] = key_h[:, 1:] != key_h[:, :-1]
    return (clipped[key_h] * first).sum(1)


def rouge_n(hyp, hyp_len, ref, ref_len, n):
    """(B,) float32 ROUGE-N F1 with clipped counts; 0 when a side has no n-gram."""
    overlap = ngram_overlap(hyp, hyp_len, ref, ref_len, n)
    return _f1(overlap, (hyp_len - (n - 1)).clamp_min(0), (ref_len - (n - 1)).clamp_min(0))


def rouge_1(hyp, hyp_len, ref, ref_len):
    return rouge_n(hyp, hyp_len, ref, ref_len, 1)


def rouge_2(hyp, hyp_len, ref, ref_len):
    return rouge_n(hyp, hyp_len, ref, ref_len, 2)


def rouge_mix(hyp, hyp_len, ref, ref_len):
    """(B,) float32 mean of the ROUGE-1, ROUGE-2 and ROUGE-L F1 scores."""
    args = (hyp, hyp_len, ref, ref_len)
    return (rouge_1(*args) + rouge_2(*args) + rouge_l(*args)) / 3


def rouge_l_recall(hyp, hyp_len, ref, ref_len):
    """(B,) float32 ROUGE-L recall, LCS / len(ref); 0 for an empty reference."""
    lcs = lcs_length(hyp, hyp_len, ref, ref_len).double()
    return torch.where(ref_len > 0, lcs / ref_len.clamp_min(1).double(),
                       torch.zeros_like(lcs)).float()


def rouge_l_bp(hyp, hyp_len, ref, ref_len):
    """(B,) float32 ROUGE-L F1 x min(1, exp(1 - len(ref) / len(hyp))), BLEU's brevity penalty; 0 for
    an empty hypothesis."""
    h, r = hyp_len.double(), ref_len.double()
    bp = torch.exp((1 - r / h.clamp_min(1)).clamp_max(0))                 # (B,) in (0, 1]
    bp = torch.where(hyp_len > 0, bp, torch.zeros_like(bp))
    return (rouge_l(hyp, hyp_len, ref, ref_len).double() * bp).float()


# the reward table: a new reward is a function above and its name here, and in -rl_reward's
# choices (onmt/opts/train.py; tests/unit/test_rewards.py checks that they are these names)
REWARDS = {"rougeL": rouge_l, "rouge1": rouge_1, "rouge2": rouge_2, "mix": rouge_mix,
           "rougeL_recall": rouge_l_recall, "rougeL_bp": rouge_l_bp}


def reward_function(name):
    """The reward `(hyp, hyp_len, ref, ref_len) -> (B,) float32` called `name`, one of REWARDS:
    "rougeL", "rouge1", "rouge2" (F1 scores), "mix" (the mean of the three F1 scores),
    "rougeL_recall" or "rougeL_bp" (ROUGE-L F1 with BLEU's brevity penalty)."""
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r}; known rewards: {', '.join(REWARDS)}")
    return REWARDS[name]
