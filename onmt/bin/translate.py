"""Translate with a checkpoint: `translate.py -model M.pt -src test.src -output pred.txt [...]`.

Writes one line per input line (n_best consecutive lines per input line when -n_best > 1), to a
temporary file renamed to -output when complete.
"""
import argparse
import os
import random

import torch

from onmt import opts
from onmt.inputters.vocab import Vocabs
from onmt.utils.cli import UserError, run_main, start
from onmt.utils.logging import logger


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def write_lines_atomic(path, lines):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def load_model(path, device):
    """(model in eval mode on `device`, Vocabs) from a checkpoint."""
    from onmt.model_builder import build_model
    from onmt.utils.checkpoint import load_checkpoint
    ckpt = load_checkpoint(path, device="cpu")
    vocabs = Vocabs.from_dict(ckpt["vocab"])
    model_opt = argparse.Namespace(**ckpt["opt"])
    model = build_model(model_opt, vocabs, ckpt["model"]).to(device)
    model.eval()
    return model, vocabs


def main(argv=None):
    opt, device = start(opts.translate_parser(), opts.validate_translate_opts, argv)
    torch.manual_seed(opt.seed)
    random.seed(opt.seed)

    src_lines = read_lines(opt.src)
    tgt_lines = read_lines(opt.tgt) if opt.tgt else None
    if tgt_lines is not None and len(tgt_lines) != len(src_lines):
        raise UserError(f"-src has {len(src_lines)} lines but -tgt has {len(tgt_lines)}")
    model, vocabs = load_model(opt.model, device)

    from onmt.translate.translator import Translator
    translator = Translator.from_opt(opt, model, vocabs)
    results = translator.translate(src_lines, tgt_lines)
    write_lines_atomic(opt.output, [" ".join(t.tokens) for nbest in results for t in nbest])
    logger.info(f"Translated {len(src_lines)} lines into {opt.output}")


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
