"""Tokenized text back to text a reader expects: the inverse of `tokenize.ptb_tokenize`, as far as
the tokens allow, and of the published CNN/DM and Gigaword tokenizations
(docs/output.md shows it whole).

    detokenize("he 's \" ready , \" u.s. officials say -lrb- cnn -rrb- .", sentence_case=True)
    -> 'He\'s "ready," U.S. officials say (cnn).'   (sentence_case: each sentence's first letter)

The rule set, in one place (token spelling as the tokenizers write it):
- brackets: -lrb- -lsb- -lcb- (and a bare ( [ {) become ( [ { and join the next token; -rrb- -rsb-
  -rcb- (and ) ] }) become ) ] } and join the previous one: `-lrb- cnn -rrb-` -> `(cnn)`;
- hyphens: a lone `-` between two words or numbers joins both (Gigaword splits hyphenated words):
  `25 - year - old` -> `25-year-old`, `state - owned` -> `state-owned`; `--` (a dash) stays apart;
- clitics n't 's 're 've 'll 'd 'm, and a lone ' after a word ending in s (a plural possessive),
  join the previous word (`ca n't` -> `can't`, `he 's` -> `he's`, `the dogs ' owner` ->
  `the dogs' owner`);
- quotes: PTB's `` and '' become " (opening: joins the next token; closing: joins the previous one);
  a plain " alternates (the first of a pair opens); a backquote ` opens a single quote ' that the
  next lone ' closes: `` `` he said '' `` -> `"he said"`, `` ` yes ' `` -> `'yes'`;
- punctuation . , ; : ! ? % ... joins the previous token (`ready ,` -> `ready,`); a sentence's final
  `.` after a token that already ends in one is dropped (`the u.s. .` -> `the u.s.`); $ joins the
  next token;
- every other token (`<unk>` and other tags, Gigaword's # digits) is separated by one space;
- with `sentence_case` (for text the data lowercased): the first letter of the text and of each word
  after . ! ? is upper-cased, as is the pronoun `i`; letter-dot abbreviations (`u.s.`) are
  upper-cased.
Scoring (ROUGE) keeps working on the tokenized form: detokenize only what a person reads.
"""
import re

OPEN = {"-lrb-": "(", "-lsb-": "[", "-lcb-": "{", "(": "(", "[": "[", "{": "{"}
CLOSE = {"-rrb-": ")", "-rsb-": "]", "-rcb-": "}", ")": ")", "]": "]", "}": "}"}
CLITICS = {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}
JOIN_PREVIOUS = {".", ",", ";", ":", "!", "?", "%", "...", "'"}
JOIN_NEXT = {"$"}
_ABBREVIATION = re.compile(r"^(?:[a-z]\.){2,}$")


def _wordlike(text, at):
    """Whether text[at] is a letter, a digit or Gigaword's # digit (a hyphen between two joins
    them)."""
    return bool(text) and (text[at].isalnum() or text[at] == "#")


def detokenize(text, sentence_case=False):
    """One line of tokens (a string, or a list of tokens) -> readable text (module docstring)."""
    tokens = text.split() if isinstance(text, str) else list(text)
    out, glue_next, double_open, single_open = [], False, False, False
    ends = set()            # the words after which a dropped `.` ended a sentence (`u.s. .`)
    for i, tok in enumerate(tokens):
        low = tok.lower()
        word, join_prev, join_next = tok, False, False
        if low in OPEN:
            word, join_next = OPEN[low], True
        elif low in CLOSE:
            word, join_prev = CLOSE[low], True
        elif (tok == "-" and out and i + 1 < len(tokens) and _wordlike(out[-1], -1)
              and _wordlike(tokens[i + 1], 0)):
            join_prev = join_next = True
        elif low in CLITICS:
            join_prev = True
        elif tok == "`":
            word, join_next, single_open = "'", True, True
        elif tok == "'" and single_open:
            join_prev, single_open = True, False
        elif tok == "'" and out and out[-1].lower().endswith("s"):
            join_prev = True
        elif tok in ("``", "''", '"'):
            opening = tok == "``" or (tok == '"' and not double_open)
            word, join_prev, join_next = '"', not opening, opening
            double_open = opening
        elif tok == "." and out and out[-1].endswith(".") and not glue_next:
            # `u.s. .`: the abbreviation's dot ends the sentence
            ends.add(len(out) - 1)
            continue
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
    return _sentence_case(text, ends) if sentence_case else text


def _sentence_case(text, ends=()):
    """Sentence case; `ends`: the indices of words that end a sentence whatever their look."""
    words = text.split(" ")
    start = True
    for i, w in enumerate(words):
        bare = w.lstrip("(\"'[{$")
        lead = w[:len(w) - len(bare)]
        if _ABBREVIATION.match(bare.rstrip(",;:!?\")]}'")):
            bare = bare.upper()
        elif bare == "i" or bare.startswith("i'"):
            bare = "I" + bare[1:]
        if start and bare[:1].isalpha():
            bare = bare[:1].upper() + bare[1:]
        if bare:
            start = i in ends or (bare.rstrip("\")]}'").endswith((".", "!", "?"))
                                  and not _ABBREVIATION.match(bare.lower()))
        words[i] = lead + bare
    return " ".join(words)
