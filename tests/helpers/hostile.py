"""What the hostile-input tests share (tests/e2e/test_hostile_*.py, by subject): the one-line error check
in-process and of a subprocess, a toy corpus and its preprocess arguments, the tiny training options and
checkpoint (TINY, shared with the other e2e tests that train a toy model), and the failing OS calls."""
import errno
import os
import re
import signal
import sys

import pytest

from helpers.e2e import random_pair_data, torch_threads
from helpers.paths import ROOT
from onmt.bin import evaluate as evaluate_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main

LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+\] ")   # the progress log (stderr)

# the tiny model of the e2e tests that train one in seconds
TINY = ["-rnn_size", "8", "-word_vec_size", "8", "-layers", "1", "-batch_size", "8", "-seed", "3"]

PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
VENV = os.environ.get("venv") or os.path.join(ROOT, ".venv")
needs_venv = pytest.mark.skipif(not os.path.exists(os.path.join(VENV, "bin", "python")),
                                reason="run.sh needs its .venv (./run.sh setup, or venv=...)")


def one_line_error(capsys, main, argv):
    """Run `main(argv)` as the console script does; -> the single stderr line (exit status checked)
    besides the progress log of what ran before the error (train.py and translate.py log to stderr)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert "Traceback" not in err and len(lines) == 1 and err.endswith(lines[0]), err
    return lines[0]


def one_line_of(r):
    """The one error line of a finished subprocess `r` (its status non-zero, no traceback)."""
    assert r.returncode not in (0, None) and "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("[20")]
    assert len(lines) == 1, r.stderr
    return lines[0]


def corpus(folder, n=12):
    """A toy training corpus in `folder`: n sources of 3-6 words, each target its first two; -> [src, tgt]."""
    os.makedirs(folder, exist_ok=True)
    src = [" ".join(f"w{(i + j) % 9}" for j in range(3 + i % 4)) for i in range(n)]
    paths = []
    for name, lines in (("train.src.txt", src), ("train.tgt.txt", [" ".join(s.split()[:2]) for s in src])):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(os.path.join(folder, name))
    return paths


def preprocess_argv(src, tgt, save, *more_args):
    return ["-train_src", src, "-train_tgt", tgt, "-save_data", save, "-share_vocab", "-dynamic_dict",
            "-src_vocab_size", "20", "-tgt_vocab_size", "10", *more_args]


def make_tiny(folder):
    """Preprocessed toy data in `folder`, a source file, and a checkpoint trained 2 steps on the data:
    {"prefix", "ckpt", "src"}."""
    prefix = random_pair_data(str(folder), seed=3, n_examples=24, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), *TINY, "-train_steps", "2"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_2.pt"), "src": str(folder / "src.txt")}


def train_from_error(capsys, tiny, ckpt, tmp_path, *more_args):
    return one_line_error(capsys, train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"),
                                                   "-train_from", str(ckpt), "-train_steps", "3", *more_args])


def translate_error(capsys, tiny, ckpt, out, *more_args):
    return one_line_error(capsys, translate_bin.main, ["-model", str(ckpt), "-src", tiny["src"], "-output", str(out),
                                                       "-beam_size", "1", "-max_length", "4", *more_args])


def enospc(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def erofs():
    raise OSError(errno.EROFS, "Read-only file system")


def evaluate_error(capsys, argv):
    return one_line_error(capsys, evaluate_bin.main, argv)


class Hung(Exception):
    pass


class deadline:
    """Raise Hung in the main thread if the block takes more than `seconds` (SIGALRM)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def _alarm(self, *a):
        raise Hung(f"still running after {self.seconds} s")

    def __enter__(self):
        self.previous = signal.signal(signal.SIGALRM, self._alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False
