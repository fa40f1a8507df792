"""The built-in scorer against a slow reference written from ROUGE-1.5.5's description, plus the
tokenization / sentence / limit cases where the built-in scorer used to differ from ROUGE-1.5.5."""
import random
from collections import Counter

import numpy as np
import pytest

from onmt.evaluation import METRICS, score, summarize
from onmt.evaluation.lcs import PackedReference, lcs_length, union_hits
from onmt.evaluation.scorer import RougeScorer
from onmt.evaluation.stemmer import Stemmer
from onmt.evaluation.text import limited_sentences, read_sent_per_line, sentence_tokens, split_sentences, tokens


# --------------------------------------------------------------------------- slow reference
def ref_tokens(text, stem):
    """ROUGE-1.5.5's readText: lowercase A-Z, every other byte but letters/digits a space, stem > 3."""
    out = "".join(c.lower() if ("A" <= c <= "Z") else c if ("a" <= c <= "z" or "0" <= c <= "9") else " "
                  for c in text).split()
    return [stem(t) if stem and len(t) > 3 else t for t in out]


def ref_lcs_marks(model, peer):
    """Textbook LCS table and ROUGE-1.5.5's traceback (diagonal on match, else up if c[i-1][j] >=
    c[i][j-1], else left): the set of marked model positions."""
    m, n = len(model), len(peer)
    c = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            c[i][j] = c[i - 1][j - 1] + 1 if model[i - 1] == peer[j - 1] else max(c[i - 1][j], c[i][j - 1])
    marks, i, j = set(), m, n
    while i and j:
        if model[i - 1] == peer[j - 1]:
            i, j = i - 1, j - 1
            marks.add(i)
        elif c[i - 1][j] >= c[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return c[m][n], marks


def reference_scores(pred_sents, refs_sents, stem=None):
    """(4, 3) P/R/F, ROUGE-1.5.5 -a -n 2 [-m] averaged over references, no length limit."""
    p_sents = [ref_tokens(s, stem) for s in pred_sents]
    p_all = [t for s in p_sents for t in s]
    hits, ref_len, pred_len = np.zeros(4), np.zeros(4), np.zeros(4)
    for r in refs_sents:
        r_sents = [ref_tokens(s, stem) for s in r]
        r_all = [t for s in r_sents for t in s]
        for k, n in enumerate((1, 2)):
            pg = Counter(tuple(p_all[i:i + n]) for i in range(len(p_all) - n + 1))
            rg = Counter(tuple(r_all[i:i + n]) for i in range(len(r_all) - n + 1))
            hits[k] += sum(min(c, pg[g]) for g, c in rg.items())
            ref_len[k] += sum(rg.values())
            pred_len[k] += sum(pg.values())
        hits[2] += ref_lcs_marks(r_all, p_all)[0]
        ref_len[2] += len(r_all)
        pred_len[2] += len(p_all)
        left_r, left_p = Counter(r_all), Counter(p_all)
        for rs in r_sents:
            marks = set()
            for ps in p_sents:
                marks |= ref_lcs_marks(rs, ps)[1]
            for i in sorted(marks):
                if left_r[rs[i]] > 0 and left_p[rs[i]] > 0:
                    hits[3] += 1
                    left_r[rs[i]] -= 1
                    left_p[rs[i]] -= 1
        ref_len[3] += len(r_all)
        pred_len[3] += len(p_all)
    p = np.where(pred_len > 0, hits / np.maximum(pred_len, 1), 0)
    r = np.where(ref_len > 0, hits / np.maximum(ref_len, 1), 0)
    f = np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0)
    return np.stack([p, r, f], axis=1)


WORDS = ["the", "cat", "cats", "sat", "sits", "sitting", "on", "mat", "mats", "a", "dog", "runs", "running",
         "ran", "went", "goes", "U.S.", "e-mail", "$5", "1990s", "café", "naïve", ",", ".", "-", "New-York",
         "settlement", "settlements"]


def random_summary(rng, max_sents=3):
    sents = []
    for _ in range(rng.randint(0, max_sents)):
        sents.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) + " .")
    return sents


@pytest.mark.parametrize("stemmed", [True, False])
def test_matches_slow_reference_with_several_references(stemmed):
    rng = random.Random(5)
    preds = [random_summary(rng) for _ in range(150)]
    refs = [[random_summary(rng) for _ in range(rng.randint(1, 4))] for _ in range(150)]
    got = RougeScorer(stem=stemmed).score_examples(preds, refs)
    stem = Stemmer() if stemmed else None
    want = np.array([reference_scores(p, r, stem) for p, r in zip(preds, refs)])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_lines_score_as_their_sentences():
    rng = random.Random(8)
    pieces = WORDS + ["<t>", "</t>", "\u00a0.", ".\u00a0", "\t.", "x\x1c.", "\u00a0"]
    lines = [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) for _ in range(300)]
    preds, refs = lines[:150], [[r] for r in lines[150:]]
    sc = RougeScorer()
    as_lines = sc.score_examples(preds, refs)                           # split inside the scorer
    as_sents = RougeScorer().score_examples([split_sentences(p) for p in preds],
                                            [[split_sentences(r) for r in rs] for rs in refs])
    np.testing.assert_array_equal(as_lines, as_sents)
    assert (as_lines[:, METRICS.index("rougeLsum")] != as_lines[:, METRICS.index("rougeL")]).any()


def test_union_hits_follow_rouge_path():
    rng = random.Random(0)
    for _ in range(500):
        refs = [[rng.randrange(4) for _ in range(rng.randint(0, 10))] for _ in range(rng.randint(1, 3))]
        preds = [[rng.randrange(4) for _ in range(rng.randint(0, 10))] for _ in range(rng.randint(1, 3))]
        packed = PackedReference(refs)
        mask = union_hits(packed, preds)
        whole = [t for r in refs for t in r]                  # guard rows must not change ROUGE-L
        assert all(packed.lcs_with(q) == ref_lcs_marks(whole, q)[0] for q in preds)
        for r, o in zip(refs, packed.offsets):
            want = set()
            for q in preds:
                length, marks = ref_lcs_marks(r, q)
                assert lcs_length(r, q) == length
                want |= marks
            assert {i for i in range(len(r)) if (mask >> (o + i)) & 1} == want


# --------------------------------------------------------------------------- where scorers used to differ
def test_tokens_like_rouge_1_5_5():
    assert tokens("The U.S. e-mail costs $5,000 (1990s)!") == ["the", "u", "s", "e", "mail", "costs", "5", "000",
                                                              "1990s"]
    assert tokens("café naïve Ünïcode") == ["caf", "na", "ve", "n", "code"]      # non-ASCII separates
    assert tokens("KELVIN \u212a") == ["kelvin"]                                   # no Unicode lowercasing
    assert tokens("") == [] and tokens(" . , -- ") == []


def test_plural_and_verb_forms_match_when_stemmed():
    [[p1, r1, f1], *_] = score(["the cats were sitting"], ["a cat sits"])[0]
    assert r1 == pytest.approx(2 / 3) and p1 == pytest.approx(2 / 4)                # cat(s), sit(s/ting)
    [[_, r0, _], *_] = score(["the cats were sitting"], ["a cat sits"], stem=False)[0]
    assert r0 == 0.0
    # WordNet exceptions: "went" and "goes" both reach "go" only through the exception list / Porter
    assert score(["he went home"], ["she goes home"])[0][0, 1] == pytest.approx(2 / 3)


def test_hyphens_and_punctuation_are_not_tokens():
    s = score(["well-known state-of-the-art ."], ["well known state of the art"])[0]
    np.testing.assert_allclose(s[:, 2], 1.0)


def test_empty_lines_score_zero_and_count():
    s = score(["", "a b c", "a b c"], ["a b c", "", "a b c"])
    assert s.shape == (3, 4, 3)
    assert (s[0] == 0).all() and (s[1] == 0).all() and (s[2] == 1).all()
    assert summarize(s)["rouge1"]["f"] == pytest.approx(100 / 3)


def test_sentences_dot_tags_and_per_line():
    assert split_sentences("a b . c d . e") == ["a b .", "c d .", "e"]
    assert split_sentences("<t> a b . </t> <t> c </t>") == ["a b .", "c"]
    assert split_sentences("a . b", "") == ["a . b"]
    assert read_sent_per_line(["a b", "c", "", "", "d", ""]) == [["a b", "c"], [], ["d"]]
    # Lsum sees the sentence split, L does not
    one = score(["x y z . a b c"], ["a b c . x y z"])[0]
    assert one[METRICS.index("rougeLsum"), 2] == pytest.approx(1.0)
    assert one[METRICS.index("rougeL"), 2] == pytest.approx(0.5)


def test_sentence_split_and_tokens_match_naive_loops():
    rng = random.Random(2)
    for _ in range(300):
        toks = [rng.choice(["a", "B", ".", "é", "x-y", "<t>"[:rng.randint(1, 2)]]) for _ in range(rng.randint(0, 12))]
        naive, cur = [], []
        for t in toks:
            cur.append(t)
            if t == ".":
                naive.append(" ".join(cur))
                cur = []
        naive += [" ".join(cur)] if cur else []
        sents = split_sentences(" ".join(toks))
        assert sents == naive
        assert sentence_tokens(sents) == [tokens(x) for x in sents]


def test_multi_reference_sums_like_rouge_1_5_5():
    # hits 2 + 1 over reference lengths 2 + 4; prediction length 2 counted once per reference
    s = score(["a b"], [["a b", "a c d e"]])[0]
    assert s[0, 1] == pytest.approx(3 / 6) and s[0, 0] == pytest.approx(3 / 4)


def test_length_limits_cut_like_rouge_1_5_5():
    sents = ["aaaa bbbb", "cccc dddd eeee"]
    assert limited_sentences(sents, limit_words=3) == ["aaaa bbbb", "cccc"]
    assert limited_sentences(sents, limit_bytes=12) == ["aaaa bbbb", "ccc"]          # 9 + 3 bytes, space not counted
    assert limited_sentences(sents, limit_bytes=12, for_lcs=True) == ["aaaa bbbb", "cccc dddd ee"]
    assert limited_sentences(["é" * 10], limit_bytes=3) == ["é"]                     # cut inside a character
    # the limit applies to the references too
    s = score(["a b c d e f"], ["a b c x y z"], limit_words=3)[0]
    assert s[0, 2] == pytest.approx(1.0)
