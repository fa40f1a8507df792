"""Ensemble decoding (translate.py -model A.pt B.pt ..., Summarizer.load([...])): several models of
one vocabulary searched as one model of the interface (onmt/interface.py), so the one beam search
(and greedy search, and sampling) runs on it unchanged.

At every step each member m gives its final distribution p_m over the extended vocabulary (the
pointer's copy scores included: a copy model's p_m is its mixture of generation and copying, a
member that does not copy gives the extended slots probability 0), and the ensemble's is their mean:

    log p(y) = log (1/M) sum_m p_m(y) = c + log (1/M) sum_m exp(log p_m(y) - c),
    c = max_m log p_m(y)

computed from the members' log-probabilities (a log-sum-exp: no probability is formed, where every
member gives -inf the ensemble does too, and M copies of one model give its log p bit for bit).
The step's attention ("std", "coverage", "p_copy", "intra") is the members' mean, as upstream
OpenNMT-py's ensemble averages it (-replace_unk, the coverage penalty and inspection read it).
Teacher-forced gold scoring (-tgt) mixes the members' gold log-probabilities the same way (with the
same prefix, the mixture of the step distributions is the ensemble's).
"""
import math
from typing import NamedTuple

import torch
from torch import nn

from onmt.interface import extended_size, gold_targets
from onmt.models.generic import ModelDefaults

MIXED_ATTNS = ("std", "coverage", "p_copy", "intra")


def mean_log_probs(stacked):
    """log of the mean of exp(stacked) over dim 0: stacked (M, ...) log-probabilities -> (...),
    shifted by their max (-inf where every member is -inf, never log(0) of a finite entry: the max
    member contributes exp(0) = 1 to the sum)."""
    if stacked.size(0) == 1:
        return stacked[0]
    top = stacked.amax(dim=0)                                         # (...)
    shift = top.masked_fill(torch.isneginf(top), 0.0)                 # (...) finite
    mean = (stacked - shift).exp().mean(dim=0)                        # (...) >= 1/M where finite
    return torch.where(torch.isneginf(top), top,
                       shift + mean.clamp_min(torch.finfo(mean.dtype).tiny).log())


class EnsembleState(NamedTuple):
    """The members' decoder states, moved together."""
    states: tuple

    def reorder(self, index, within_source=False, rows_per_source=1):
        return EnsembleState(tuple(s.reorder(index, within_source=within_source,
                                             rows_per_source=rows_per_source)
                                   for s in self.states))


class Ensemble(ModelDefaults, nn.Module):
    """Models of one vocabulary decoding as one (module docstring). `members`: models in eval
    mode on one device; the first one's execution is the ensemble's."""

    def __init__(self, members):
        super().__init__()
        if len(members) < 1:
            raise ValueError("an ensemble needs at least one model")
        sizes = {m.tgt_vocab_size for m in members}
        if len(sizes) != 1:
            raise ValueError(f"the members' target vocabularies differ in size: {sorted(sizes)}")
        self.members = nn.ModuleList(members)
        self.tgt_vocab_size = members[0].tgt_vocab_size
        self.copy = any(m.copy for m in members)
        self.execution = members[0].execution

    def encode(self, batch):
        return tuple(m.encode(batch) for m in self.members)

    def init_state(self, batch, enc):
        return EnsembleState(tuple(m.init_state(batch, e) for m, e in zip(self.members, enc)))

    def decode_step(self, inputs, state):
        """(log p (R, X) of the mixture, the new EnsembleState, the members' mean attns)."""
        logps, states, attns = [], [], []
        for member, s in zip(self.members, state.states):
            scores, new, a = member.decode_step_scores(inputs, s)
            logps.append(scores.full().float())                      # (R, X_m)
            states.append(new)
            attns.append(a or {})
        return (mean_log_probs(_same_width(logps)), EnsembleState(tuple(states)),
                _mean_attns(attns))

    def forward(self, batch):
        """Teacher forcing: (log p (B, T-1, X) of the mixture, the members' mean attns)."""
        outs = [m(batch) for m in self.members]
        return mean_log_probs(_same_width([lp.float() for lp, _ in outs])), _mean_attns(
            [a for _, a in outs])

    def gold_log_likelihood(self, batch, enc=None):
        """(ll (B, T-1) log of the members' mean p(gold), 0 at padding; pred: the first member's
        argmax; attns: the members' mean), the members' own gold paths (no (B, T-1, X) tensor)."""
        encs = enc if enc is not None else (None,) * len(self.members)
        outs = [m.gold_log_likelihood(batch, e) for m, e in zip(self.members, encs)]
        lls = [o[0].float() for o in outs]                              # (B, T-1) each
        if self.copy:   # a member that does not copy gives a copied word probability 0
            gold, mask = gold_targets(batch, extended_size(self, batch))  # (B, T-1) x2
            copied = mask & (gold >= self.tgt_vocab_size)
            lls = [ll if m.copy else ll.masked_fill(copied, -math.inf)
                   for m, ll in zip(self.members, lls)]
        return mean_log_probs(torch.stack(lls)), outs[0][1], _mean_attns([o[2] for o in outs])


def _same_width(logps):
    """(M, R, X) of the members' (R, X_m): a member without the extended slots (no copy) gives
    them -inf (probability 0)."""
    X = max(lp.size(-1) for lp in logps)
    return torch.stack([lp if lp.size(-1) == X else nn.functional.pad(
        lp, (0, X - lp.size(-1)), value=-math.inf) for lp in logps])


def _mean_attns(attns):
    """The mean of the members' attns of each key of MIXED_ATTNS every member gives in one shape;
    the other keys from the first member."""
    attns = [a or {} for a in attns]
    out = dict(attns[0])
    for key in MIXED_ATTNS:
        values = [a.get(key) for a in attns]
        if all(v is not None for v in values) and len({tuple(v.shape) for v in values}) == 1:
            out[key] = torch.stack([v.float() for v in values]).mean(dim=0)
        else:   # not every member gives it (alike): the ensemble has none
            out.pop(key, None)
    return out


def check_same_vocabularies(named_vocabs):
    """[(name, Vocabs)]: None, or one line naming the first member whose source or target
    vocabulary differs from the first member's, and where."""
    (first, v0), rest = named_vocabs[0], named_vocabs[1:]
    for name, v in rest:
        for side in ("src", "tgt"):
            a, b = getattr(v0, side).itos, getattr(v, side).itos
            if a == b:
                continue
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            where = (f"{len(b)} words against {len(a)}" if i == min(len(a), len(b))
                     else f"id {i} is {b[i]!r} there, {a[i]!r} in {first}")
            return (f"-model {name}: its {'source' if side == 'src' else 'target'} vocabulary "
                    f"differs from {first}'s ({where}): an ensemble's models must share one "
                    "vocabulary")
    return None
