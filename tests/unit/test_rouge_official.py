"""Built-in scorer == ROUGE-1.5.5 (-official) within 0.05 points, when perl and XML::Parser are here.

Fixtures: 300 generated pairs full of the cases where scorers used to differ (plural and verb forms,
irregular verbs, hyphens, punctuation, digits, non-ASCII, empty lines, several references), and,
when the shared data is present, 200 CNN/DM validation references against their lead-3 and 300
Gigaword ones against their first 8 words (DUC-style byte and word limits included).
"""
import gzip
import os
import random

import numpy as np
import pytest

from helpers.paths import SHARED_DATA
from onmt.evaluation import METRICS, official, score_sentences, summarize
from onmt.evaluation.text import split_sentences

SHARED = SHARED_DATA


def _why_unavailable():
    try:
        official.check()
        return None
    except official.OfficialUnavailable as e:
        return str(e)


pytestmark = pytest.mark.skipif(_why_unavailable() is not None, reason=f"{_why_unavailable()}")

WORDS = ("The cat cats sat sits sitting sat on mats mat . , ; -- - e-mail U.S. $5,000 1990s 3.5% went goes go "
         "gone children child settlement settlements agreements agreed agreeing happy happiness café naïve "
         "Zürich (cnn) \" ' '' `` well-known 's n't a an of to in New-York running ran runs").split()


def generated(n=300, seed=11):
    rng = random.Random(seed)

    def summary():
        if rng.random() < 0.05:
            return ""
        return " ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + " ."
                        for _ in range(rng.randint(1, 4)))
    preds = [summary() for _ in range(n)]
    refs = [[summary() for _ in range(rng.randint(1, 4))] for _ in range(n)]
    return preds, refs


def _lines(path, n):
    if not os.path.exists(path):
        pytest.skip(f"shared data {path} is absent")
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def cnndm_lead3(n=200):
    src = _lines(os.path.join(SHARED, "cnndm", "valid.src.txt.gz"), n)
    tgt = _lines(os.path.join(SHARED, "cnndm", "valid.tgt.txt.gz"), n)
    return [" ".join(split_sentences(s)[:3]) for s in src], [[t] for t in tgt]


def gigaword_lead8(n=300):
    src = _lines(os.path.join(SHARED, "gigaword", "valid.src.txt"), n)
    tgt = _lines(os.path.join(SHARED, "gigaword", "valid.tgt.txt"), n)
    return [" ".join(s.split()[:8]) for s in src], [[t] for t in tgt]


def _split(preds, refs):
    return [split_sentences(p) for p in preds], [[split_sentences(r) for r in rs] for rs in refs]


def assert_agree(preds, refs, tol=0.05, **kw):
    p, r = _split(preds, refs)
    ours = score_sentences(p, r, **kw)
    perl = score_sentences(p, r, official=True, **kw)
    a, b = summarize(ours), summarize(perl)
    for m in METRICS:
        for k in "prf":
            assert abs(a[m][k] - b[m][k]) < tol, (m, k, a[m][k], b[m][k])
    # per example too (ROUGE-1.5.5 prints 5 decimals)
    worst = np.abs(ours - perl).max()
    assert worst < 1e-4, worst
    return a


def test_generated_tricky_pairs():
    preds, refs = generated()
    assert len(preds) >= 200
    assert_agree(preds, refs)


def test_generated_pairs_without_stemming():
    preds, refs = generated(200, seed=3)
    assert_agree(preds, refs, stem=False)


@pytest.mark.parametrize("limit", [dict(limit_bytes=75), dict(limit_words=10)])
def test_generated_pairs_with_length_limits(limit):
    preds, refs = generated(200, seed=4)
    assert_agree(preds, refs, **limit)


def test_cnndm_lead3():
    preds, refs = cnndm_lead3()
    res = assert_agree(preds, refs)
    assert 20 < res["rouge1"]["f"] < 50          # a sane lead-3 figure


def test_gigaword_first_words_duc_limit():
    preds, refs = gigaword_lead8()
    assert_agree(preds, refs)
    assert_agree(preds, refs, limit_bytes=75)


def test_missing_perl_module_is_named(monkeypatch):
    import subprocess
    real = subprocess.run

    def fake(cmd, *a, **kw):
        if cmd[:2] == ["perl", "-MXML::Parser"]:
            return subprocess.CompletedProcess(cmd, 2)
        return real(cmd, *a, **kw)
    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(official.OfficialUnavailable, match="XML::Parser.*libxml-parser-perl"):
        official.check()
