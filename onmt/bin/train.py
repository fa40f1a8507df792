"""Train a model: shards -> checkpoints (`train.py -data P -save_model M [-reinforced] ...`)."""
import argparse
import random
import sys

import torch

from onmt import opts
from onmt.bin.common import start
from onmt.errors import UserError
from onmt.inputters.vocab import Vocabs
from onmt.trainer import Trainer
from onmt.utils import distributed
from onmt.utils.checkpoint import check_no_later_checkpoints, load_checkpoint, set_rng_state
from onmt.utils.cli import run_main
from onmt.utils.files import check_prefix
from onmt.utils.logging import init_logger, logger

# On -train_from, the model's options come from the checkpoint, except these training choices, which
# the command line (or -config) may change: what the new phase of training does.
MODEL_OPTIONS_A_RESUME_MAY_CHANGE = ("scheduled_sampling", "scheduled_sampling_mode", "lambda_coverage",
                                     "coverage_attn", "dropout", "param_init", "fix_word_vecs_enc",
                                     "fix_word_vecs_dec")
# Training options a resume takes from the checkpoint unless given again (exact resume by default).
OPTIMIZER_OPTIONS = ("optim", "learning_rate", "adagrad_accumulator_init", "adam_beta1", "adam_beta2",
                     "max_grad_norm", "decay_method", "learning_rate_decay", "start_decay_steps", "decay_steps",
                     "warmup_steps")
OBJECTIVE_OPTIONS = ("rl_gamma", "rl_reward", "max_gen_length", "normalization", "copy_loss_by_seqlength")


def model_option_names():
    """The dests of the model-group options: on -train_from they come from the checkpoint."""
    p = argparse.ArgumentParser()
    opts.model_opts(p)
    return [a.dest for a in p._actions if a.dest != "help"]


def restore_options(opt, ckpt_opt):
    """Options of a resumed run: the checkpoint's model (its shape, always), and its training choices,
    its optimizer's options included, unless given here (-reset_optim resets the optimizer's state,
    never its options: a fresh SGD at lr 1.0 would learn nothing from an Adam checkpoint at 1e-4).
    A model option the checkpoint lacks must be given here (a default could silently change the model)."""
    try:
        opts.check_saved_model_types(ckpt_opt)
    except opts.OptionError as e:
        raise UserError(f"checkpoint {opt.train_from} is damaged or from another program: its options are "
                        f"invalid: {e}") from None
    lacking = [n for n in model_option_names()
               if n not in ckpt_opt and not opts.given(opt, n) and n not in opts.ADDED_MODEL_OPTIONS]
    if lacking:
        raise UserError(f"checkpoint {opt.train_from} is damaged or from another program: its options lack "
                        f"{', '.join(lacking)} (give {' '.join('-' + n for n in lacking[:3])} to say what they were)")
    from_here = set(MODEL_OPTIONS_A_RESUME_MAY_CHANGE) | set(OBJECTIVE_OPTIONS) | set(OPTIMIZER_OPTIONS)
    contradictions = [f"-{n} {getattr(opt, n)} (the checkpoint's: {ckpt_opt[n]})" for n in model_option_names()
                      if n not in from_here and n in ckpt_opt and opts.given(opt, n) and getattr(opt, n) != ckpt_opt[n]]
    if contradictions:
        raise UserError(f"-train_from {opt.train_from} keeps the model it holds (its family, shape and attention); "
                        f"{', '.join(contradictions[:3])} given here contradict it: drop them, or train a new model "
                        f"(a resume may change {', '.join('-' + n for n in MODEL_OPTIONS_A_RESUME_MAY_CHANGE)})")
    for name in model_option_names() + list(OBJECTIVE_OPTIONS) + list(OPTIMIZER_OPTIONS):
        if name not in ckpt_opt and name in opts.ADDED_MODEL_OPTIONS and name not in from_here:
            setattr(opt, name, opts.ADDED_MODEL_OPTIONS[name])   # the checkpoint predates the option
            continue
        if name not in ckpt_opt or (name in from_here and opts.given(opt, name)):
            continue
        setattr(opt, name, ckpt_opt[name])
    if opt.copy_loss_by_seqlength and opt.rl_gamma and not opts.given(opt, "copy_loss_by_seqlength"):
        opt.copy_loss_by_seqlength = False   # it would weigh the ML term by 1/length: not the -rl_gamma mix
        logger.info(f"-copy_loss_by_seqlength of {opt.train_from} is not carried into the mixed objective "
                    "(it would divide the ML term by each summary's length and shift the mix from -rl_gamma)")


def check_steps_left(opt, start_step):
    """UserError when -train_steps leaves nothing to train after the checkpoint's step (it counts from
    the start of training, as in OpenNMT-py: the run would save nothing and exit 0)."""
    if opt.epochs <= 0 and opt.train_steps <= start_step:
        raise UserError(f"-train_steps {opt.train_steps} is not above the step of {opt.train_from} ({start_step}): "
                        f"nothing to train; -train_steps counts from the start of training, so give more than "
                        f"{start_step} (e.g. -train_steps {start_step + max(opt.train_steps, 1)})")


def describe_phase(opt, ckpt):
    """The log's line on what this run trains with: optimizer, its rate and state, and the objective."""
    if ckpt is None:
        state = "fresh state"
    elif "optim" not in ckpt or opt.reset_optim in ("all", "states"):
        state = f"fresh state (-reset_optim {opt.reset_optim})"
    else:
        state = f"state of {opt.train_from} (step {ckpt['step']})"
    if opt.rl_gamma is None:
        objective = "maximum likelihood"
    else:
        objective = (f"{opt.rl_gamma:g} * self-critical RL ({opt.rl_reward} reward, sequences of at most "
                     f"{opt.max_gen_length} tokens, -rl_normalization {opt.rl_normalization}) + "
                     f"{1 - opt.rl_gamma:g} * ML")
    return (f"Training: {opt.optim}, learning rate {opt.learning_rate:g}, {state}; batch {opt.batch_size} "
            f"{opt.batch_type}; objective: {objective}")


def build_optimizer(opt, model, ckpt):
    """The optimizer of `opt`, with the checkpoint's state unless -reset_optim all / states."""
    from onmt.utils.optim import load_optimizer_state, optimizer_from_opt
    optimizer = optimizer_from_opt(opt, model.parameters())
    if ckpt is None or "optim" not in ckpt or opt.reset_optim in ("all", "states"):
        return optimizer
    saved = ckpt["opt"].get("optim")
    if saved != opt.optim:
        raise UserError(f"-optim {opt.optim} differs from the optimizer of {opt.train_from} ({saved}), whose "
                        "state cannot be loaded: add -reset_optim all (or states) for a fresh optimizer state")
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
                    f"{summary.get('read', '?')} lines and dropped {drops or 'all'}; see -src_seq_length / "
                    "-tgt_seq_length, or -src_seq_length_trunc to cut instead of drop)")


def inputs(opt):
    """The files train.py reads, which none of its outputs may be."""
    return {"-train_from": opt.train_from, "-config": vars(opt).get("config"), "-data": f"{opt.data}.meta.json",
            "-pre_word_vecs_enc": opt.pre_word_vecs_enc, "-pre_word_vecs_dec": opt.pre_word_vecs_dec}


def main(argv=None):
    opt, device = start(opts.train_parser(), opts.update_train_opts, opts.validate_train_opts, argv, inputs=inputs)
    if opt.data_config and not opt.save_config:   # an OpenNMT-py 3.x config: its dataset, built or found
        import json

        from onmt.bin import preprocess as preprocess_bin
        from onmt.inputters.upstream_data import ensure_dataset
        opt.data = ensure_dataset(json.loads(opt.data_config), preprocess_bin.main)
    from onmt.utils.files import check_not_inputs
    check_not_inputs({"-save_config": opt.save_config,
                      "-profile_trace": opt.profile and opt.profile_trace}, inputs(opt))
    if opt.save_config:
        opts.write_config(opt, opt.save_config, opts.train_parser())
        logger.info(f"wrote the options to {opt.save_config}")
        return
    check_prefix(opt.save_model, f"-save_model {opt.save_model}")  # before any work, not at the first save
    if opt.profile:
        from onmt.utils.files import check_output
        from onmt.utils.profiling import trace_path
        check_output(trace_path(opt, opt.save_model), f"-profile_trace {trace_path(opt, opt.save_model)}")
    world = distributed.resolve(opt, device)
    if world.spawn:  # -world_size N outside torchrun: N processes on this machine, each running main
        distributed.spawn(main, list(sys.argv[1:] if argv is None else argv), world.world_size)
        return
    with distributed.process_group(world):
        train_rank(opt, world)


def train_rank(opt, world):
    """Train as rank `world.rank` of `world.world_size` (utils/distributed.py): every rank builds the
    same model and reads its own batches; rank 0 logs, writes TensorBoard and saves, holding the lock of
    -save_model (a second run writing the same checkpoints is refused)."""
    import contextlib

    from onmt.utils.files import prefix_lock
    lock = prefix_lock(opt.save_model, f"-save_model {opt.save_model}") if world.rank == 0 else contextlib.nullcontext()
    with lock:
        _train_rank(opt, world)


def _train_rank(opt, world):
    device = world.device
    if world.rank > 0:
        init_logger("", world.rank)  # warnings and errors only, on stderr
    from onmt.utils.tensorboard import TensorBoard
    board = TensorBoard.from_opt(opt) if world.rank == 0 else None  # checked here, before any work

    from onmt.inputters.dataset import ShardedDataset
    from onmt.inputters.vocab_builder import input_options, load_vocabs, shard_paths, target_length_limit
    from onmt.model_builder import build_loss, build_model, compile_decoder_step, model_entry
    vocabs, meta = load_vocabs(opt.data)
    check_training_examples(opt.data, meta)

    # the model options given here, resolved (onmt/opts/update.py); on -train_from, the checkpoint's
    # own (resolved when it was trained) then replace them, but for those a resume may change
    opts.update_model_opts(opt)
    ckpt = None
    if opt.train_from:
        ckpt = load_checkpoint(opt.train_from, device="cpu")
        restore_options(opt, ckpt["opt"])
        if Vocabs.from_dict(ckpt["vocab"]) != vocabs:
            raise UserError(f"the vocabulary of {opt.train_from} differs from that of -data {opt.data}; "
                            "train from a checkpoint made on the same preprocessed data")
    opts.validate_model_opts(opt)
    if opt.copy_loss_by_seqlength and not opt.copy_attn:
        raise UserError("-copy_loss_by_seqlength needs a copy model (-copy_attn or -reinforced)")
    entry = model_entry(opt)
    entry.check_data(opt, meta)
    if not opt.max_gen_length:
        opt.max_gen_length = target_length_limit(meta)
    differences = opts.paper_differences(opt)
    if differences:
        logger.info("Settings that differ from Paulus et al.'s (config/cnndm_reinforced.yaml has theirs): "
                    + ", ".join(differences))

    torch.manual_seed(opt.seed)
    random.seed(opt.seed)
    model = build_model(opt, vocabs, ckpt["model"] if ckpt else None,
                        allow_new=ckpt is not None and opts.given(opt, "coverage_attn"),
                        checkpoint_name=opt.train_from or None, device=device)
    if opt.compile:
        compile_decoder_step(model)
        logger.info("-compile: the decoder's step is compiled by torch.compile on its first call")
    optimizer = build_optimizer(opt, model, ckpt)
    logger.info(describe_phase(opt, ckpt))
    distributed.broadcast_model(model, world)
    distributed.seed_rank(opt.seed, world)  # same parameters, different draws on each rank
    start_step, data_pos, same_run = 0, (0, 0), False
    if ckpt is not None:
        start_step = int(ckpt["step"])
        check_steps_left(opt, start_step)
        data_pos, rng = distributed.resume_state(ckpt, world)
        same_run = ckpt["opt"].get("save_model") == opt.save_model
        if rng is not None and (same_run or opt.seed == ckpt["opt"].get("seed")):
            set_rng_state(rng)   # exact resume; a new phase given another -seed draws from that seed
        logger.info(f"Resuming from {opt.train_from} at step {start_step}")
    if world.rank == 0 and not opt.profile:
        check_no_later_checkpoints(opt.save_model, start_step, resuming=same_run)

    train_data = ShardedDataset.from_data(opt.data, "train", opt.batch_size, batch_type=opt.batch_type,
                                          pool_factor=opt.pool_factor, shuffle=True, seed=opt.seed,
                                          rank=world.rank, world_size=world.world_size)
    distributed.check_batches(train_data, world)
    valid_data = (ShardedDataset.from_data(opt.data, "valid", opt.valid_batch_size, shuffle=False,
                                           seed=opt.seed, rank=world.rank, world_size=world.world_size,
                                           equal_shares=False)
                  if shard_paths(opt.data, meta, "valid") else None)
    loss_fn = build_loss(opt)
    meta_ckpt = {"opt": opts.saved_options(opt), "vocab": vocabs.to_dict(), "preprocess": input_options(meta),
                 "param_names": [n for n, _ in model.named_parameters()]}
    trainer = Trainer.from_opt(opt, model, loss_fn, optimizer, device, meta_ckpt, tensorboard=board,
                               rank=world.rank, world_size=world.world_size)
    if ckpt is not None:
        trainer.restore(ckpt, same_run=same_run)
    try:
        if opt.profile:   # profile N steps, then stop (exit status 0, no checkpoint)
            from onmt.utils.profiling import trace_path
            trainer.profile(train_data, opt.profile, trace_path(opt, opt.save_model), start_step=start_step,
                            data_pos=data_pos)
            return
        trainer.train(train_data, valid_data, start_step=start_step, data_pos=data_pos)
    finally:
        if board is not None:
            board.close()


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
