"""Summary diagnostics (onmt/evaluation/diagnostics.py) against counts done by hand."""
import pytest

from onmt.evaluation.diagnostics import novel_ngrams, repeated_ngrams, summary_diagnostics


def test_repeated_trigrams_count_later_occurrences_only():
    words = "a b c a b c a b d".split()
    # trigrams: abc bca cab abc bca cab abd -> the second abc, bca, cab repeat
    assert repeated_ngrams(words, 3) == (3, 7)
    assert repeated_ngrams("a b".split(), 3) == (0, 0)


def test_novel_bigrams_are_those_absent_from_the_source():
    assert novel_ngrams("x y z".split(), "w x y".split(), 2) == (1, 2)   # (x y) in the source, (y z) not


def test_summary_diagnostics_micro_averages():
    preds = ["a b c a b c", "q r"]
    sources = ["a b c", "r q"]
    refs = ["a b c d", "q r s t"]
    d = summary_diagnostics(preds, sources, refs, copied=[[1, 1, 0, 0, 0, 0], [0, 1]])
    assert d["length"] == 4.0 and d["ref_length"] == 4.0
    assert d["repeated_trigrams"] == pytest.approx(100 * 1 / 4)    # abc bca cab abc -> 1 of 4
    # bigrams: ab bc ca ab bc (only "c a" novel) + qr (novel): 2 of 6
    assert d["novel_bigrams"] == pytest.approx(100 * 2 / 6)
    assert d["copy_share"] == pytest.approx(100 * 3 / 8)
    with pytest.raises(ValueError):
        summary_diagnostics(preds, sources[:1], refs)
