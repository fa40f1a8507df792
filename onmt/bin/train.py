"""Train a model: shards -> checkpoints (`train.py -data P -save_model M [-reinforced] ...`)."""
import argparse
import random

import torch

from onmt import opts
from onmt.inputters.vocab import Vocabs
from onmt.utils.checkpoint import load_checkpoint, set_rng_state
from onmt.utils.cli import UserError, run_main, start
from onmt.utils.logging import logger


def model_option_names():
    """The dests of the model-group options: on -train_from they come from the checkpoint."""
    p = argparse.ArgumentParser()
    opts.model_opts(p)
    return [a.dest for a in p._actions if a.dest != "help"]


def restore_model_options(opt, ckpt_opt):
    for name in model_option_names():
        if name in ckpt_opt:
            setattr(opt, name, ckpt_opt[name])


def main(argv=None):
    opt, device = start(opts.train_parser(), opts.validate_train_opts, argv)

    from onmt.inputters.dataset import ShardedDataset
    from onmt.inputters.vocab_builder import input_options, load_vocabs, shard_paths
    from onmt.model_builder import build_model, model_entry
    vocabs, meta = load_vocabs(opt.data)

    ckpt = None
    if opt.train_from:
        ckpt = load_checkpoint(opt.train_from, device="cpu")
        restore_model_options(opt, ckpt["opt"])
        if Vocabs.from_dict(ckpt["vocab"]) != vocabs:
            raise UserError(f"the vocabulary of {opt.train_from} differs from that of -data {opt.data}; "
                            "train from a checkpoint made on the same preprocessed data")
    opts.validate_model_opts(opt)
    entry = model_entry(opt)
    entry.check_data(opt, meta)

    torch.manual_seed(opt.seed)
    random.seed(opt.seed)
    model = build_model(opt, vocabs, ckpt["model"] if ckpt else None).to(device)
    from onmt.utils.optim import optimizer_from_opt
    optimizer = optimizer_from_opt(opt, model.parameters())
    start_step, data_pos = 0, (0, 0)
    if ckpt is not None:
        if "optim" in ckpt:
            optimizer.load_state_dict(ckpt["optim"])
        start_step = int(ckpt["step"])
        data_pos = tuple(ckpt.get("data_pos", (0, 0)))
        if "rng" in ckpt:
            set_rng_state(ckpt["rng"])
        logger.info(f"Resuming from {opt.train_from} at step {start_step}")

    n_params = sum(p.numel() for p in model.parameters())
    logger.info(f"Model {entry.name}: {n_params} parameters; device {device}")
    train_data = ShardedDataset.from_data(opt.data, "train", opt.batch_size, batch_type=opt.batch_type,
                                          pool_factor=opt.pool_factor, shuffle=True, seed=opt.seed)
    valid_data = (ShardedDataset.from_data(opt.data, "valid", opt.valid_batch_size, shuffle=False,
                                           seed=opt.seed)
                  if shard_paths(opt.data, meta, "valid") else None)
    loss_fn = entry.loss_cls.from_opt(opt)
    meta_ckpt = {"opt": opts.saved_options(opt), "vocab": vocabs.to_dict(),
                 "preprocess": input_options(meta)}
    trainer = entry.trainer_cls.from_opt(opt, model, loss_fn, optimizer, device, meta_ckpt)
    trainer.train(train_data, valid_data, start_step=start_step, data_pos=data_pos)


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
