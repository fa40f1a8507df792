"""What the search is told and what it uses: its settings, hypotheses, the length and coverage
penalties and the per-step token rules.

Rules applied to the log-probabilities of every step (beam size 1, greedy search, included):
- `<blank>` and `<s>` are never produced, nor `<unk>` with `ban_unk_token`;
- `</s>` is forbidden while fewer than `min_length` tokens have been produced;
- once `max_length` tokens have been produced, `</s>` is the only choice, so every prediction has
  at most `max_length` tokens (the final `</s>` not counted, not returned);
- with `block_ngram_repeat` N > 0, a hypothesis never produces an N-gram it already contains;
  N-grams holding a token of `ignore_ids` are not considered. `</s>` is never blocked.
Scores are sums of log-probabilities (the final `</s>` included), divided by the length penalty of
the number of produced tokens counting `</s>`.

Coverage penalty (OpenNMT-py's `-coverage_penalty`, `-beta`, `-stepwise_penalty`): cov_i is the sum,
over the hypothesis's steps (the one producing `</s>` included), of its source attention on position
i of the example's S real source positions (padding never counts):
- wu (Wu et al. 2016, GNMT):  pen = -beta * sum_i log(max(min(cov_i, 1), 1e-20))   (>= 0)
- summary:                    pen =  beta * (sum_i max(cov_i, 1) - S)               (>= 0)
Without -stepwise_penalty a finished hypothesis scores log_prob / lp(length) - pen (the live beams
are ranked by their log-probability, as upstream). With -stepwise_penalty the penalty of the
coverage so far is part of the running score at every step: a live hypothesis is ranked by
log_prob - pen(cov up to this step) and a finished one scores (log_prob - pen) / lp(length).
(Upstream skips the penalty at the very first step; here it applies from the first step on.)
Hypothesis.log_prob stays the raw sum.
"""
from dataclasses import dataclass, fields
from functools import cached_property
from typing import List, Optional, Sequence

import torch

from onmt.constants import BOS, EOS, PAD, UNK
from onmt.modules.sampling import sample_tokens
from onmt.modules.step_scores import DenseScores

NEG_INF = float("-inf")


@dataclass(frozen=True)
class SearchSettings:
    """How each batch is searched: translate.py's Search options (onmt/opts/translate.py), as the
    Translator and the search (beam_search.BeamSearch; beam size 1: greedy search) take them. Its
    `lengths` and `coverage` are the penalties these settings choose, chosen (their kinds checked)
    once."""
    beam_size: int = 5
    n_best: int = 1
    min_length: int = 0
    max_length: int = 100
    length_penalty: str = "none"
    alpha: float = 0.0
    block_ngram_repeat: int = 0
    ignore_when_blocking: Sequence[str] = ()
    coverage_penalty: str = "none"
    beta: float = 0.0
    stepwise_penalty: bool = False
    ban_unk_token: bool = False
    # test-time sampling, upstream's meanings (sampler: None unless these ask for a draw)
    random_sampling_topk: int = 1
    random_sampling_topp: float = 0.0
    random_sampling_temp: float = 1.0
    # the beam's host checks every N steps (beam_search.py, Host checks)
    beam_sync_every: int = 1

    @classmethod
    def from_opt(cls, opt):
        return cls(**{f.name: getattr(opt, f.name) for f in fields(cls)})

    @cached_property
    def lengths(self):
        """The LengthPenalty of these settings."""
        return LengthPenalty(self.length_penalty, self.alpha)

    @cached_property
    def sampler(self):
        """The Sampler of these settings, or None: top-k 1 or temperature 0 is the argmax (upstream
        OpenNMT-py's rule), the greedy search itself; top-k -1 or 0 the whole distribution."""
        if self.random_sampling_topk == 1 or self.random_sampling_temp == 0:
            return None
        return Sampler(max(self.random_sampling_topk, 0), self.random_sampling_topp,
                       self.random_sampling_temp)

    @cached_property
    def coverage(self):
        """The CoverageScorer of these settings."""
        return CoverageScorer(self.coverage_penalty, self.beta, self.stepwise_penalty)


@dataclass(frozen=True)
class Sampler:
    """Test-time sampling (-random_sampling_topk / _topp / _temp): each of a line's n_best rows
    draws its next token from its step's log p (after the token rules), restricted to the `topk`
    most likely (0: all) and to the nucleus `topp` (0: off), at `temperature`
    (onmt/modules/sampling.py `sample_tokens`). A sample's score is the model's own sum of
    log-probabilities of its tokens (untempered), divided by the length penalty."""
    topk: int
    topp: float
    temperature: float

    def draw(self, logp, generator=None):
        """(R,) a token per row of log p (R, X)."""
        return sample_tokens(logp, self.topk, self.topp, self.temperature, generator)


@dataclass
class Hypothesis:
    tokens: List[int]                    # ids in the example's extended vocabulary, </s> excluded
    score: float                         # length-penalized sum of log-probabilities
    log_prob: float                      # raw sum of log-probabilities (</s> included)
    attn: Optional[torch.Tensor] = None  # (len(tokens), S) attention of each produced token
    # keep_inspection: the other per-step attns of the model, for each produced token
    # (n = len(tokens)):
    #   "p_copy" (n,) the pointer's probability; "intra" (n, n) intra-decoder attention, row t over
    #   the decoder states of steps 0..t-1 (lower triangle, zeros elsewhere); keys the model gives
    extras: Optional[dict] = None


# the per-step attns besides "std" that keep_inspection keeps (onmt/interface.py)
INSPECTED = ("p_copy", "intra")


class LengthPenalty:
    """The length penalty of a search (module docstring), chosen once from the settings: the divisor
    of a hypothesis's summed log-probability by its `length` in tokens (</s> included; a number or a
    tensor).

    none: 1; avg: length; wu: ((5 + length) / 6) ** alpha (Wu et al. 2016); power: length ** alpha
    (Hugging Face's float length_penalty; alpha 1 is avg).
    """

    def __init__(self, kind="none", alpha=0.0):
        if kind not in _LENGTH_PENALTIES:
            raise ValueError(f"unknown length penalty {kind!r}")
        self.kind, self.alpha = kind, alpha
        self._divisor = _LENGTH_PENALTIES[kind]
        self._ahead = {}   # hi -> largest_ahead(hi)

    def __call__(self, length):
        return self._divisor(length, self.alpha)

    def largest_ahead(self, hi):
        """[lo]: the largest penalty over lengths lo..max(lo, hi), for lo = 0..hi+1, on the host
        (made once per search): dividing a non-positive score by it bounds from above every score
        that a hypothesis with lo tokens to come can still reach (log-probabilities only decrease
        the sum)."""
        if hi not in self._ahead:
            # (hi+2,) lengths 0..hi+1
            penalties = self(torch.arange(hi + 2))
            # (hi+1,) max over lo..hi
            ahead = penalties[:hi + 1].flip(0).cummax(0).values.flip(0)
            self._ahead[hi] = ahead.tolist() + [float(penalties[hi + 1])]
        return self._ahead[hi]


def _as_float(length):
    return length.float() if torch.is_tensor(length) else float(length)


_LENGTH_PENALTIES = {
    "none": lambda length, alpha: (torch.ones_like(length, dtype=torch.float)
                                   if torch.is_tensor(length) else 1.0),
    "avg": lambda length, alpha: _as_float(length),
    "wu": lambda length, alpha: ((5.0 + _as_float(length)) / 6.0) ** alpha,
    "power": lambda length, alpha: _as_float(length) ** alpha,
}


COVERAGE_EPS = 1e-20


def coverage_penalty(kind, cov, beta=0.0, mask=None):
    """The coverage penalty (module docstring) of attention sums `cov` (..., S) -> (...,), >= 0.
    mask (..., S) bool: the real source positions (None: all). kind "none" gives zeros."""
    if kind == "none":
        return cov.new_zeros(cov.shape[:-1])
    if kind == "wu":
        per_pos = -cov.clamp(max=1.0).clamp(min=COVERAGE_EPS).log()       # (..., S)
    elif kind == "summary":
        per_pos = cov.clamp(min=1.0) - 1.0                                 # (..., S)
    else:
        raise ValueError(f"unknown coverage penalty {kind!r}")
    if mask is not None:
        per_pos = per_pos.masked_fill(~mask, 0.0)
    return beta * per_pos.sum(-1)


class CoverageScorer:
    """The coverage penalty of a search (module docstring): `kind` none|wu|summary, `beta`,
    `stepwise`. A search keeps the attention sums cov (R, S) and the real-position mask (R, S) of
    its rows and asks the scorer what they cost; kind "none" is the scorer of a search without a
    penalty (`active` False)."""

    def __init__(self, kind="none", beta=0.0, stepwise=False):
        if kind not in ("none", "wu", "summary"):
            raise ValueError(f"unknown coverage penalty {kind!r}")
        self.kind, self.beta, self.stepwise = kind, beta, stepwise
        self.active = kind != "none"

    def accumulate(self, cov, attns):
        """cov plus the step's source attention (R, S), as float32; cov None before the first
        step."""
        attn_now = attention_of(attns)
        if attn_now is None:
            raise ValueError("a coverage penalty needs a model with source attention")
        return attn_now.float() if cov is None else cov + attn_now.float()

    def penalty(self, cov, mask):
        """(R,) the penalty of attention sums cov (R, S) on the positions of mask (R, S)."""
        return coverage_penalty(self.kind, cov, self.beta, mask)

    def running(self, raw, cov, mask):
        """-stepwise_penalty: the running scores (B, W) of rows whose sums of log-probabilities are
        raw (B, W): raw minus the penalty of the coverage so far."""
        return raw - self.penalty(cov, mask).view(raw.shape)

    def ranked(self, raw, pen):
        """The running scores of hypotheses whose sums of log-probabilities are raw, with penalty
        pen."""
        return raw - pen if self.stepwise else raw

    def raw(self, top_scores, pen):
        """The sums of log-probabilities of the chosen continuations, scored top_scores with penalty
        pen."""
        return top_scores + pen if self.stepwise else top_scores

    def finished(self, penalized, pen):
        """The final score of a hypothesis scored `penalized` (its score over its length
        penalty)."""
        return penalized if self.stepwise else penalized - pen

    def _floor(self, pen):
        """The least penalty a hypothesis whose penalty is now `pen` can still reach: coverage only
        grows, so the wu penalty may fall to 0 and the summary penalty never falls."""
        return pen if self.kind == "summary" else torch.zeros_like(pen)

    def bound(self, raw, pen, lp_max):
        """(B,) the best final score a live row can still reach: raw (B, W) sums of
        log-probabilities, pen (B, W) penalties, lp_max the largest length penalty ahead."""
        if not self.active:
            return raw.amax(dim=1) / lp_max
        if self.stepwise:
            return ((raw - self._floor(pen)) / lp_max).max(dim=1).values
        return (raw / lp_max - self._floor(pen)).max(dim=1).values


def source_mask(batch):
    """(B, S) bool: the real (non-padding) source positions of `batch`."""
    S = batch.src.size(1)
    return (torch.arange(S, device=batch.src.device).unsqueeze(0)
            < batch.src_lengths.to(batch.src.device).unsqueeze(1))


def block_ngrams_(scores, history, n, ignore_ids=None):
    """-block_ngram_repeat n: -inf given to the step's scores (a step-scores object, or a log p
    (R, X) tensor changed in place) where the next token would repeat an n-gram already in the row
    of history (R, L): where (last n-1 tokens, t) equals some earlier n-gram of the row. N-grams
    holding a token of `ignore_ids` (1-D tensor) never count; </s> is never blocked. Only the L-n+1
    tokens that end a row's n-grams can be blocked, so those candidates (R, L-n+1) are banned where
    they match: a few hundred values per step, not an (R, X) mask (five passes over (R, X), 7 % of
    an int8 beam search). Returns `scores`."""
    R, L = history.shape
    if n <= 0 or L < n:
        return scores
    grams = history.unfold(1, n, 1)                                  # (R, L-n+1, n)
    last = history[:, L - n + 1:]                                    # (R, n-1)
    match = (grams[:, :, :n - 1] == last.unsqueeze(1)).all(-1)       # (R, L-n+1)
    if ignore_ids is not None and ignore_ids.numel() > 0:
        match &= ~torch.isin(grams, ignore_ids.to(history.device)).any(-1)  # (R, L-n+1)
    # (R, L-n+1) the token each n-gram ends with
    nxt = grams[:, :, n - 1]
    match &= nxt != EOS                                              # </s> is never blocked
    _as_step_scores(scores).ban_(nxt, match)
    return scores


def apply_rules(scores, history, step, *, min_length, max_length, block_ngram_repeat=0,
                ignore_ids=None, ban_unk=False):
    """The step's token rules (module docstring) applied to the step's scores (a step-scores object
    of onmt/modules/step_scores.py, or a log p (R, X) tensor); `step` tokens produced so far,
    history (R, step). Changes `scores` in place (the searches own the fresh step output) and
    returns it."""
    rules = _as_step_scores(scores)
    if step >= max_length:   # wins over min_length
        rules.allow_only_(EOS)
        return scores
    extra = ([EOS] if step < min_length else []) + ([UNK] if ban_unk else [])
    # (R, n) made on the device
    banned = history.new_full((history.size(0), 2 + len(extra)), PAD)
    banned[:, 1] = BOS
    for j, token in enumerate(extra, 2):
        banned[:, j] = token
    rules.ban_(banned)
    if block_ngram_repeat > 0 and step >= block_ngram_repeat:
        block_ngrams_(rules, history, block_ngram_repeat, ignore_ids)
    return scores


def _as_step_scores(scores):
    return DenseScores(scores) if isinstance(scores, torch.Tensor) else scores


def attention_of(attns):
    """The source attention of a decode step, or None for models that do not attend."""
    if not attns:
        return None
    return attns.get("std")


def inspected_step(attns):
    """{"p_copy": (R,), "intra": (R, t)} of a decode step's attns, the keys the model gives."""
    return {k: attns[k].float() for k in INSPECTED if attns and k in attns}


def extend_inspection(kept, step_values, rows=None):
    """Append one step to the per-row histories `kept` ({"p_copy": (R, t), "intra": (R, t, t)};
    None before the first step), after selecting `rows` of the old histories (beam backpointers).
    step_values: inspected_step() of the step, already in the new row order. Returns the new dict:
    "p_copy" (R, t+1); "intra" (R, t+1, t+1), the new row holding the step's (R, t) weights."""
    pad = torch.nn.functional.pad
    out = {}
    for k, v in step_values.items():
        old = kept.get(k) if kept else None
        if old is not None and rows is not None:
            old = old.index_select(0, rows)
        if k == "p_copy":
            v = v.unsqueeze(1)                                           # (R, 1)
            out[k] = v if old is None else torch.cat([old, v], dim=1)    # (R, t+1)
            continue
        t = v.size(1)                                                    # intra: (R, t)
        if old is None:
            old = v.new_zeros(v.size(0), t, t)                           # (R, t, t)
        out[k] = torch.cat([pad(old, (0, 1)), pad(v, (0, 1)).unsqueeze(1)], dim=1)  # (R, t+1, t+1)
    return out


def hypothesis_extras(kept, row, n):
    """The Hypothesis.extras of row `row` of the histories, cut to its n produced tokens
    (on CPU)."""
    if not kept:
        return None
    return {k: (v[row, :n] if k == "p_copy" else v[row, :n, :n]).cpu() for k, v in kept.items()}
