"""ROUGE as papers report it: ROUGE-1.5.5's numbers from a fast built-in scorer, or from the Perl
script itself (`official`), with bootstrap intervals and paired tests.

    text.py       summaries -> sentences, length limits, tokens (as ROUGE-1.5.5 reads them)
    stemmer.py    ROUGE-1.5.5's -m stemmer (WordNet exceptions + its Porter variant)
    lcs.py        bit-parallel LCS and ROUGE-1.5.5's summary-level LCS path
    scorer.py     per-example ROUGE-1/2/L/Lsum P, R, F (the built-in scorer)
    official.py   the same through ROUGE-1.5.5.pl
    bootstrap.py  confidence intervals, paired bootstrap test

`score(preds, refs, ...)` is the entry point for code (translate.py -report_rouge uses it);
`onmt_evaluate` (onmt/bin/evaluate.py) the one for people.
"""
from onmt.evaluation.scorer import METRICS, RougeScorer, summarize
from onmt.evaluation.text import split_sentences


def score(pred_lines, ref_lines, *, official=False, stem=True, limit_words=0, limit_bytes=0,
          sentence_marker="."):
    """Per-example scores, (n, 4, 3) array (METRICS x P/R/F, in [0, 1]), of one summary per line.
    `ref_lines[i]` is one reference line or a list of them (several references)."""
    refs = [[rs] if isinstance(rs, str) else list(rs) for rs in ref_lines]
    if not official:       # the built-in scorer splits lines itself (faster than sentence strings)
        return RougeScorer(stem=stem, limit_words=limit_words, limit_bytes=limit_bytes,
                           sentence_marker=sentence_marker).score_examples(list(pred_lines), refs)
    preds = [split_sentences(p, sentence_marker) for p in pred_lines]
    refs = [[split_sentences(r, sentence_marker) for r in rs] for rs in refs]
    return score_sentences(preds, refs, official=True, stem=stem, limit_words=limit_words,
                           limit_bytes=limit_bytes)


def score_sentences(preds, refs, *, official=False, stem=True, limit_words=0, limit_bytes=0):
    """Like `score` on summaries already split into sentences (refs[i]: list of sentence lists)."""
    if official:
        from onmt.evaluation import official as perl  # official.py imports this package (a cycle)
        return perl.score_examples(preds, refs, stem=stem, limit_words=limit_words,
                                   limit_bytes=limit_bytes)
    return RougeScorer(stem=stem, limit_words=limit_words,
                       limit_bytes=limit_bytes).score_examples(preds, refs)


__all__ = ["METRICS", "RougeScorer", "score", "score_sentences", "summarize"]
