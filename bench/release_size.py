"""How much smaller a released model is than its training checkpoint (onmt_release_model).

    python -m bench.release_size [-sizes cnndm_small|paper] [-average_decay]

Builds a model of the chosen sizes (untrained: sizes do not depend on the values), gives it the Adam
state of one step, saves it as train.py saves a checkpoint (model, optimizer, RNG, data position;
with -average_decay also the trained weights beside their moving average), then releases it as
-format pt and safetensors, fp32 and fp16, and prints each file's size against the checkpoint's.
"""
import argparse
import os
import tempfile

import torch

from onmt import opts
from onmt.bin import release_model
from onmt.constants import SPECIALS
from onmt.inputters.vocab import Vocab, Vocabs
from onmt.model_builder import build_model
from onmt.utils.checkpoint import rng_state
from onmt.utils.moving_average import MovingAverage
from onmt.utils.optim import optimizer_from_opt

SIZES = {   # the CNN/DM experiment's ML stage (experiments/cnndm_conv_arms.py) and Paulus et al.'s
    "cnndm_small": (["-word_vec_size", "64", "-rnn_size", "128"], 20000, 5000),
    "paper": (["-word_vec_size", "100", "-rnn_size", "400"], 150000, 50000),
    "tiny": (["-word_vec_size", "8", "-rnn_size", "8"], 60, 40),          # the test suite's smoke run
}


def checkpoint(sizes, average_decay):
    args, n_src, n_tgt = SIZES[sizes]
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", "-reinforced", "-optim", "adam",
                                                      "-learning_rate", "0.001", *args])
    opts.update_train_opts(opt)
    opts.update_model_opts(opt)
    words = SPECIALS + [f"w{i}" for i in range(n_src - len(SPECIALS))]
    vocabs = Vocabs(Vocab(words), Vocab(words).prefix(n_tgt), True)
    torch.manual_seed(0)
    model = build_model(opt, vocabs)
    optimizer = optimizer_from_opt(opt, model.parameters())
    sum(p.float().pow(2).sum() for p in model.parameters()).backward()
    optimizer.step()
    ckpt = {"model": model.state_dict(), "optim": optimizer.state_dict(),
            "opt": opts.saved_options(opt), "vocab": vocabs.to_dict(), "step": 1,
            "data_pos": [0, 1], "rng": rng_state(), "train_seconds": 1.0}
    if average_decay:
        ema = MovingAverage(1e-4)
        ema.update(model, 1)
        ckpt.update(ema.checkpoint_weights(model))
    n_params = sum(p.numel() for p in model.parameters())
    return ckpt, n_params


def size(path):
    return (sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
            if os.path.isdir(path) else os.path.getsize(path))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-sizes", choices=list(SIZES), default="cnndm_small")
    p.add_argument("-average_decay", action="store_true",
                   help="a checkpoint of a run with -average_decay (trained weights + average)")
    a = p.parse_args(argv)
    ckpt, n_params = checkpoint(a.sizes, a.average_decay)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "model_step_1.pt")
        torch.save(ckpt, src)
        base = size(src)
        print(f"reinforced model, {a.sizes} sizes: {n_params:,} parameters; training checkpoint "
              f"(Adam state{', moving average' if a.average_decay else ''}) {base / 1e6:.1f} MB")
        print(f"{'release':<24}{'MB':>8}{'of the checkpoint':>20}")
        for fmt in ("pt", "safetensors"):
            for precision in ("fp32", "fp16"):
                out = os.path.join(d, f"{fmt}_{precision}" + (".pt" if fmt == "pt" else ""))
                release_model.main(["-model", src, "-output", out, "-format", fmt,
                                    "-precision", precision, "-log_file", os.devnull])
                print(f"{fmt + ' ' + precision:<24}{size(out) / 1e6:>8.1f}"
                      f"{size(out) / base:>19.1%}")


if __name__ == "__main__":
    main()
