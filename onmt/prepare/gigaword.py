"""Gigaword headline generation -> `-output/{train,valid,test}.{src,tgt}.txt`
(tools/prepare_gigaword.py).

The forms of `-input` (-format, detected when auto, the detected one logged):

    rush  Rush et al.'s release (harvardnlp sumdata), in the folder or its train/ subfolder:
          train.article.txt + train.title.txt, valid.article.filter.txt + valid.title.filter.txt
          (the names with or without .filter), test.article.txt + test.title.txt, or for test the
          Gigaword test set's input.txt + task1_ref0.txt (in the folder or its Giga/ subfolder);
          .gz too
    seed  {train,valid,test}.{src,tgt}.txt[.gz]; other *.src.txt / *.tgt.txt (extra.*) are not
          splits

Both are tokenized and lowercased already (-tokenize auto leaves them as they are). The release's
`UNK` becomes the toolkit's `<unk>`; the `#` that stand for digits are kept as they are, and
prepare.json says so (`"digits": "#"`), so that translate.py and the API write raw input's digits #
too (`9.58` -> `#.##`: onmt/translate/input_rules.py).
"""
import os

from onmt import opts
from onmt.prepare.detect import Found, choose, find_pair, seed_pairs
from onmt.prepare.output import Corpus, prepare_main
from onmt.prepare.text import Cleaner, read_pairs
from onmt.utils.cli import run_main

ACCEPTED = ("accepted forms: (rush) Rush et al.'s Gigaword release (harvardnlp sumdata): "
            "train.article.txt and train.title.txt, valid.article.filter.txt and "
            "valid.title.filter.txt, test.article.txt and test.title.txt or the test set's "
            "input.txt and task1_ref0.txt (plain or .gz, in the folder or its train/ and Giga/ "
            "subfolders); (seed) the seed layout {train,valid,test}.{src,tgt}.txt (or .txt.gz)")
DESCRIPTIONS = {"rush": "Rush et al.'s release", "seed": "seed layout"}


class GigawordCleaner(Cleaner):
    """A Cleaner that writes the release's UNK as <unk>."""

    def tokens(self, text):
        return ["<unk>" if t == "UNK" else t for t in super().tokens(text)]


def _names(split, side, filtered_first):
    names = [f"{split}.{side}.txt", f"{split}.{side}.filter.txt"]
    return names[::-1] if filtered_first else names


def find_rush(folder, cleaner):
    found = Found()
    sub = [folder, os.path.join(folder, "train")]
    pairs = {
        "train": find_pair(found, folder, sub, _names("train", "article", False),
                           _names("train", "title", False)),
        "valid": find_pair(found, folder, sub, _names("valid", "article", True),
                           _names("valid", "title", True)),
        "test": find_pair(found, folder, [folder], _names("test", "article", False),
                          _names("test", "title", False)),
    }
    giga = find_pair(found, folder, [folder, os.path.join(folder, "Giga")], ["input.txt"],
                     ["task1_ref0.txt"])
    if giga and pairs["test"]:
        found.notes.append("test: test.article/title used, input.txt + task1_ref0.txt ignored")
    elif giga:
        pairs["test"] = giga
    for split, pair in pairs.items():
        if pair:
            def examples(s=pair[0], t=pair[1]):
                for src, tgt in read_pairs(s, t):
                    yield cleaner.line(src), cleaner.line(tgt)
            found.splits[split] = ([os.path.relpath(p, folder) for p in pair], examples)
    return found


def find_seed(folder, cleaner):
    return seed_pairs(folder, lambda s, t: (cleaner.line(s), cleaner.line(t)))


FORMS = {"rush": find_rush, "seed": find_seed}


def detect(folder, requested="auto", lower=True, tokenize="auto"):
    """The Corpus in `folder` (see the module docstring); a one-line UserError when there is
    none."""
    cleaner = GigawordCleaner(tokenize == "ptb", lower)
    forms = {name: find(folder, cleaner) for name, find in FORMS.items()}
    name, found = choose(folder, forms, requested, "Gigaword", ACCEPTED)
    how = "PTB-style tokenizer" if cleaner.tokenize else "whitespace tokens as given"
    notes = found.notes + [f"tokens: {how}, UNK -> <unk>; {'lowercased' if lower else 'case kept'}"]
    return Corpus(name, DESCRIPTIONS[name], found.splits, notes, text={"digits": "#"})


def main(argv=None):
    return prepare_main(opts.prepare_gigaword_parser(), detect, argv)


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
