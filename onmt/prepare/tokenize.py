"""A small PTB-style word tokenizer for raw news text (no nltk / spaCy), close to what See et al.'s
CNN/DailyMail files and Rush et al.'s Gigaword files hold.

    ptb_tokenize('(CNN) The U.S. isn\u2019t "ready," he said.')
    -> ['-lrb-', 'CNN', '-rrb-', 'The', 'U.S.', 'is', "n't", '"', 'ready', ',', '"', 'he', 'said',
        '.']

Choices (lowercasing is left to the caller):
- punctuation is split off words; `...` and `--` stay one token; `…` becomes `...`, `—` and `–`
  become `--`;
- every double quote (straight, curly, or PTB's two backquotes / two single quotes) becomes the one
  token `"` (as in the seed data); a curly single quote or a backquote becomes `'`;
- brackets become -lrb- -rrb- -lsb- -rsb- -lcb- -rcb-, as in See et al.'s data;
- contractions split as in the Penn Treebank: `isn't` -> `is n't`, `can't` -> `ca n't`,
  `it's` -> `it 's`, likewise `'re 've 'll 'd 'm`; a plural possessive `dogs'` -> `dogs '`;
- kept whole: hyphenated words (`e-mail`, `35-year-old`), numbers with `.` `,` `:` `/` inside
  (`3.5`, `1,000`, `10:30`, `9/11`), letter-dot abbreviations (`u.s.`, `a.m.`, `l.l.`), common
  titles and short forms with their period (`mr.`, `dr.`, `jan.`, `inc.`, ...), web addresses,
  e-mail addresses, and `#` inside words (Gigaword writes digits as `#`; a hashtag stays whole);
- already tokenized text stays as it is (-lrb-, `n't`, `'s`, `<unk>` and other `<tag>`s are kept),
  so tokenizing twice changes nothing.
"""
import re

_ABBREVIATIONS = ("mr|mrs|ms|messrs|dr|prof|st|jr|sr|gen|sen|rep|gov|lt|col|sgt|capt|cpl|adm|maj|"
                  "rev|hon|pres|supt|det|insp|vs|etc|inc|corp|co|ltd|bros|dept|univ|ave|blvd|mt|"
                  "ft|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WORD = r"(?:[^\W_]|#)+"
_TOKEN = re.compile("|".join([
    r"-(?i:[lr][rsc]b)-",                                             # -lrb- and friends, kept
    r"</?[A-Za-z]+>",                                                 # <unk>, <t>, </s>, ... kept
    r"(?i:https?://|www\.)[^\s\"<>()\[\]{}]*[^\s\"<>()\[\]{}.,;:!?']",  # web address
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",                                  # e-mail address
    r"[^\W_]+(?:\.[^\W_]+)*\.(?i:com|org|net|gov|edu|co\.uk)(?![^\W_])",  # cnn.com
    r"(?<![^\W_])(?:[^\W\d_]\.){2,}",                                 # u.s., a.m.
    rf"(?<![^\W_])(?i:{_ABBREVIATIONS})\.",                           # mr., jan.
    r"[#\d]+(?:[.,:/][#\d]+)+",                                       # 3.5, 1,000, 10:30, #.##
    r"'(?i:s|re|ve|ll|d|m)(?![^\W_])",                                # a clitic already split off
    # words, e-mail, o'neill, isn't
    rf"{_WORD}(?:['-]{_WORD})*",
    r"\.{2,}|-{2,}",                                                  # ... --
    r"\S",                                                            # any other character
]))
_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_BEFORE = str.maketrans({"\u2018": "'", "\u2019": "'", "`": "'", "\u201c": '"', "\u201d": '"',
                         "\u201e": '"', "\u2026": "...", "\u2014": " -- ", "\u2013": " -- "})
_MAP = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}


def _split_clitic(word):
    m = _CLITIC.match(word)
    return [word] if m is None else [m.group(1), m.group(2)]


def ptb_tokenize(text):
    """Raw text -> list of tokens (see the module docstring for the rules). Case is kept."""
    text = text.replace("``", '"').replace("''", '"').translate(_BEFORE)
    out = []
    for chunk in text.split():
        if chunk.isalnum():                 # most words: one token, no rule applies (fast path)
            out.append(chunk)
            continue
        for tok in _TOKEN.findall(chunk):
            if "'" in tok[1:]:
                out.extend(_split_clitic(tok))
            else:
                out.append(_MAP.get(tok, tok))
    return out
