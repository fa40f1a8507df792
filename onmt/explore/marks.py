"""What the explorer marks on each summary word, and the attention it ships, as compact plain
values.

    word_marks(words, source_words, copied=None, n=3) -> str     one hex digit per word: the OR of
        POINTER  1   the pointer produced it (the dump's `copied`: an OOV copy or p(copy) >= 0.5)
        SOURCE   2   the word occurs in the source (a word without it is novel)
        REPEATED 4   the word belongs to an n-gram (trigram) that occurred earlier in the summary
    sparse_rows(matrix, top=8, floor=0.01) -> [[pos, pct, pos, pct, ...] per row]
        each row's strongest positions, strongest first (so row[0] is the row's argmax), with the
        weight in whole percent (at least 1); positions under `floor` of the row's maximum are
        dropped, an all-zero row (the first step of an intra-decoder attention) is [].

Words are the tokens the models read and write (whitespace-split, lowercased): "in the source" is
exact token equality, as in onmt/evaluation/diagnostics.py.
"""
import numpy as np

POINTER, SOURCE, REPEATED = 1, 2, 4


def repeated_positions(words, n=3):
    """(len(words),) bool: True on the words of every n-gram that occurred earlier in `words` (the
    repeats diagnostics.repeated_ngrams counts; the first occurrence is not marked)."""
    marks = np.zeros(len(words), dtype=bool)
    seen = set()
    for i in range(len(words) - n + 1):
        gram = tuple(words[i:i + n])
        if gram in seen:
            marks[i:i + n] = True
        seen.add(gram)
    return marks


def word_marks(words, source_words, copied=None, n=3):
    """The marks (module docstring) of `words` against `source_words`, one hex digit per word.
    `copied`: the dump's (len(words),) bools, or None for a summary without them."""
    vocab = set(source_words)
    flags = np.array([SOURCE if w in vocab else 0 for w in words], dtype=np.int64)
    if copied is not None:
        copied = np.asarray(copied, dtype=bool).reshape(-1)
        if copied.shape[0] != len(words):
            raise ValueError(f"{copied.shape[0]} copy marks for {len(words)} words")
        flags |= np.where(copied, POINTER, 0)
    flags |= np.where(repeated_positions(words, n), REPEATED, 0)
    return "".join("0123456789abcdef"[f] for f in flags.tolist())


def sparse_rows(matrix, top=8, floor=0.01):
    """Each row's strongest positions (module docstring): a list per row of
    [pos, pct, pos, pct, ...]."""
    if matrix is None:
        return None
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"an attention matrix has 2 dimensions, got shape {m.shape}")
    k = min(top, m.shape[1])
    if k == 0:
        return [[] for _ in range(m.shape[0])]
    order = np.argsort(-m, axis=1, kind="stable")[:, :k]                  # (n, k), argmax first
    weights = np.take_along_axis(m, order, axis=1)                       # (n, k)
    keep = (weights > 0) & (weights >= floor * weights[:, :1])
    pct = np.maximum(np.rint(weights * 100), 1).astype(np.int64)
    rows = []
    for pos, w, ok in zip(order.tolist(), pct.tolist(), keep.tolist()):
        rows.append([v for p, q, o in zip(pos, w, ok) if o for v in (p, q)])
    return rows


def percents(values):
    """(n,) probabilities -> list of whole percents, or None."""
    if values is None:
        return None
    return np.rint(np.asarray(values, dtype=np.float64).reshape(-1) * 100).astype(np.int64).tolist()
