"""onmt/prepare/detokenize.py: readable text from tokens, and the round trip with the tokenizer."""
import gzip
import os
import re

import pytest

from helpers.paths import ROOT
from onmt.prepare.detokenize import detokenize
from onmt.prepare.tokenize import ptb_tokenize


@pytest.mark.parametrize("tokens, text", [
    ("he 's \" ready , \" u.s. officials say -lrb- cnn -rrb- .", 'He\'s "ready," U.S. officials say (cnn).'),
    ("police ca n't find the dogs ' owner -- i said . it cost $ 5 , 100 % sure ...",
     "Police can't find the dogs' owner -- I said. It cost $5, 100% sure..."),
    ("-lsb- a -rsb- -lcb- b -rcb- : c ; d ! e ?", "[A] {b}: c; d! E?"),
    ("<unk> said the <unk> .", "<unk> said the <unk>."),
    # split hyphens (Gigaword, CNN/DM), abbreviations ending a sentence, PTB quotes, # digits
    ("a ## - year - old man at a state - owned firm -- reports", "A ##-year-old man at a state-owned firm -- reports"),
    ("talks with the u.s. . it ended .", "Talks with the U.S. It ended."),
    ("`` we won , '' he said . ` yes ' , she said", "\"We won,\" he said. 'Yes', she said"),
    ("-lrb- reuters -rrb- # people died , ## % said", "(Reuters) # people died, ##% said"),
    ("it is 9 - 5 ( or so ) - and i left", "It is 9-5 (or so) - and I left"),
    ("the dogs ' owner said ` no '", "The dogs' owner said 'no'"),
])
def test_rules(tokens, text):
    assert detokenize(tokens, sentence_case=True) == text
    assert detokenize(tokens.split(), sentence_case=True) == text


@pytest.mark.parametrize("raw", ['(CNN) The U.S. isn\u2019t "ready," he said.',
                                 'It costs $5, they said: "no way!" -- really...',
                                 "The dogs' owner won't [talk] {now}; can't he?"])
def test_raw_text_round_trips_through_the_tokenizer(raw):
    expected = raw.replace("\u2019", "'")
    assert detokenize(ptb_tokenize(raw)) == expected


def _cnndm_targets(n=300):
    path = os.path.join(ROOT, "..", "shared", "data", "cnndm", "valid.tgt.txt.gz")
    if not os.path.exists(path):
        pytest.skip("the shared CNN/DM data is not here (../shared/data/cnndm)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f).strip() for _ in range(n)]


def test_cnndm_summaries_round_trip():
    """Tokenized, lowercased CNN/DM summaries: detokenized, then tokenized again, give the same tokens, the
    split hyphens joined (`35 - year - old` -> `35-year-old`, a word to this project's tokenizer; all but
    a few lines, where See et al.'s tokenizer differs from this project's: `.40-caliber`, a raw `(`), and
    no tokenization is left for a reader to see."""
    lines = _cnndm_targets()
    same = 0
    for line in lines:
        text = detokenize(line, sentence_case=True)
        same += ptb_tokenize(text.lower()) == re.sub(r"(?<=\w) - (?=\w)", "-", line).split()
        assert not any(k in text for k in (" 's ", " n't", "-lrb-", "-rrb-", " , ", " . ")), (line, text)
        assert not re.search(r"\w - \w", text), (line, text)
        assert text[:1] == text[:1].upper()
    assert same >= 0.9 * len(lines), same
