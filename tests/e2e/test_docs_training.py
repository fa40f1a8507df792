"""Every training command the README and docs/ show runs a few steps without diverging (the README once
showed an Adagrad recipe that reached perplexity 2.4e12 at step 10, in silence): each command, its options
as written, on a tiny copy task in place of its data, with its -save_model and -train_from moved into a
temporary folder (a -train_from names the checkpoint an earlier command of the docs wrote), on the CPU,
for a few steps; the log must hold no divergence warning and a finite perplexity below the target
vocabulary's size at the last report."""
import math
import os
import re
import subprocess
import sys

import pytest

from helpers.e2e import random_pair_data
from helpers.paths import ROOT, load_module

_readme = load_module(os.path.join(ROOT, "tests", "e2e", "test_readme_commands.py"), "_docs_commands")
STEPS = 12
TRAIN = [c for c in _readme.CASES
         if os.path.basename(c[2]) in ("train.py", "onmt_train") and not _readme._placeholder(c[1])]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs_training")
    return d, random_pair_data(str(d), seed=3, n_examples=64, max_len=9, target=lambda w: w[:3])


def _option(args, name):
    return args[args.index(name) + 1] if name in args else None


def _rewrite(args, data, tmp, written):
    """The command's options with its data, paths and device replaced; None when it resumes a checkpoint
    no earlier command wrote."""
    out, skip = [], False
    for word in args:
        if skip:
            skip = False
            continue
        if word in ("-data", "-save_model", "-train_from", "-gpu", "-log_file", "-tensorboard_log_dir"):
            skip = True
            continue
        out.append(word)
    save = os.path.join(tmp, _option(args, "-save_model").replace("/", "_"))
    out += ["-data", data, "-save_model", save, "-gpu", "-1", "-valid_steps", "0", "-report_every", "4",
            "-save_checkpoint_steps", "0", "-log_file", save + ".log", "-train_time_limit", "0"]
    start = 0
    if _option(args, "-train_from"):
        base = written.get(os.path.dirname(_option(args, "-train_from")))
        if base is None:
            return None, None
        out += ["-train_from", base]
        import torch
        start = int(torch.load(base, map_location="cpu", weights_only=True)["step"])
    return out + ["-train_steps", str(start + STEPS)], save


def test_the_docs_show_training_commands():
    assert len(TRAIN) >= 4, [c[0] for c in TRAIN]


def test_no_training_command_of_the_docs_diverges(tiny, tmp_path):
    folder, data = tiny
    written, ran = {}, []    # the folder of a command's -save_model -> the checkpoint it wrote here
    for line, command, script, args in TRAIN:
        argv, save = _rewrite(args, data, str(tmp_path), written)
        if argv is None:
            continue
        r = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), *argv], cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
        assert r.returncode == 0, f"{line}: `{command}` failed here: {r.stderr.strip().splitlines()[-1:]}"
        log = open(save + ".log", encoding="utf-8").read()
        assert "diverging" not in log, f"{line}: `{command}` diverges: {log[-1500:]}"
        ppls = [float(p) for p in re.findall(r"Step \d+/\s*\d+;.*?ppl:\s*([\d.e+-]+|inf|nan)", log)]
        assert ppls and math.isfinite(ppls[-1]) and ppls[-1] < 24, f"{line}: `{command}`: perplexities {ppls}"
        written[os.path.dirname(_option(args, "-save_model"))] = f"{save}_step_{int(argv[-1])}.pt"
        ran.append(line)
    assert len(ran) >= 4, ran
