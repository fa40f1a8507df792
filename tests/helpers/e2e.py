"""Helpers for the end-to-end tests: toy data -> preprocess -> train -> translate, in-process.

Every step calls the real entry point (`onmt.bin.*.main`) with command-line style arguments, so the
tests exercise option parsing and validation exactly as `train.py` / `translate.py` users do.
"""
import contextlib
import os
import subprocess
import sys

from helpers.paths import ROOT, load_module

PYTHON = sys.executable


@contextlib.contextmanager
def torch_threads(n=1):
    """Run tiny models on `n` torch threads: on a shared machine, tiny ops on several threads spend
    most of their time waiting for each other (about 8x slower training measured with 2 busy cores)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _load_tool(name):
    return load_module(os.path.join("tools", f"{name}.py"), f"_tool_{name}")


def make_data(task, folder, seed=1, **sizes):
    """tools/make_toy_data.py -task TASK -dir FOLDER -seed SEED [-train_size N ...]; returns FOLDER."""
    args = ["-task", task, "-dir", str(folder), "-seed", str(seed)]
    for k, v in sizes.items():
        args += [f"-{k}", str(v)]
    _load_tool("make_toy_data").main(args)
    return str(folder)


def preprocess(data_dir, prefix, *more_args):
    from onmt.bin.preprocess import main
    d = str(data_dir)
    main(["-train_src", f"{d}/train.src.txt", "-train_tgt", f"{d}/train.tgt.txt",
          "-valid_src", f"{d}/valid.src.txt", "-valid_tgt", f"{d}/valid.tgt.txt",
          "-save_data", str(prefix), "-share_vocab", "-dynamic_dict", *map(str, more_args)])
    return str(prefix)


def train(prefix, save_model, *more_args):
    """onmt.bin.train.main; returns the path of the last checkpoint (the one with the largest step)."""
    from onmt.bin.train import main
    main(["-data", str(prefix), "-save_model", str(save_model), *map(str, more_args)])
    return last_checkpoint(save_model)


def last_checkpoint(save_model):
    folder, base = os.path.split(str(save_model))
    steps = [int(f[len(base) + 6:-3]) for f in os.listdir(folder)
             if f.startswith(base + "_step_") and f.endswith(".pt")]
    return f"{save_model}_step_{max(steps)}.pt"


def translate(model, src, output, *more_args):
    from onmt.bin.translate import main
    main(["-model", str(model), "-src", str(src), "-output", str(output), *map(str, more_args)])
    return read_lines(output)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def exact_match(pred_path, ref_path):
    """Share of lines whose prediction equals the reference (whitespace-normalized)."""
    preds, refs = read_lines(pred_path), read_lines(ref_path)
    assert len(preds) == len(refs), (len(preds), len(refs))
    return sum(p.split() == r.split() for p, r in zip(preds, refs)) / max(len(refs), 1)


def run_cli(script, *args, timeout=120):
    """Run ROOT/script with this interpreter; returns CompletedProcess (text)."""
    return subprocess.run([PYTHON, os.path.join(ROOT, script), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def random_pair_data(folder, *, seed, n_examples, max_len, target):
    """Preprocessed data (shared 30/20 vocabulary, dynamic dictionary; valid = train) of `n_examples`
    random sources of 3..max_len-1 words over w0..w29, each with the target `target(words)`.
    Returns the -save_data prefix."""
    import torch

    from onmt.bin import preprocess as preprocess_bin
    g = torch.Generator().manual_seed(seed)
    src, tgt = [], []
    for _ in range(n_examples):
        n = int(torch.randint(3, max_len, (1,), generator=g))
        words = [f"w{int(i)}" for i in torch.randint(0, 30, (n,), generator=g)]
        src.append(" ".join(words))
        tgt.append(" ".join(target(words)))
    for name, lines in (("src.txt", src), ("tgt.txt", tgt)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    prefix = os.path.join(folder, "prep", "data")
    s, t = os.path.join(folder, "src.txt"), os.path.join(folder, "tgt.txt")
    preprocess_bin.main(["-train_src", s, "-train_tgt", t, "-valid_src", s, "-valid_tgt", t, "-save_data", prefix,
                         "-share_vocab", "-dynamic_dict", "-src_vocab_size", "30", "-tgt_vocab_size", "20"])
    return prefix
