"""The files a reader opens to follow one step: every onmt/ file whose Python code runs during one ML training
step of -reinforced (the loss, its backward and the optimizer's step) and during one beam search, for each
execution (fused, plain), in the order they are first entered.

    python bench/step_files.py [-family reinforced] [-what train|decode|both]
    CHECKOUT=/path/to/other/checkout python bench/step_files.py     # the same count for another commit

A tracer (sys.setprofile) records the file of every Python function called from onmt/ while the step runs
(autograd functions' backward included: they run as Python); the model is built, the batch made and the
optimizer created before it starts, so the list is the step's own. Prints the files per execution with the
count, how many of them are in onmt/fused/, and the lists' difference. A reader follows the plain list
(the equations); the fused subclasses add their family's fused.py and the kernels they call.
"""
import argparse
import os
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("CHECKOUT") or os.path.dirname(HERE))   # whose onmt/ is traced
sys.path.insert(0, ROOT)

import configargparse  # noqa: E402
import torch  # noqa: E402

from bench.reinforced_step_bench import make_batch  # noqa: E402
from onmt import opts  # noqa: E402
from onmt.constants import N_SPECIALS, SPECIALS  # noqa: E402

if os.path.exists(os.path.join(ROOT, "onmt", "execution.py")):
    from onmt.execution import Execution  # noqa: E402
else:   # a checkout from before the selector left onmt/fused/
    from onmt.fused.execution import Execution  # noqa: E402
from onmt.inputters.vocab import Vocab, Vocabs  # noqa: E402
from onmt.losses import build_loss  # noqa: E402
from onmt.model_builder import build_model  # noqa: E402
from onmt.translate.beam_search import beam_search  # noqa: E402
from onmt.translate.decoding import SearchSettings  # noqa: E402

FAMILY_ARGS = {"reinforced": ["-reinforced", "-scheduled_sampling", "0.25"],
               "copy": ["-copy_attn", "-coverage_attn", "-global_attention", "mlp"],
               "rnn": ["-global_attention", "mlp"]}
ONMT = os.path.join(ROOT, "onmt") + os.sep


def traced(fn):
    """fn() under a profiler hook: the onmt/ files (relative paths) whose functions it called, in order."""
    seen = {}

    def hook(frame, event, arg):
        if event == "call":
            path = frame.f_code.co_filename
            if path.startswith(ONMT) and path not in seen:
                seen[path] = len(seen)
    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return [os.path.relpath(p, ROOT) for p in sorted(seen, key=seen.get)]


def build(family, execution):
    parser = configargparse.ArgumentParser()
    opts.model_opts(parser)
    opts.train_opts(parser)
    opt = opts.parse_with_given(parser, ["-data", "x", "-rnn_size", "16", "-word_vec_size", "8", "-brnn",
                                         "-dropout", "0"] + FAMILY_ARGS[family])
    opts.update_model_opts(opt)
    opts.validate_model_opts(opt)
    size = SimpleNamespace(seed=0, batch_size=4, src_len=12, tgt_len=6, src_vocab=60, tgt_vocab=40)
    words = SPECIALS + [f"w{i}" for i in range(size.src_vocab - N_SPECIALS)]
    vocabs = Vocabs(Vocab(words), Vocab(words[:size.tgt_vocab]), shared=True)
    torch.manual_seed(0)
    model = build_model(opt, vocabs, execution=execution).train()
    return opt, model, make_batch(size, "cpu")


def step_files(family, execution, what):
    opt, model, batch = build(family, execution)
    loss_fn, optim = build_loss(opt), torch.optim.Adam(model.parameters(), lr=1e-3)
    model.begin_training_step(1)

    def train():
        loss, _ = loss_fn(model, batch)
        loss.backward()
        optim.step()

    def decode():
        model.eval()
        with torch.no_grad():
            beam_search(model, batch, SearchSettings(beam_size=3, max_length=5))
    return traced(train if what == "train" else decode)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-family", default="reinforced", choices=sorted(FAMILY_ARGS))
    p.add_argument("-what", default="both", choices=["train", "decode", "both"])
    a = p.parse_args()
    for what in (["train", "decode"] if a.what == "both" else [a.what]):
        executions = (("plain", Execution("plain")), ("fused", Execution()))
        lists = {name: step_files(a.family, ex, what) for name, ex in executions}
        for name, files in lists.items():
            in_fused = [f for f in files if f.startswith("onmt/fused/")]
            print(f"{a.family} {what} step, kernels {name}: {len(files)} files, {len(in_fused)} in onmt/fused/")
            for f in files:
                print(f"    {f}")
        added = [f for f in lists["fused"] if f not in lists["plain"]]
        print(f"  fused adds {len(added)}: {', '.join(added)}\n")


if __name__ == "__main__":
    main()
