"""The one interface every model offers; the trainers, losses and translator call only this.

    enc    = model.encode(batch)                      -> EncoderOutput
    state  = model.init_state(batch, enc)             -> DecoderState (holds what decoding needs,
                                                          encoder memory included)
    logp, state, attns = model.decode_step(inputs, state)
             inputs: (B,) ids in the extended vocabulary of the previous step; ids >= V_tgt are
                     replaced by <unk> inside the model before embedding.
             logp:   (B, X) log-probabilities over the extended vocabulary (X = V_tgt + n_oov for
                     copy models, X = V_tgt otherwise).
             attns:  dict of the step's by-products (inspection, -replace_unk, coverage):
                     "std"      (B, S) the attention over the source, when the model attends;
                     "coverage" (B, S) coverage models: the coverage before this step;
                     "p_copy"   (B,)   copy models (reinforced, copy_attn): the pointer's
                                probability 1 - p_gen of this step's distribution;
                     "intra"    (B, t) the reinforced model with intra-decoder attention: its
                                attention over the t previous decoder states (step t, from 0:
                                (B, 0) at the first step); absent with -no_intra_decoder_attn.
                     All are what the step computes anyway (returning them costs nothing); the
                     searches keep them per hypothesis only when asked (keep_attn /
                     keep_inspection).
    scores, state, attns = model.decode_step_scores(inputs, state)   decode_step for the searches,
             log p as "step scores" (onmt/modules/step_scores.py: bans, a beam's top K, each row's
             best, the full (B, X) on demand) that need not write the (B, X) tensor (the fused
             decodings: onmt/fused/mixture_scores.py). Same state and attns; scores.full() equals
             decode_step's logp. Default (models/generic.py ModelDefaults, which every model,
             the ensemble and the tests' toy models inherit): decode_step's logp as a
             DenseScores.
    logp, attns = model(batch)                         teacher forcing on batch.tgt
             logp:   (B, T-1, X) predicting batch.tgt[:, 1:]; attns: "std" (B, T-1, S),
             "coverage" (B, T-1, S) for coverage models (the coverage before each step),
             "p_copy" (B, T-1) for copy models (no gradient), "sampled" (B, T-1) under scheduled
             sampling.
    ll, pred, attns = model.gold_log_likelihood(batch, enc=None)  what the ML loss needs, teacher
                                                          forcing as in model(batch) (scheduled
                                                          sampling included)
             enc:    the batch's EncoderOutput when the caller already has it (the mixed objective
                     shares one encoding between its terms when the model has no dropout:
                     onmt/losses/rl.py), else the model encodes the batch itself.
             ll:     (B, T-1) log p(gold) with 0 at padding, gold = gold_targets(batch, X)
             pred:   (B, T-1) argmax ids over the extended vocabulary (no gradient)
             attns:  as model(batch) returns them ("p_copy" (B, T-1) included for copy models).
             At padding steps pred and p_copy are unspecified (a model may skip those rows: See
             et al.'s gives PAD and 0 there): mask with batch.tgt[:, 1:] != PAD.
             Values and gradients equal those of model(batch) followed by a gather of the gold; a
             model may compute them without the (B, T-1, X) distribution (the reinforced model
             does).
    rollouts = model.rollout(batch, enc, max_length, modes)  free-running decoding from `enc` for
                                                          the self-critical loss (no <s>, at most
                                                          max_length tokens, </s> ends a sequence):
             one `Rollout` per mode, in the order of `modes`, each mode "sample" or "greedy":
             "sample": y_t drawn from the model's distribution, rollout.log_probs (B, L) holds
                       log p(y_t | y_<t, x) (with gradient under autograd; 0 after the first </s>);
             "greedy": the argmax at every step, no gradient, log_probs None.
             A model may run the modes in lockstep (the reinforced model shares each step's
             generator product); `rollout_from_steps` runs them one after the other through
             decode_step.
    state.reorder(index, within_source=False, rows_per_source=1) -> DecoderState
             index: (B',) rows to keep/repeat (beams); within_source=True promises that every new
             row decodes the same source as the row it comes from (beam backpointers), so the
             source-only fields need no copy; rows_per_source G: the new rows come in groups of G
             consecutive rows of one source each (DecoderStateBase: a state keeping its source
             fields once per source selects each group's, not a copy per row).

Models also expose `tgt_vocab_size` (V_tgt), `copy` (True when logp covers the extended vocabulary),
`execution` (what runs: onmt/execution.py, fixed when the model is built) and the members with
defaults of onmt/models/generic.py's ModelDefaults, which every registered model inherits:
    model.decode_step_scores(inputs, state)       above
    model.upgrade_state_dict(state) -> state      a checkpoint's state dict with old keys renamed
                                                  (identity)
    model.execution_notes() -> [str]              the fused paths of `execution` that do not apply
                                                  to the model, each with why (build_model logs
                                                  them; none)
    model.embeddings(side) -> module or None      the "encoder" / "decoder" word embeddings
                                                  (-pre_word_vecs_*, -fix_word_vecs_*): that side's
                                                  `.embeddings`
    model.begin_training_step(step)               the trainer's call before each training step
                                                  (1-based): a model whose training changes with
                                                  the step (scheduled sampling's schedule) updates
                                                  itself (nothing)
`Model` and `DecoderState` below state the same contract as typing Protocols (checked by
tests/unit/test_interface.py for every family of the registry); ATTN_KEYS lists every attns key.
"""
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Protocol, runtime_checkable

import torch

from onmt.constants import EOS, PAD, UNK

# Every key a model may put in `attns`: decode_step gives the (B, ...) value of one step,
# model(batch) and gold_log_likelihood the values of all steps stacked on dimension 1,
# (B, T-1, ...).
ATTN_KEYS = {
    "std": "attention over the source positions, (B, S) per step; every model that attends",
    "coverage": "coverage models: the summed attention before the step, (B, S) per step",
    "p_copy": "copy models: the pointer's probability 1 - p_gen, (B,) per step; "
              "no gradient in model(batch)",
    "intra": "the reinforced model's intra-decoder attention at step t over its t previous states, "
             "(B, t); decode_step only",
    "sampled": "teacher forcing under scheduled sampling: True where the step's input was the "
               "model's own prediction, (B, T-1); model(batch) and gold_log_likelihood only",
}


@runtime_checkable
class DecoderState(Protocol):
    """What a model's init_state returns and decode_step threads through
    (DecoderStateBase below)."""

    def reorder(self, index, within_source=False, rows_per_source=1) -> "DecoderState":
        """index (B',): the rows to keep or repeat (beams); see the module docstring."""


@runtime_checkable
class Model(Protocol):
    """The contract of every model (the module docstring gives the shapes); nn.Module subclasses
    implement it without inheriting from it."""

    tgt_vocab_size: int
    copy: bool
    execution: object                                          # onmt/execution.py's Execution

    def encode(self, batch) -> "EncoderOutput": ...

    def init_state(self, batch, enc) -> DecoderState: ...

    def decode_step(self, inputs, state) -> tuple: ...         # (logp (B, X), state, attns)

    def __call__(self, batch) -> tuple: ...                    # (logp (B, T-1, X), attns)

    # (ll (B, T-1), pred (B, T-1), attns)
    def gold_log_likelihood(self, batch, enc=None) -> tuple: ...

    # one Rollout per mode
    def rollout(self, batch, enc, max_length, modes=("sample",)) -> tuple: ...

    # with defaults (onmt/models/generic.py ModelDefaults)
    def decode_step_scores(self, inputs, state) -> tuple: ...  # (step scores, state, attns)

    def upgrade_state_dict(self, state) -> dict: ...           # old checkpoint keys renamed

    # fused paths that do not apply, with why
    def execution_notes(self) -> list: ...

    # "encoder" / "decoder" word embeddings or None
    def embeddings(self, side): ...

    # before each training step (1-based)
    def begin_training_step(self, step) -> None: ...


@runtime_checkable
class Loss(Protocol):
    """The contract of every training objective (onmt/losses/: MLLoss, MixedLoss), all that the
    trainer (onmt/trainer.py) and its Reporter ask of one; the sums are Statistics
    (onmt/utils/statistics.py)."""

    def __call__(self, model, batch) -> tuple: ...             # (scalar loss, Statistics)

    # ({name: scalar loss}, Statistics): the terms adding up to the loss ({"loss": it} for one)
    def parts(self, model, batch) -> tuple: ...

    def validate(self, model, batch): ...                      # Statistics, without gradient

    # from a window's sums: (figures of the step line, lines of their own)
    def report(self, stats) -> tuple: ...

    def scalars(self, stats) -> dict: ...                      # TensorBoard's name -> value

    def valid_report(self, stats) -> list: ...                 # the validation's own lines


def gold_targets(batch, extended_size):
    """(B, T-1) gold ids for teacher forcing, and the (B, T-1) mask of real tokens.

    The gold is batch.tgt_ex[:, 1:] (batch.tgt without a dynamic dictionary) with ids >= X mapped to
    <unk>: copy models (X = V_tgt + n_oov) learn the extended ids of copyable OOVs, plain models
    (X = V_tgt) learn <unk> for them.
    """
    tgt = batch.tgt_ex if batch.tgt_ex is not None else batch.tgt
    gold = tgt[:, 1:]
    gold = gold.masked_fill(gold >= extended_size, UNK)  # (B, T-1)
    return gold, batch.tgt[:, 1:] != PAD


@dataclass
class Rollout:
    """Sequences decoded free-running (the model's own outputs fed back), batch-first."""
    tokens: torch.Tensor                 # (B, L) extended ids; PAD after the first </s>
    lengths: torch.Tensor                # (B,) tokens before the first </s> (it is not counted)
    mask: torch.Tensor                   # (B, L) True up to and including the first </s>
    # (B, L) log p(token | prefix, x), 0 where ~mask; None (greedy)
    log_probs: Optional[torch.Tensor]
    copied: Optional[torch.Tensor] = None  # (B, L) True where the token was drawn by the pointer


def finish_rollout(tokens, log_probs=None, copied=None):
    """A Rollout from the (B, L) tokens of every step: masks after each row's first </s>."""
    is_eos = tokens == EOS  # (B, L)
    before = (is_eos.long().cumsum(1) - is_eos.long()) == 0  # (B, L) no </s> earlier in the row
    lengths = (before & ~is_eos).sum(1)  # (B,)
    if log_probs is not None:
        log_probs = log_probs.masked_fill(~before, 0.0)
    if copied is not None:
        copied = copied & before & ~is_eos
    return Rollout(tokens.masked_fill(~before, PAD), lengths, before, log_probs, copied)


ROLLOUT_MODES = ("sample", "greedy")


def check_rollout_modes(modes, max_length):
    unknown = [m for m in modes if m not in ROLLOUT_MODES]
    if unknown or not modes:
        raise ValueError(f"rollout modes must be among {ROLLOUT_MODES}, got {modes}")
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")


def extended_size(model, batch):
    """X: the size of the model's output distribution for this batch."""
    return model.tgt_vocab_size + (int(batch.n_oov) if model.copy else 0)


@dataclass
class EncoderOutput:
    memory: torch.Tensor                 # (B, S, H) encoder states
    # decoder initial hidden state (tensor or (h, c)), (L, B, H)
    final: Optional[object]
    mask: torch.Tensor                   # (B, S) True at real source positions
    # what a model derives from its parameters once per encoded batch and every pass over this
    # encoding reads (the reinforced model's W_out = tanh(E_tgt W_proj): the ML term and the
    # rollouts of a mixed step share it); lives and dies with the encoding, so nothing outlives a
    # step's graph
    per_pass: dict = field(default_factory=dict, repr=False, compare=False)


def per_pass(enc, name, build):
    """build() once per encoding and grad mode, kept in enc.per_pass (EncoderOutput): what every
    pass over one encoding derives alike from the parameters (the grad mode in the key: a value
    built without autograd never stands in for one a gradient must flow through)."""
    key = (name, torch.is_grad_enabled())
    if key not in enc.per_pass:
        enc.per_pass[key] = build()
    return enc.per_pass[key]


def reorder_value(value, index, batch_dim=0):
    """index_select along the batch dimension of a tensor, or of each tensor in a tuple/list."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.index_select(batch_dim, index)
    if isinstance(value, (tuple, list)):
        return type(value)(reorder_value(v, index, batch_dim) for v in value)
    return value


class DecoderStateBase:
    """A dataclass mix-in: reorder() selects rows of every tensor field.

    Fields listed in `_batch_dims` use that dimension as their batch dimension (e.g. 1 for RNN
    hidden states shaped (L, B, H)); all others use dimension 0. Non-tensor fields are copied.
    Fields listed in `_source_fields` depend only on the source (encoder memory, keys, masks,
    extended ids): a reorder `within_source=True` (each new row comes from a row decoding the same
    source, as beam backpointers do) keeps them as they are instead of copying them every step.

    A state with a `source_rows` field G (the reinforced and the RNN decoders') keeps its source
    fields once per source: R/G rows, row r of the state decoding stored source r // G (G = 1: one
    per row, as others). A reorder told that its new rows come in groups of G' rows of one source (a
    beam's first step, examples leaving) selects each group's source instead of copying it per row;
    any other reorder gives one source per row again. `per_row(name)` gives a source field per row.
    """

    _batch_dims = {}
    _source_fields = frozenset()
    # not per row (e.g. a projection evaluated once per batch): never reordered
    _shared_fields = frozenset()

    def reorder(self, index, within_source=False, rows_per_source=1):
        """index (R',): new row i is row index[i]. within_source: every new row decodes the source
        of the row it comes from. rows_per_source G': the new rows come in groups of G' consecutive
        rows decoding one source each (only a state with `source_rows` uses it: it then keeps G' for
        its source fields)."""
        names = {f.name for f in fields(self)}
        grouped = "source_rows" in names and not within_source
        skip = self._shared_fields | (self._source_fields if within_source else frozenset())
        changes = {}
        for name in names - skip:
            rows = index
            # stored once per source: each group's source
            if grouped and name in self._source_fields:
                rows = torch.div(index[::rows_per_source], self.source_rows, rounding_mode="floor")
            changes[name] = reorder_value(getattr(self, name), rows, self._batch_dims.get(name, 0))
        if grouped:
            changes["source_rows"] = int(rows_per_source)
        return replace(self, **changes)

    def per_row(self, name):
        """The source field `name` with one row per decoding row (a state with `source_rows` G > 1
        keeps one per source: repeated here)."""
        value = getattr(self, name)
        G = getattr(self, "source_rows", 1)
        return value if G == 1 or value is None else value.repeat_interleave(G, dim=0)
