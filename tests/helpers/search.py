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
