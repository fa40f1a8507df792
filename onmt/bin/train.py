"""Train a model: shards -> checkpoints
(`train.py -data P -save_model M [-model_family reinforced] ...`).

The options are parsed, updated and validated at start (onmt/opts/); once the data and the
checkpoint are read, `opts.resolve_train_run` makes the run's options (the checkpoint's model on
-train_from, the data's defaults) and `opts.validate_train_run` checks them: nothing here writes an
option."""
import contextlib
import glob
import json
import os
import random
import re
import sys

import torch

from onmt import opts
from onmt.bin import preprocess as preprocess_bin
from onmt.bin.common import start
from onmt.errors import UserError
from onmt.execution import Execution
from onmt.inputters.dataset import ShardedDataset
from onmt.inputters.upstream_data import ensure_dataset
from onmt.inputters.vocab import Vocabs
from onmt.losses import build_loss
from onmt.trainer import Trainer
from onmt.utils import distributed
from onmt.utils.checkpoint import check_no_later_checkpoints, load_checkpoint, set_rng_state
from onmt.utils.cli import run_main
from onmt.utils.files import (
    check_not_inputs,
    check_not_prefix_files,
    check_output,
    check_prefix,
    is_stream,
    prefix_lock,
    write_text_atomic,
)
from onmt.utils.logging import init_logger, logger
from onmt.utils.memory import is_out_of_memory, memory_size, training_step_bytes
from onmt.utils.optim import load_optimizer_state, optimizer_from_opt
from onmt.utils.output_rule import check_replaceable
from onmt.utils.profiling import profile_training, trace_path
from onmt.utils.tensorboard import TensorBoard


def check_steps_left(opt, start_step, start_epoch=0):
    """UserError when -train_steps (or -epochs) leaves nothing to train after the checkpoint's step
    (epoch): both count from the start of training, as in OpenNMT-py; the run would save nothing (or
    only a new "best") and exit 0."""
    if opt.epochs > 0 and opt.epochs <= start_epoch:
        raise UserError(f"-epochs {opt.epochs} is not above the epoch of {opt.train_from} "
                        f"({start_epoch}): nothing to train; -epochs counts from the start of "
                        f"training (e.g. -epochs {start_epoch + opt.epochs})")
    if opt.epochs <= 0 and opt.train_steps <= start_step:
        raise UserError(f"-train_steps {opt.train_steps} is not above the step of {opt.train_from} "
                        f"({start_step}): nothing to train; -train_steps counts from the start of "
                        f"training, so give more than {start_step} (e.g. -train_steps "
                        f"{start_step + max(opt.train_steps, 1)})")


def describe_phase(opt, ckpt):
    """The log's line on what this run trains with: optimizer, its rate and state, and the
    objective."""
    if ckpt is None:
        state = "fresh state"
    elif "optim" not in ckpt or opt.reset_optim in ("all", "states"):
        state = f"fresh state (-reset_optim {opt.reset_optim})"
    else:
        state = f"state of {opt.train_from} (step {ckpt['step']})"
    if opt.rl_gamma is None:
        objective = "maximum likelihood"
    else:
        objective = (f"{opt.rl_gamma:g} * self-critical RL ({opt.rl_reward} reward, sequences of "
                     f"at most {opt.max_gen_length} tokens, -rl_normalization "
                     f"{opt.rl_normalization}) + {1 - opt.rl_gamma:g} * ML")
    return (f"Training: {opt.optim}, learning rate {opt.learning_rate:g}, {state}; batch "
            f"{opt.batch_size} {opt.batch_type}; objective: {objective}")


def build_optimizer(opt, model, ckpt):
    """The optimizer of `opt`, with the checkpoint's state unless -reset_optim all / states."""
    optimizer = optimizer_from_opt(opt, model.parameters())
    if ckpt is None or "optim" not in ckpt or opt.reset_optim in ("all", "states"):
        return optimizer
    saved = ckpt["opt"].get("optim")
    if saved != opt.optim:
        raise UserError(f"-optim {opt.optim} differs from the optimizer of {opt.train_from} "
                        f"({saved}), whose state cannot be loaded: add -reset_optim all (or "
                        "states) for a fresh optimizer state")
    names = [n for n, _ in model.named_parameters()]
    # checkpoints before "param_names": the same order, without the parameters this resume adds
    ckpt_names = ckpt.get("param_names") or [n for n in names if n in ckpt["model"]]
    load_optimizer_state(optimizer, ckpt["optim"], opt, ckpt_names=ckpt_names, names=names)
    return optimizer


def check_training_examples(data, meta):
    """UserError unless the preprocessed training split holds an example (an empty one would loop
    forever looking for a batch), naming what preprocessing dropped."""
    sizes = meta.get("shard_sizes", {}).get("train")
    if sizes is None or sum(sizes) > 0:
        return
    summary = meta.get("summary", {}).get("train", {})
    drops = ", ".join(f"{k} {v}" for k, v in summary.get("drops", {}).items() if v)
    raise UserError(f"-data {data}: the training split has no example (preprocessing read "
                    f"{summary.get('read', '?')} lines and dropped {drops or 'all'}; see "
                    "-src_seq_length / -tgt_seq_length, or -src_seq_length_trunc to cut instead of "
                    "drop)")


def check_step_memory(opt, train_data, vocabs, device):
    """UserError, before any step, when the batch of the longest training example cannot fit the
    device's memory in one training step (utils/memory.py `training_step_bytes`, against all of
    `memory_size`): one step of a 200,000-token article never ended, deaf to SIGTERM and ^C inside
    one native call. Names the example and what to cut, as translation's out-of-memory line does."""
    src, tgt, where, examples = train_data.longest()
    total = memory_size(device)
    if where is None or total is None:
        return where and (src, where)
    tgt = max(tgt, opt.max_gen_length if opt.rl_gamma else 0)
    rows = (min(opt.batch_size, examples) if opt.batch_type == "sents"
            else max(1, opt.batch_size // max(src, tgt, 1)))
    need = training_step_bytes(rows, src, tgt, opt.rnn_size, opt.word_vec_size,
                               max(opt.enc_layers, opt.dec_layers), len(vocabs.tgt))
    if need > total:
        (path, index), gib = where, 2 ** 30
        raise UserError(f"-data {opt.data}: training example {index} of {path} has {src:,} source "
                        f"tokens: one training step on its batch ({rows} rows padded to its "
                        f"length) needs about {need / gib:,.0f} GiB, more than the "
                        f"{total / gib:,.0f} GiB of {device.type} memory; cut long inputs with "
                        "preprocess.py "
                        "-src_seq_length_trunc N (or drop them with -src_seq_length N)"
                        f"{' or lower -batch_size' if rows > 1 else ''}")
    return src, where


def out_of_memory_error(exc, longest):
    """`exc` itself, or where it is an allocation failure a UserError naming the longest training
    example (`longest`: (source tokens, (shard, index)) or None) and what to cut, as translation
    names its longest input line."""
    if not is_out_of_memory(exc):
        return exc
    where = (f" (the longest example, {longest[1][1]} of {longest[1][0]}, has {longest[0]:,} "
             "source tokens)" if longest else "")
    return UserError(f"out of memory in a training step{where}: lower -batch_size (or use "
                     "-batch_type tokens), or cut long inputs with preprocess.py "
                     "-src_seq_length_trunc N")


def inputs(opt, data=None):
    """The files train.py reads, which none of its outputs may be (`data`: the dataset when not
    -data)."""
    prefix = data or opt.data
    return {"-train_from": opt.train_from, "-config": vars(opt).get("config"),
            "-data": ([f"{prefix}.meta.json"] + sorted(glob.glob(glob.escape(prefix) + ".*"))
                      if prefix else None),
            "-pre_word_vecs_enc": opt.pre_word_vecs_enc,
            "-pre_word_vecs_dec": opt.pre_word_vecs_dec}


def outputs(opt):
    """The files train.py writes besides its checkpoints, no two of them one file and none of them a
    file of -save_model (`check_prefix_outputs`)."""
    return {"-log_file": opt.log_file, "-save_config": opt.save_config,
            "-profile_trace": trace_path(opt, opt.save_model) if opt.profile else None}


def check_prefix_outputs(opt):
    """UserError when -log_file, -save_config or -profile_trace is a checkpoint of -save_model, its
    best checkpoint or its lock: a save, a pruning or the lock's removal would lose it."""

    base = re.escape(os.path.basename(opt.save_model))
    names = re.compile(rf"{base}(_step_\d+\.pt|_best\.pt(\.tmp\d+)?|\.lock)$")
    check_not_prefix_files(outputs(opt), opt.save_model, f"-save_model {opt.save_model}", names)


def save_config_file(path, text):
    """-save_config: written whole or not at all (a stream written through); over an existing file
    only when it is a YAML mapping (the one output rule: never over a checkpoint, a dataset's file,
    a corpus)."""
    if not is_stream(path):
        check_replaceable(path, f"-save_config {path}", "yaml")
    write_text_atomic(path, text, f"-save_config {path}")


def main(argv=None):
    opt, device = start(opts.train_parser(), opts.update_train_opts, opts.validate_train_opts, argv,
                        inputs=inputs, outputs=outputs, before_log=check_prefix_outputs)
    data = opt.data
    if opt._config_notes:
        logger.info(opt._config_notes)
    # an OpenNMT-py 3.x config: its dataset, built or found
    if opt.data_config and not opt.save_config:

        data = ensure_dataset(json.loads(opt.data_config), preprocess_bin.main)
    check_not_inputs({"-save_config": opt.save_config,
                      "-profile_trace": opt.profile and opt.profile_trace}, inputs(opt, data))
    if opt.save_config:
        opts.write_config(opt, opt.save_config, opts.train_parser(), write=save_config_file)
        logger.info(f"wrote the options to {opt.save_config}")
        return
    # before any work, not at the first save
    check_prefix(opt.save_model, f"-save_model {opt.save_model}")
    if opt.profile:
        check_output(trace_path(opt, opt.save_model),
                     f"-profile_trace {trace_path(opt, opt.save_model)}")
    world = distributed.resolve(opt, device, **opts.distributed_choices(opt))
    # -world_size N outside torchrun: N processes on this machine, each running main
    if world.spawn:
        distributed.spawn(main, list(sys.argv[1:] if argv is None else argv), world.world_size)
        return
    with distributed.process_group(world):
        train_rank(opt, world, data)


def capture_note(opt, model, loss_fn):
    """-cuda_graphs: the ML loss's teacher-forced pass captured where the model's execution says so
    (CUDA), else one line saying why it runs eagerly."""
    if not opt.cuda_graphs:
        return
    from onmt.execution import captured
    if model.execution.capture == "off":
        logger.info("-cuda_graphs: CUDA only; the teacher-forced pass runs eagerly on this device")
    elif not hasattr(loss_fn, "capture_with"):
        logger.info("-cuda_graphs: the mixed objective runs eagerly (only the ML loss is captured)")
    else:
        loss_fn.capture_with(captured)
        shapes = "" if opt.length_buckets else " (without -length_buckets: one per batch)"
        logger.info("-cuda_graphs: the teacher-forced pass and the ML loss captured as CUDA "
                    f"graphs, one per batch shape{shapes}")


def train_rank(opt, world, data=None):
    """Train as rank `world.rank` of `world.world_size` (utils/distributed.py) on the dataset `data`
    (default -data): every rank builds the same model and reads its own batches; rank 0 logs, writes
    TensorBoard and saves, holding the lock of -save_model (a second run writing the same
    checkpoints is refused)."""

    lock = (prefix_lock(opt.save_model, f"-save_model {opt.save_model}") if world.rank == 0
            else contextlib.nullcontext())
    with lock:
        _train_rank(opt, world, data or opt.data)


def _train_rank(opt, world, data):
    device = world.device
    if world.rank > 0:
        init_logger("", world.rank)  # warnings and errors only, on stderr
    board = TensorBoard.from_opt(opt) if world.rank == 0 else None  # checked here, before any work

    # looked up on its module when called: the tests replace it there
    from onmt.inputters.vocab_builder import (
        input_options,
        load_vocabs,
        shard_paths,
        target_length_limit,
    )
    from onmt.model_builder import build_model, model_entry  # as load_vocabs: the tests replace it
    vocabs, meta = load_vocabs(data)
    check_training_examples(data, meta)

    # this run's options (onmt/opts/update.py): those of the command line, on -train_from with the
    # checkpoint's model (resolved when it was trained) and training choices but for what a resume
    # may change, and the data's defaults
    ckpt = load_checkpoint(opt.train_from, device="cpu") if opt.train_from else None
    opt, notes = opts.resolve_train_run(opt, ckpt["opt"] if ckpt else None, data,
                                        target_length_limit(meta))
    for note in notes:
        logger.info(note)
    if ckpt is not None and Vocabs.from_dict(ckpt["vocab"]) != vocabs:
        raise UserError(f"the vocabulary of {opt.train_from} differs from that of -data "
                        f"{opt.data}; train from a checkpoint made on the same preprocessed data")
    opts.validate_train_run(opt)
    model_entry(opt).check_data(opt, meta)
    note = opts.paper_note(opt)
    if note:
        logger.info(note)

    torch.manual_seed(opt.seed)
    random.seed(opt.seed)
    # trained with -average_decay: "model" is the moving average, "train_model" the trained weights
    model = build_model(opt, vocabs, ckpt.get("train_model", ckpt["model"]) if ckpt else None,
                        allow_new=opts.resume_adds_parameters(opt),
                        checkpoint_name=opt.train_from or None, device=device,
                        # -compile: the decoder's step, compiled on first call
                        execution=Execution.for_training(opt, device))
    optimizer = build_optimizer(opt, model, ckpt)
    logger.info(describe_phase(opt, ckpt))
    distributed.broadcast_model(model, world)
    distributed.seed_rank(opt.seed, world)  # same parameters, different draws on each rank
    start_step, data_pos, same_run = 0, (0, 0), False
    if ckpt is not None:
        start_step = int(ckpt["step"])
        data_pos, rng = distributed.resume_state(ckpt, world)
        check_steps_left(opt, start_step, int(data_pos[0]))
        same_run = ckpt["opt"].get("save_model") == opt.save_model
        if rng is not None and (same_run or opt.seed == ckpt["opt"].get("seed")):
            # exact resume; a new phase given another -seed draws from that seed
            set_rng_state(rng)
        logger.info(f"Resuming from {opt.train_from} at step {start_step}")
    if world.rank == 0 and not opt.profile:
        check_no_later_checkpoints(opt.save_model, start_step, resuming=same_run)

    train_data = ShardedDataset.from_data(opt.data, "train", opt.batch_size,
                                          batch_type=opt.batch_type,
                                          pool_factor=opt.pool_factor, shuffle=True, seed=opt.seed,
                                          rank=world.rank, world_size=world.world_size,
                                          length_buckets=opt.length_buckets)
    distributed.check_batches(train_data, world)
    longest = check_step_memory(opt, train_data, vocabs, device)
    valid_data = (ShardedDataset.from_data(opt.data, "valid", opt.valid_batch_size, shuffle=False,
                                           seed=opt.seed, rank=world.rank,
                                           world_size=world.world_size, equal_shares=False,
                                           length_buckets=opt.length_buckets)
                  if shard_paths(opt.data, meta, "valid") else None)
    loss_fn = build_loss(opt)
    capture_note(opt, model, loss_fn)
    meta_ckpt = {"opt": opts.saved_options(opt), "vocab": vocabs.to_dict(),
                 "preprocess": input_options(meta),
                 "param_names": [n for n, _ in model.named_parameters()]}
    trainer = Trainer.from_opt(opt, model, loss_fn, optimizer, device, meta_ckpt, tensorboard=board,
                               rank=world.rank, world_size=world.world_size)
    if ckpt is not None:
        trainer.restore(ckpt, same_run=same_run, path=opt.train_from)
    try:
        if opt.profile:   # profile N steps, then stop (exit status 0, no checkpoint)
            profile_training(trainer, train_data, opt.profile, trace_path(opt, opt.save_model),
                             start_step=start_step, data_pos=data_pos)
            return
        try:
            trainer.train(train_data, valid_data, start_step=start_step, data_pos=data_pos)
        except (MemoryError, RuntimeError) as e:
            raise out_of_memory_error(e, longest) from e
    finally:
        if board is not None:
            board.close()


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
