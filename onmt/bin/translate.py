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
    from onmt.utils.checkpoint import load_checkpoint
    model, vocabs, _ = model_from_checkpoint(load_checkpoint(path, device="cpu"), device)
    return model, vocabs


def model_from_checkpoint(ckpt, device):
    """(model in eval mode on `device`, Vocabs, the model's options) from a loaded checkpoint."""
    from onmt.model_builder import build_model
    vocabs = Vocabs.from_dict(ckpt["vocab"])
    model_opt = argparse.Namespace(**ckpt["opt"])
    model = build_model(model_opt, vocabs, ckpt["model"]).to(device)
    model.eval()
    return model, vocabs, model_opt


def report_rouge(pred_lines, ref_lines):
    """Log ROUGE (built-in scorer, ROUGE-1.5.5's standard settings) of the predictions against -tgt."""
    from onmt.evaluation import METRICS, score, summarize
    res = summarize(score(pred_lines, ref_lines))
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
    logger.info("ROUGE (P/R/F1) against -tgt: " + "; ".join(
        f"{names[m]} {res[m]['p']:.2f}/{res[m]['r']:.2f}/{res[m]['f']:.2f}" for m in METRICS))
    return res


def main(argv=None):
    from onmt.translate.input_rules import prepare_lines, resolve
    from onmt.utils.checkpoint import load_checkpoint
    opt, device = start(opts.translate_parser(), opts.validate_translate_opts, argv)
    torch.manual_seed(opt.seed)
    random.seed(opt.seed)

    src_lines = read_lines(opt.src)
    tgt_lines = read_lines(opt.tgt) if opt.tgt else None
    if tgt_lines is not None and len(tgt_lines) != len(src_lines):
        raise UserError(f"-src has {len(src_lines)} lines but -tgt has {len(tgt_lines)}")
    ckpt = load_checkpoint(opt.model, device="cpu")
    model, vocabs, model_opt = model_from_checkpoint(ckpt, device)
    rules, notes = resolve(opt, model_opt, ckpt.get("preprocess"))
    for note in notes:
        logger.info(note)
    opt.max_length, opt.block_ngram_repeat = rules.max_length, rules.block_ngram_repeat

    from onmt.translate.translator import Translator
    translator = Translator.from_opt(opt, model, vocabs)
    results = translator.translate(prepare_lines(src_lines, rules.lower, rules.src_trunc),
                                   prepare_lines(tgt_lines, rules.lower, rules.tgt_trunc))
    write_lines_atomic(opt.output, [" ".join(t.tokens) for nbest in results for t in nbest])
    logger.info(f"Translated {len(src_lines)} lines into {opt.output}")
    if opt.report_rouge:
        report_rouge([" ".join(nbest[0].tokens) for nbest in results], tgt_lines)
    return results


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
