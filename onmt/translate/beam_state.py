"""The state of a beam search: every tensor of the live hypotheses, kept in lockstep.

Two kinds of fields. Row fields hold one row per live hypothesis, R = B*W rows (W hypotheses of each
of the B examples still decoded, example-major): the model's decoder state, the next inputs, the
produced ids, and what the search keeps besides (attention, inspection, coverage). Example fields
hold one row per example: the running scores of its W hypotheses, the scores of its best finished
ones and its position in the original batch.

Only two operations move rows, so no field can fall out of step:
- `reorder(rows)`: row i of the new beam is row rows[i] of the old one (beam backpointers; rows may
  repeat rows and grow R, as the first step does from B rows to B*K); example fields are untouched;
  a row field the step overwrites (its next inputs) is given to `reorder` as `replacing`, not moved;
- `select(keep)`: keep the examples `keep` (finished examples leave the batch): their W rows each in
  every row field, their entries in every example field.
"""
from dataclasses import dataclass, fields
from typing import Optional

import torch

from onmt.interface import reorder_value


@dataclass
class BeamState:
    state: object                          # the model's DecoderState, R rows
    inputs: torch.Tensor                   # (R,) the ids the next step reads
    history: torch.Tensor                  # (R, t) the ids produced so far
    scores: torch.Tensor                   # (B, W) running scores that rank the hypotheses
    raw: torch.Tensor                      # (B, W) their sums of log-probabilities
    kept: torch.Tensor                     # (B, n_best) the best finished scores, descending
    example: torch.Tensor                  # (B,) position of each example in the original batch
    # (R, t, S) source attention of each produced id (keep_attn)
    attn: Optional[torch.Tensor] = None
    inspected: Optional[dict] = None       # keep_inspection: {"p_copy": (R, t), "intra": (R, t, t)}
    cov: Optional[torch.Tensor] = None     # (R, S) attention sums (coverage penalty)
    cov_mask: Optional[torch.Tensor] = None  # (R, S) real source positions (coverage penalty)

    # fields that depend on the source only: a reorder within_source leaves them as they are
    SOURCE_FIELDS = frozenset({"cov_mask"})
    EXAMPLE_FIELDS = frozenset({"scores", "raw", "kept", "example"})

    @property
    def width(self):
        """W, the hypotheses (rows) per example."""
        return self.scores.size(1)

    def changed(self, **changes):
        """This beam with `changes` ({field: value}) made: `dataclasses.replace` without its
        __init__ (a search step makes several; replace costs ~25 us on 11 fields, this ~1 us)."""
        out = object.__new__(BeamState)
        out.__dict__.update(self.__dict__, **changes)
        return out

    def row_fields(self):
        return [f.name for f in fields(self) if f.name not in self.EXAMPLE_FIELDS]

    def reorder(self, rows, within_source=False, replacing=None, rows_per_source=1):
        """The beam whose row i is row rows[i] (rows (R',)); within_source: every new row comes from
        a row of the same example (backpointers), so the source-only fields stay as they are.
        replacing: {row field: its new value, R' rows} for the fields the caller overwrites anyway
        (a step's next inputs): set, not reordered first, so the beam is never half moved.
        rows_per_source: the new rows come in groups of that many consecutive rows of one example;
        the model's state then selects its per-source fields instead of copying them per row."""
        replacing = replacing or {}
        unknown = set(replacing) - set(self.row_fields())
        if unknown:
            raise ValueError("only row fields can replace their reordered value, "
                             f"not {sorted(unknown)}")
        skip = (self.EXAMPLE_FIELDS | set(replacing)
                | (self.SOURCE_FIELDS if within_source else frozenset()))
        changes = {name: _reordered(getattr(self, name), rows, within_source, rows_per_source)
                   for name in self.row_fields() if name not in skip}
        return self.changed(**changes, **replacing)

    def select(self, keep):
        """The beam of the examples `keep` (B',) only, in that order."""
        W = self.width
        rows = (keep.unsqueeze(1) * W + torch.arange(W, device=keep.device)).view(-1)   # (B'*W,)
        out = self.reorder(rows, rows_per_source=W)
        return out.changed(**{name: getattr(self, name)[keep] for name in self.EXAMPLE_FIELDS})


def _reordered(value, rows, within_source, rows_per_source):
    if hasattr(value, "reorder"):                   # the model's decoder state
        return value.reorder(rows, within_source=within_source, rows_per_source=rows_per_source)
    if isinstance(value, dict):
        return {k: v.index_select(0, rows) for k, v in value.items()}
    return reorder_value(value, rows)
