import random

from onmt.utils.rouge import corpus_rouge, lcs_positions, rouge_l, rouge_l_summary, rouge_n


def naive_lcs(a, b):
    """Textbook recursive LCS with memo."""
    memo = {}

    def go(i, j):
        if i == len(a) or j == len(b):
            return 0
        if (i, j) not in memo:
            memo[(i, j)] = go(i + 1, j + 1) + 1 if a[i] == b[j] else max(go(i + 1, j), go(i, j + 1))
        return memo[(i, j)]
    return go(0, 0)


def test_rouge_l_matches_textbook_lcs():
    rng = random.Random(0)
    for _ in range(200):
        a = [rng.choice("abcde") for _ in range(rng.randint(1, 12))]
        b = [rng.choice("abcde") for _ in range(rng.randint(1, 12))]
        lcs = naive_lcs(a, b)
        p, r, f = rouge_l(a, b)
        assert abs(p - lcs / len(a)) < 1e-12 and abs(r - lcs / len(b)) < 1e-12
        pos = lcs_positions(a, b)
        assert len(pos) == lcs and pos == sorted(pos, reverse=True)


def test_rouge_n_clips_counts():
    p, r, f = rouge_n("the the the".split(), "the cat".split(), 1)
    assert abs(p - 1 / 3) < 1e-12 and abs(r - 1 / 2) < 1e-12


def test_summary_level_lin_example():
    # Lin (2004) section 3.2: r = w1..w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5
    ref = [["w1", "w2", "w3", "w4", "w5"]]
    cand = [["w1", "w2", "w6", "w7", "w8"], ["w1", "w3", "w8", "w9", "w5"]]
    p, r, f = rouge_l_summary(cand, ref)
    assert abs(r - 4 / 5) < 1e-12  # union LCS = w1 w2 w3 w5
    assert abs(p - 4 / 10) < 1e-12


def test_corpus_rouge_identical_is_100():
    s = corpus_rouge(["a b c . d e ."], ["a b c . d e ."])
    assert all(abs(v[2] - 100.0) < 1e-9 for v in s.values())
