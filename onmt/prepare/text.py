"""Text plumbing shared by the corpus readers: line-aligned pairs of UTF-8 files (plain or .gz, read
by onmt/inputters/corpus.py's `read_lines`: errors that name the file and line), and the `Cleaner`
that turns a source text or a list of target sentences into one output line (tokenized or not,
lowercased or not, tags removed).
"""
import gzip
import os

from onmt.errors import UserError
from onmt.inputters.corpus import read_lines
from onmt.prepare.tokenize import ptb_tokenize

TAGS = frozenset(("<t>", "</t>", "<s>", "</s>"))
END_CHARS = ".!?\"')]"
END_TOKENS = frozenset(("-rrb-", "-rsb-"))


def remove_eos(line):
    """Every `</s>` becomes `.`, whitespace becomes single spaces (the seed CNN/DM files'
    cleaning)."""
    return " ".join(line.replace("</s>", " . ").split())


def open_binary(path):
    """A binary file object, gunzipped when the name ends in .gz."""
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_pairs(src_path, tgt_path):
    """Yield (source line, target line) of two line-aligned files (corpus.read_lines, a Windows
    "\\r" dropped); different lengths are an error."""
    src, tgt = read_lines(src_path, strip_cr=True), read_lines(tgt_path, strip_cr=True)
    n = 0
    for n, s in enumerate(src, 1):
        t = next(tgt, None)
        if t is None:
            raise UserError(f"{src_path} has more lines than {tgt_path} "
                            f"({tgt_path} ends after line {n - 1})")
        yield s, t
    if next(tgt, None) is not None:
        raise UserError(f"{tgt_path} has more lines than {src_path} "
                        f"({src_path} ends after line {n})")


def between_tags(text, open_tag, close_tag):
    """The sentences of `<t> a . </t> <t> b . </t>`-style text (`text` itself when it has no
    tags)."""
    tokens = text.split()
    if open_tag not in tokens:
        return [text]
    sents, cur = [], None
    for tok in tokens:
        if tok == open_tag:
            cur = []
        elif tok == close_tag:
            if cur:
                sents.append(" ".join(cur))
            cur = None
        elif cur is not None:
            cur.append(tok)
        else:                       # text outside any tag pair: keep it as its own sentence
            sents.append(tok)
    if cur:
        sents.append(" ".join(cur))
    return sents


class Cleaner:
    """Text -> one output line: tokens joined by single spaces, no sentence tags, lowercased if
    asked.

    tokenize: True runs the PTB-style tokenizer (tokenize.py), False only splits on whitespace.
    """

    def __init__(self, tokenize, lower):
        self.tokenize = tokenize
        self.lower = lower

    def tokens(self, text):
        toks = ptb_tokenize(text) if self.tokenize else text.split()
        return [t for t in toks if t not in TAGS]

    def line(self, text):
        out = " ".join(self.tokens(text))
        return out.lower() if self.lower else out

    def sentences(self, sents, end_period=False):
        """Sentences -> one line; with end_period a sentence whose last character is not . ! ? or a
        closing quote or bracket gets a `.` (as See et al. did for the CNN/DM highlights), so
        ROUGE-Lsum can split it."""
        out = []
        for s in sents:
            toks = self.tokens(s)
            if toks and end_period and toks[-1][-1] not in END_CHARS and toks[-1] not in END_TOKENS:
                toks.append(".")
            out.extend(toks)
        line = " ".join(out)
        return line.lower() if self.lower else line


def files_in(folder):
    """Names of the plain files in `folder` (empty when it is not a folder)."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
