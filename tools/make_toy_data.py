#!/usr/bin/env python
"""Deterministic toy parallel data: DIR/{train,valid,test}.{src,tgt}.txt, tokens separated by one space,
and DIR/toy.json, which marks them as this tool's: split files without it (a real corpus) are
replaced only with -overwrite.

Tasks
  copy      target = source, words w0 .. w{vocab-1}
  reverse   target = source reversed
  sort      target = source sorted by word number
  copy_oov  target = source, but most words are rare made-up words (thousands of types, each seen a
            few times), outside any target vocabulary of the usual sizes: only a pointer can copy them
  summ      a small summarization task: a source sentence of filler words around a clause with a rare
            name and a number; the target is the clause as a short template, "NAME VERB NUMBER OBJECT ."
            (a distractor name and number also appear in the source)
The same (-seed, sizes) always give the same files; each split draws from its own seeded generator.
"""
import argparse
import json
import os
import random
import sys

from onmt.errors import UserError
from onmt.utils.files import AtomicFile, write_text_atomic
from onmt.utils.output_rule import TOY_MARK, check_replaceable

_CONS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONS for v in _VOWELS]          # 70 syllables

FILLER = ("the a of to in and on for with by at from that this it was is as said after before "
          "new old first last many few more most some other such only also very still just well "
          "city state group team report people year week day time part way world home house "
          "official police court market company school river road bank club family night game").split()
VERBS = ["bought", "sold", "won", "lost", "paid", "found", "gave", "owed", "raised", "spent"]
OBJECTS = ["dollars", "books", "cars", "tickets", "houses", "votes", "horses", "shares", "medals", "acres"]
_RESERVED = set(FILLER + VERBS + OBJECTS + ["according"])


def made_up_word(k):
    """The k-th made-up word: 3 or more syllables, distinct for distinct k, not a real filler word."""
    base = len(_SYLLABLES) ** 3
    if k < base:                    # a bijection of [0, base): neighbours k look unrelated
        k = (k * 123457 + 99991) % base
    parts = []
    for _ in range(3):
        k, r = divmod(k, len(_SYLLABLES))
        parts.append(_SYLLABLES[r])
    while k:
        k, r = divmod(k - 1, len(_SYLLABLES))
        parts.append(_SYLLABLES[r])
    word = "".join(parts)
    return "x" + word if word in _RESERVED else word      # "x" is no syllable: still distinct


def _example(task, rng, opt):
    n = rng.randint(opt.min_len, opt.max_len)
    if task in ("copy", "reverse", "sort"):
        ids = [rng.randrange(opt.vocab) for _ in range(n)]
        src = [f"w{i}" for i in ids]
        if task == "copy":
            return src, src
        if task == "reverse":
            return src, src[::-1]
        return src, [f"w{i}" for i in sorted(ids)]
    if task == "copy_oov":
        src = [made_up_word(rng.randrange(opt.rare_types)) if rng.random() < opt.rare_prob
               else f"w{rng.randrange(opt.vocab)}" for _ in range(n)]
        return src, src
    # summ
    name, other = made_up_word(rng.randrange(opt.rare_types)), made_up_word(rng.randrange(opt.rare_types))
    num, num2 = str(rng.randrange(10, 100000)), str(rng.randrange(10, 100000))
    verb, obj = rng.choice(VERBS), rng.choice(OBJECTS)
    core = [name, verb, num, obj]
    before = [rng.choice(FILLER) for _ in range(n)]
    after = [rng.choice(FILLER) for _ in range(rng.randint(opt.min_len, opt.max_len))]
    distract = ["according", "to", other, "with", num2, rng.choice(OBJECTS), ","]
    src = distract + before + core + after + ["."]
    return src, core + ["."]


def write_split(task, split, size, opt):
    rng = random.Random(f"{opt.seed}-{task}-{split}")
    paths = [os.path.join(opt.dir, f"{split}.{side}.txt") for side in ("src", "tgt")]
    with AtomicFile(paths[0]) as fs, AtomicFile(paths[1]) as ft:
        for _ in range(size):
            src, tgt = _example(task, rng, opt)
            fs.write(" ".join(src) + "\n")
            ft.write(" ".join(tgt) + "\n")


def check_own_files(opt):
    """UserError when -dir holds split files this tool did not make (no TOY_MARK beside them: a
    real corpus, say) and -overwrite is not given (the one output rule, utils/output_rule.py)."""
    if opt.overwrite:
        return
    for split in ("train", "valid", "test"):
        for side in ("src", "tgt"):
            path = os.path.join(opt.dir, f"{split}.{side}.txt")
            check_replaceable(path, f"-dir {opt.dir}", "corpus")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-task", required=True, choices=["copy", "reverse", "sort", "copy_oov", "summ"])
    p.add_argument("-dir", required=True, help="output folder (created)")
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-train_size", type=int, default=2000)
    p.add_argument("-valid_size", type=int, default=200)
    p.add_argument("-test_size", type=int, default=200)
    p.add_argument("-min_len", type=int, default=3, help="shortest sequence (summ: filler words)")
    p.add_argument("-max_len", type=int, default=10, help="longest sequence (summ: filler words)")
    p.add_argument("-vocab", type=int, default=20, help="common words w0 .. w{vocab-1}")
    p.add_argument("-rare_types", type=int, default=5000, help="made-up word types (copy_oov, summ)")
    p.add_argument("-rare_prob", type=float, default=0.8, help="share of rare words (copy_oov)")
    p.add_argument("-overwrite", action="store_true",
                   help="replace split files of -dir that this tool did not make (a real corpus)")
    opt = p.parse_args(argv)
    if not 1 <= opt.min_len <= opt.max_len:
        p.error(f"need 1 <= -min_len <= -max_len, got {opt.min_len} and {opt.max_len}")
    if opt.vocab < 1 or opt.rare_types < 1 or min(opt.train_size, opt.valid_size, opt.test_size) < 0:
        p.error("sizes must be positive")
    return opt


def main(argv=None):
    opt = parse(argv)
    if os.path.exists(opt.dir) and not os.path.isdir(opt.dir):     # was "cannot write to X: File exists"
        print(f"make_toy_data.py: error: -dir {opt.dir} exists and is not a folder", file=sys.stderr)
        sys.exit(1)
    try:
        check_own_files(opt)
        os.makedirs(opt.dir, exist_ok=True)
        for split in ("train", "valid", "test"):
            write_split(opt.task, split, getattr(opt, f"{split}_size"), opt)
        write_text_atomic(os.path.join(opt.dir, TOY_MARK),
                          json.dumps({"tool": "tools/make_toy_data.py", "task": opt.task,
                                      "seed": opt.seed}) + "\n")
    except OSError as e:
        print(f"make_toy_data.py: error: cannot write to {opt.dir}: {e.strerror or e}", file=sys.stderr)
        sys.exit(1)
    except UserError as e:          # a failed write of one of its files (files.AtomicFile)
        print(f"make_toy_data.py: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    from onmt.utils.cli import run_main
    run_main(main)      # SIGTERM / ^C: the files being written removed, one line, 143 / 130
