"""Tokenized text back to text a reader expects: the inverse of `tokenize.ptb_tokenize`, as far as the
tokens allow.

    detokenize("he 's \" ready , \" u.s. officials say -lrb- cnn -rrb- .", sentence_case=True)
    -> 'He\'s "ready," U.S. officials say (cnn).'   (sentence_case: each sentence's first letter)

The rule, in one place:
- brackets: -lrb- -lsb- -lcb- become ( [ { and join the next token; -rrb- -rsb- -rcb- become ) ] } and
  join the previous one;
- clitics n't 's 're 've 'll 'd 'm, and a lone ' after a word ending in s (a plural possessive), join
  the previous word (`ca n't` -> `can't`, `he 's` -> `he's`);
- . , ; : ! ? % ... and a closing " join the previous token; an opening " and $ join the next one
  (double quotes alternate: the first of a pair opens);
- `--` and every other token are separated by one space; `<unk>` and other tags are left as they are;
- with `sentence_case` (for text the data lowercased): the first letter of the text and of each word
  after . ! ? is upper-cased, as is the pronoun `i`; letter-dot abbreviations (`u.s.`) are upper-cased.
Scoring (ROUGE) keeps working on the tokenized form: detokenize only what a person reads.
"""
import re

OPEN = {"-lrb-": "(", "-lsb-": "[", "-lcb-": "{"}
CLOSE = {"-rrb-": ")", "-rsb-": "]", "-rcb-": "}"}
CLITICS = {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}
JOIN_PREVIOUS = {".", ",", ";", ":", "!", "?", "%", "...", "'"}
JOIN_NEXT = {"$", "#"}
_ABBREVIATION = re.compile(r"^(?:[a-z]\.){2,}$")


def detokenize(text, sentence_case=False):
    """One line of tokens (a string, or a list of tokens) -> readable text (module docstring)."""
    tokens = text.split() if isinstance(text, str) else list(text)
    out, glue_next, quote_open = [], False, False
    for tok in tokens:
        low = tok.lower()
        word, join_prev, join_next = tok, False, False
        if low in OPEN:
            word, join_next = OPEN[low], True
        elif low in CLOSE:
            word, join_prev = CLOSE[low], True
        elif low in CLITICS or (tok == "'" and out and out[-1].lower().endswith("s")):
            join_prev = True
        elif tok == '"':
            join_prev, join_next = (True, False) if quote_open else (False, True)
            quote_open = not quote_open
        elif tok in JOIN_PREVIOUS:
            join_prev = True
        elif tok in JOIN_NEXT:
            join_next = True
        if out and (join_prev or glue_next):
            out[-1] += word
        else:
            out.append(word)
        glue_next = join_next
    text = " ".join(out)
    return _sentence_case(text) if sentence_case else text


def _sentence_case(text):
    words = text.split(" ")
    start = True
    for i, w in enumerate(words):
        bare = w.lstrip("(\"[{$")
        lead = w[:len(w) - len(bare)]
        if _ABBREVIATION.match(bare.rstrip(",;:!?\")]}'")):
            bare = bare.upper()
        elif bare == "i" or bare.startswith("i'"):
            bare = "I" + bare[1:]
        if start and bare[:1].isalpha():
            bare = bare[:1].upper() + bare[1:]
        if bare:
            start = bare.rstrip("\")]}'").endswith((".", "!", "?")) and not _ABBREVIATION.match(bare.lower())
        words[i] = lead + bare
    return " ".join(words)
