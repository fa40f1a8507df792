"""What summaries look like besides their ROUGE: length, repetition, novelty, copying.

    summary_diagnostics(preds, sources, refs, copied=None) -> {
        "length": mean words per prediction, "ref_length": mean words per reference,
        "repeated_trigrams": % of a prediction's trigrams that occurred earlier in it,
        "novel_bigrams": % of a prediction's bigrams absent from its source,
        "copy_share": % of predicted words the pointer produced (given `copied`, one bool per word)}

Texts are whitespace-tokenized strings (the tokenized, lowercased form the models read and write).
Percentages are over all n-grams of all predictions (micro-averaged), so long outputs weigh more, as
in See et al.'s novelty figures.
"""


def ngrams(words, n):
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def repeated_ngrams(words, n=3):
    """(repeated, total): the n-grams of `words` that occurred earlier in `words`, and all of
    them."""
    seen, repeated = set(), 0
    grams = ngrams(words, n)
    for g in grams:
        repeated += g in seen
        seen.add(g)
    return repeated, len(grams)


def novel_ngrams(words, source_words, n=2):
    """(novel, total): the n-grams of `words` absent from `source_words`, and all of them."""
    source = set(ngrams(source_words, n))
    grams = ngrams(words, n)
    return sum(g not in source for g in grams), len(grams)


def summary_diagnostics(preds, sources, refs, copied=None):
    if (not (len(preds) == len(sources) == len(refs))
            or (copied is not None and len(copied) != len(preds))):
        raise ValueError("predictions, sources, references (and copy marks) must be as many")
    words = [p.split() for p in preds]
    rep = [repeated_ngrams(w, 3) for w in words]
    nov = [novel_ngrams(w, s.split(), 2) for w, s in zip(words, sources)]
    n = max(len(preds), 1)
    out = {"length": sum(map(len, words)) / n,
           "ref_length": sum(len(r.split()) for r in refs) / n,
           "repeated_trigrams": 100.0 * sum(r for r, _ in rep) / max(sum(t for _, t in rep), 1),
           "novel_bigrams": 100.0 * sum(v for v, _ in nov) / max(sum(t for _, t in nov), 1)}
    if copied is not None:
        out["copy_share"] = (100.0 * sum(sum(map(bool, c)) for c in copied)
                             / max(sum(len(c) for c in copied), 1))
    return out
