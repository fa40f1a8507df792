"""The search called with SearchSettings' fields as keywords, for the tests:

    search(model, batch, beam_size=3, n_best=2, max_length=8, length_penalty="wu", alpha=0.9)
    search(model, batch, beam_size=1, ...)   # greedy search
"""
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings


def search(model, batch, *, ignore_ids=None, keep_attn=False, keep_inspection=False, beam_history=None, **settings):
    """beam_search(model, batch, SearchSettings(**settings), ...): per example its n-best Hypothesis."""
    return beam_search(model, batch, SearchSettings(**settings), ignore_ids=ignore_ids, keep_attn=keep_attn,
                       keep_inspection=keep_inspection, beam_history=beam_history)


def grouped(state, rows_per_source):
    """`state`, told that its rows come in groups of `rows_per_source` consecutive rows decoding one source
    (a beam search's W rows per example), for a state with a `source_rows` field (interface.py
    DecoderStateBase): its source fields kept once per group (each group's first row: views, no copy).
    Other states, and one already grouped so, as they are. (The searches get such a state from a reorder in
    groups, `reorder(..., rows_per_source=W)`; this builds one directly for the tests.)"""
    from dataclasses import fields, replace
    W = int(rows_per_source)
    if "source_rows" not in {f.name for f in fields(state)} or state.source_rows == W:
        return state
    if state.source_rows != 1:
        raise ValueError(f"a state with {state.source_rows} rows per source cannot be regrouped by {W}")
    return replace(state, source_rows=W, **{name: getattr(state, name)[::W] for name in state._source_fields})
