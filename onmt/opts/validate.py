"""Validation: the cross-option checks of each group, run after the update step (update.py). A check
never changes `opt`; an impossible option is one OptionError whose one line names it."""
import math
import os

from onmt.constants import N_SPECIALS
from onmt.errors import OptionError, UserError
from onmt.opts.families import FAMILIES, family_name
from onmt.opts.parse import given, make_parser
from onmt.opts.search_rules import check_search
from onmt.opts.validate_tools import (  # noqa: F401  (read from here too)
    MIN_BOOTSTRAP,
    validate_evaluate_opts,
    validate_explore_opts,
    validate_plot_attention_opts,
)


def _check_numbers(opt, positive=(), non_negative=(), unit=(), unit_open=()):
    """One-line OptionErrors for impossible numbers: each name of `positive` must be > 0, of
    `non_negative` >= 0, of `unit` in [0, 1], of `unit_open` in [0, 1); NaN and infinity never
    pass."""
    rules = [(positive, lambda v: v > 0, "must be positive"),
             (non_negative, lambda v: v >= 0, "must be >= 0"),
             (unit, lambda v: 0 <= v <= 1, "must be in [0, 1]"),
             (unit_open, lambda v: 0 <= v < 1, "must be in [0, 1)")]
    for names, ok, what in rules:
        for name in names:
            value = getattr(opt, name)
            if value is None:   # an option whose default is None, not given
                continue
            if not math.isfinite(value) or not ok(value):
                raise OptionError(f"-{name} {what}, got {value}")


def _check_gpu(gpu):
    if gpu >= 0:
        import torch  # onmt/opts/ imports no torch (start-up time)
        if not torch.cuda.is_available():
            raise OptionError(f"-gpu {gpu} given but CUDA is not available")


def validate_prepare_opts(opt):
    if opt.report_every <= 0:
        raise OptionError(f"-report_every must be positive, got {opt.report_every}")
    if os.path.realpath(opt.input) == os.path.realpath(opt.output):
        raise OptionError("-input and -output must be different folders")


def validate_preprocess_opts(opt):
    for name in ("src_vocab_size", "tgt_vocab_size"):
        if getattr(opt, name) <= N_SPECIALS:
            raise OptionError(f"-{name} {getattr(opt, name)} must be larger than the "
                              f"{N_SPECIALS} special tokens")
    if opt.shard_size <= 0:
        raise OptionError(f"-shard_size must be positive, got {opt.shard_size}")
    if opt.num_threads <= 0:
        raise OptionError(f"-num_threads must be positive, got {opt.num_threads}")
    # a negative cut was words[:-1] (the last word of every line silently dropped)
    _check_numbers(opt, positive=("src_seq_length", "tgt_seq_length"),
                   non_negative=("src_seq_length_trunc", "tgt_seq_length_trunc",
                                 "src_words_min_frequency", "tgt_words_min_frequency",
                                 "report_every"))
    if (opt.valid_src is None) != (opt.valid_tgt is None):
        raise OptionError("-valid_src and -valid_tgt go together")
    if opt.share_vocab and opt.tgt_vocab:
        raise OptionError("-share_vocab takes one vocabulary file: give -src_vocab, not -tgt_vocab")
    if opt.share_vocab and opt.tgt_vocab_size > opt.src_vocab_size:
        raise OptionError("-share_vocab needs -tgt_vocab_size <= -src_vocab_size "
                          "(the target vocabulary is a prefix of the source vocabulary)")


def check_model_numbers(opt):
    """The model group's impossible numbers (train.py checks them at start, before reading any
    data)."""
    _check_numbers(opt, positive=("rnn_size", "word_vec_size", "enc_layers", "dec_layers"),
                   non_negative=("param_init", "lambda_coverage"), unit_open=("dropout",))
    if opt.layers == 0 or opt.layers < -1:
        raise OptionError("-layers must be positive (or -1: use -enc_layers and -dec_layers), "
                          f"got {opt.layers}")


def validate_model_opts(opt):
    """Cross-option checks of the model group (after `update_model_opts`, or on a checkpoint's
    options after `update_saved_model_opts`): the family's tables (families.FAMILIES), then the
    rules of every family."""
    check_model_numbers(opt)
    family = FAMILIES[family_name(vars(opt))]
    # an alias names its family: another -model_family contradicts it
    for other in FAMILIES.values():
        if other.alias and getattr(opt, other.alias) and not family.implies.get(other.alias):
            raise OptionError(f"-model_family {family.name} contradicts -{other.alias} "
                              f"(-{other.alias} is -model_family {other.name})")
    refused = [r for r in family.refuses if given(opt, r.option) and r.bad(getattr(opt, r.option))]
    if refused:
        shown = [f"{r.flag or '-' + r.option} {(r.shown or str)(getattr(opt, r.option))}"
                 for r in refused]
        why = "; ".join(f"{r.flag or '-' + r.option}: {r.reason}" for r in refused)
        raise OptionError(f"{family.title} cannot honour {', '.join(shown)} ({why})")
    for other in FAMILIES.values():
        only = [f"-{name}" for name in other.only if name not in family.only and given(opt, name)]
        if only:
            raise OptionError(f"{', '.join(only)} only appl{'ies' if len(only) == 1 else 'y'} to "
                              f"{other.flag}")
    for rule in family.requires:
        if not rule.ok(opt):
            raise OptionError(rule.message(opt))
    if opt.reuse_copy_attn and not opt.copy_attn:
        raise OptionError("-reuse_copy_attn needs -copy_attn")
    if given(opt, "lambda_coverage") and not opt.coverage_attn:
        raise OptionError("-lambda_coverage needs -coverage_attn")
    if opt.brnn and opt.rnn_size % 2:
        raise OptionError(f"-brnn needs an even -rnn_size, got {opt.rnn_size}")
    if opt.coverage_attn and not opt.copy_attn and opt.global_attention == "none":
        raise OptionError("-coverage_attn needs attention (-global_attention is none)")
    if opt.copy_attn and opt.global_attention == "none":
        raise OptionError("-copy_attn needs attention (-global_attention is none)")
    _check_sampling_schedule(opt)


def _check_sampling_schedule(opt):
    """Scheduled sampling's probability in [0, 1], its start and ramp (in steps) >= 0."""
    if not 0.0 <= opt.scheduled_sampling <= 1.0:
        raise OptionError(f"-scheduled_sampling must be in [0, 1], got {opt.scheduled_sampling}")
    for name in ("scheduled_sampling_start", "scheduled_sampling_ramp"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")


def value_type_problem(action, value):
    """None when `value`, a Python value given for the option of argparse `action` (not text to
    parse), has the type the option takes: a bool for a flag, a list or tuple of str for a list
    option, an int (not a bool) for an int option, an int or a float for a float option, a str
    otherwise; else what it must be ("an int", "a bool", "a number", "a str", "a list of str"). The
    one type check of the Python API's keywords (onmt/api.py) and of a checkpoint's saved options
    (check_saved_model_types)."""
    if action.nargs == 0:
        ok, want = isinstance(value, bool), "a bool"
    elif action.nargs not in (None, "?"):
        ok, want = (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value),
                    "a list of str")
    elif action.type is int:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an int"
    elif action.type is float:
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    else:
        ok, want = isinstance(value, str), "a str"
    return None if ok else want


def check_saved_model_types(saved):
    """OptionError naming the option unless every model option of a checkpoint's saved options (a
    dict) has a value its command-line option could have given: the right type (value_type_problem:
    an int for -rnn_size, a bool for a flag) and one of its choices (a damaged or hand-edited
    checkpoint would otherwise crash later, far from the cause)."""
    from onmt.opts.model import model_opts  # a cycle: onmt.opts imports validate
    parser = make_parser("")
    model_opts(parser)
    seen = set()
    for action in parser._actions:
        name = action.dest
        if name in seen or name == "help" or name not in saved:
            continue
        seen.add(name)
        value = saved[name]
        if value is None and action.default is None:
            continue
        want = value_type_problem(action, value)
        if want is None and action.choices is not None and value not in action.choices:
            want = "one of " + ", ".join(map(str, action.choices))
        if want is not None:
            raise OptionError(f"-{name} {value!r} is not {want}")


def paper_differences(opt):
    """'-name value (paper: p)' for each setting of the family's paper (families.Family.paper) this
    run sets otherwise (the RL phase's own learning rate, 1e-4 in Paulus et al., is not a
    difference)."""
    out = []
    for name, paper in FAMILIES[family_name(vars(opt))].paper.items():
        value = getattr(opt, name)
        if name == "learning_rate" and opt.rl_gamma:
            continue
        if name == "rl_gamma" and value is None:
            continue
        if value != paper:
            out.append(f"-{name} {value} (paper: {paper})")
    return out


def paper_note(opt):
    """The log's line on this run's `paper_differences` ("" when none)."""
    differences = paper_differences(opt)
    if not differences:
        return ""
    return (f"Settings that differ from {FAMILIES[family_name(vars(opt))].paper_name}: "
            + ", ".join(differences))


def validate_train_opts(opt):
    """train.py's options, one option group after the other (each check independent, one line)."""
    _validate_training_length(opt)
    _validate_objective(opt)
    _validate_checkpoints_and_validation(opt)
    _validate_schedule(opt)
    _validate_devices(opt)


def _validate_training_length(opt):
    """Batches, steps, epochs, reports and the model's numbers."""
    _check_numbers(opt, positive=("batch_size", "valid_batch_size", "pool_factor", "report_every",
                                  "learning_rate", "accum_count", "world_size"),
                   non_negative=("train_steps", "epochs", "max_grad_norm",
                                 "adagrad_accumulator_init", "length_buckets"),
                   unit_open=("adam_beta1", "adam_beta2"))
    check_model_numbers(opt)
    if opt.profile < 0:
        raise OptionError(f"-profile must be >= 0, got {opt.profile}")
    if opt.train_steps <= 0 and opt.epochs <= 0:
        raise OptionError("one of -train_steps or -epochs must be positive")
    if opt.train_time_limit < 0 or opt.train_time_limit != opt.train_time_limit:
        raise OptionError(f"-train_time_limit must be >= 0, got {opt.train_time_limit}")
    if opt.sample_every < 0:
        raise OptionError(f"-sample_every must be >= 0, got {opt.sample_every}")


def _validate_objective(opt):
    """The mixed objective: -rl_gamma, its normalization, the rollouts' length."""
    if opt.rl_gamma is not None and not 0.0 <= opt.rl_gamma <= 1.0:
        raise OptionError(f"-rl_gamma must be in [0, 1], got {opt.rl_gamma}")
    if given(opt, "rl_normalization") and not opt.rl_gamma:
        raise OptionError("-rl_normalization scales the mixed objective's two terms: give "
                          "-rl_gamma (above 0)")
    if opt.copy_loss_by_seqlength and opt.rl_gamma and given(opt, "copy_loss_by_seqlength"):
        raise OptionError("-copy_loss_by_seqlength with -rl_gamma would divide the ML term by each "
                          "summary's length and so shift the mix away from -rl_gamma; use "
                          "-rl_normalization tokens for per-token terms")
    if opt.max_gen_length < 0:
        raise OptionError(f"-max_gen_length must be >= 0, got {opt.max_gen_length}")


def _validate_checkpoints_and_validation(opt):
    """Validation, early stopping, checkpoints, the weights' moving average, the training data."""
    if opt.early_stopping < 0:
        raise OptionError(f"-early_stopping must be >= 0, got {opt.early_stopping}")
    _check_numbers(opt, non_negative=("valid_steps", "save_checkpoint_steps"))
    from onmt.opts.upstream_config import PLACEHOLDER  # a cycle: onmt.opts imports validate
    if vars(opt).get("data_config") and opt.data != PLACEHOLDER:
        raise OptionError(f"-data {opt.data} and the -config's data: mapping both name the "
                          "training data: give one (drop -data to train on the config's corpora)")
    if not 0 <= opt.average_decay < 1:
        raise OptionError(f"-average_decay must be in [0, 1) (0: no moving average), "
                          f"got {opt.average_decay}")
    if opt.average_every < 1:
        raise OptionError(f"-average_every must be 1 or more, got {opt.average_every}")
    if opt.keep_checkpoint < -1:
        raise OptionError("-keep_checkpoint must be -1 (keep all), 0 or positive, "
                          f"got {opt.keep_checkpoint}")
    if opt.early_stopping and opt.valid_steps == 0:
        raise OptionError(f"-early_stopping {opt.early_stopping} needs validation: "
                          "-valid_steps 0 never validates")
    if "rougeL" in (opt.early_stopping_criteria or ()) and opt.valid_rouge is False:
        raise OptionError("-early_stopping_criteria rougeL needs the greedy validation ROUGE: "
                          "drop -no_valid_rouge")


def _validate_schedule(opt):
    """The learning-rate schedule and -reset_optim."""
    _check_numbers(opt, positive=("learning_rate_decay", "decay_steps", "warmup_steps"),
                   non_negative=("start_decay_steps",))
    if not opt.train_from:   # a resume may change one schedule option of the checkpoint's schedule
        exponential = [f"-{n}" for n in ("learning_rate_decay", "start_decay_steps", "decay_steps")
                       if given(opt, n)]
        if exponential and opt.decay_method != "none":
            raise OptionError(f"{' '.join(exponential)}: exponential decay is -decay_method "
                              f"none's, not {opt.decay_method}'s")
        if given(opt, "warmup_steps") and opt.decay_method == "none":
            raise OptionError("-warmup_steps applies to -decay_method noam or rsqrt")
    if opt.reset_optim != "none" and not opt.train_from:
        raise OptionError(f"-reset_optim {opt.reset_optim} needs -train_from")


def _validate_devices(opt):
    """-gpu, -gpu_ranks, -world_size and -compile."""
    if (any(r < 0 or r >= opt.world_size for r in opt.gpu_ranks)
            or len(set(opt.gpu_ranks)) < len(opt.gpu_ranks)):
        raise OptionError(f"-gpu_ranks must be distinct ranks below -world_size {opt.world_size}, "
                          f"got {' '.join(map(str, opt.gpu_ranks))}")
    if opt.gpu_ranks and opt.gpu >= 0:
        raise OptionError("give -gpu (one GPU) or -gpu_ranks (with -world_size), not both")
    if opt.world_size > 1 and opt.gpu >= 0:
        raise OptionError(f"-gpu {opt.gpu} names one GPU; for {opt.world_size} processes on GPUs "
                          f"give -gpu_ranks {' '.join(map(str, range(opt.world_size)))}, "
                          "or use torchrun")
    _check_gpu(opt.gpu)
    if opt.gpu_ranks:
        import torch  # onmt/opts/ imports no torch (start-up time)
        if not torch.cuda.is_available():
            raise OptionError("-gpu_ranks given but CUDA is not available")
    if opt.compile:
        check_compile("cuda" if opt.gpu >= 0 or opt.gpu_ranks else "cpu")


def validate_train_run(opt):
    """The checks of a training run's options (update.resolve_train_run: the checkpoint's model on
    -train_from): the model group's, and a -copy_loss_by_seqlength that the model cannot honour
    (UserError: the checkpoint's family may be the cause)."""
    validate_model_opts(opt)
    if opt.copy_loss_by_seqlength and not opt.copy_attn:
        raise UserError("-copy_loss_by_seqlength needs a copy model (-copy_attn or -reinforced)")


def validate_translate_opts(opt):
    if opt.beam_size < 1:
        raise OptionError(f"-beam_size must be >= 1, got {opt.beam_size}")
    _check_numbers(opt, positive=("max_length", "beam_sync_every"),
                   non_negative=("min_length", "alpha", "beta", "block_ngram_repeat"))
    if opt.profile < 0:
        raise OptionError(f"-profile must be >= 0, got {opt.profile}")
    if opt.stepwise_penalty and opt.coverage_penalty == "none":
        raise OptionError("-stepwise_penalty needs -coverage_penalty wu or summary")
    if given(opt, "beta") and opt.coverage_penalty == "none":
        raise OptionError("-beta is the coverage penalty's parameter: "
                          "give -coverage_penalty wu or summary")
    if given(opt, "min_length") and given(opt, "max_length") and opt.min_length > opt.max_length:
        raise OptionError(f"-min_length {opt.min_length} is above -max_length {opt.max_length}")
    check_search(opt)
    if opt.batch_size <= 0:
        raise OptionError(f"-batch_size must be positive, got {opt.batch_size}")
    for name in ("src_seq_length_trunc", "tgt_seq_length_trunc"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")
    if opt.report_rouge and not opt.tgt:
        raise OptionError("-report_rouge needs -tgt (the reference summaries)")
    if opt.keep_unk and given(opt, "replace_unk"):
        raise OptionError("-keep_unk and -replace_unk say opposite things: give one")
    if opt.attn_plot_n < 0:
        raise OptionError(f"-attn_plot_n must be >= 0, got {opt.attn_plot_n}")
    check_decoding_device(opt)


def check_decoding_device(opt):
    """-gpu, -precision and -compile of a command that decodes (translate.py, onmt_tune_decoding):
    the one place they are checked (load_session trusts them; the API checks its own arguments)."""
    _check_gpu(opt.gpu)
    check_precision(opt.precision, "cuda" if opt.gpu >= 0 else "cpu")
    if opt.compile:
        check_compile("cuda" if opt.gpu >= 0 else "cpu")


def validate_translate_run(opt):
    """The checks of translate.py's options resolved for a checkpoint
    (update.resolve_translate_run): a -min_length above the checkpoint's prediction length limit
    (UserError: the checkpoint's rule)."""
    if opt.min_length > opt.max_length:
        raise UserError(f"-min_length {opt.min_length} is above the maximum prediction length "
                        f"{opt.max_length} (the checkpoint's rule: give -max_length)")


def check_precision(precision, device_type):
    """-precision on a device of `device_type`: one OptionError saying why where it would not run
    fast."""
    from onmt.hardware import precision_problem  # onmt/opts/ imports no torch (start-up time)
    problem = precision_problem(precision, device_type)
    if problem:
        raise OptionError(f"-precision {precision}: {problem}")


def check_compile(device_type):
    """-compile on a device of `device_type`: one OptionError saying why where torch.compile cannot
    build."""
    from onmt.hardware import compile_problem  # onmt/opts/ imports no torch (start-up time)
    problem = compile_problem(device_type)
    if problem:
        raise OptionError(f"-compile: {problem}")


def validate_tune_decoding_opts(opt):
    """The grid's checks; each setting is checked as translate.py's when the tuner builds it."""
    _check_gpu(opt.gpu)      # each setting's translate.py options do not carry -gpu
    check_precision(opt.precision, "cuda" if opt.gpu >= 0 else "cpu")
    if opt.compile:
        check_compile("cuda" if opt.gpu >= 0 else "cpu")
    if opt.length_penalty != "wu" and opt.alpha != [0.0] and given(opt, "alpha"):
        raise OptionError("-alpha is wu's parameter: give -length_penalty wu, or leave -alpha out "
                          f"with -length_penalty {opt.length_penalty}")
    if opt.widen and opt.max_alpha < max(opt.alpha):
        raise OptionError(f"-max_alpha {opt.max_alpha} is below the grid's alpha {max(opt.alpha)}")
    if opt.match_target < 0:
        raise OptionError(f"-match_target must be >= 0 words, got {opt.match_target}")
    if not 0 <= opt.max_min_length <= opt.max_length:
        raise OptionError(f"-max_min_length {opt.max_min_length} must lie in 0 .. -max_length "
                          f"{opt.max_length} (0: -max_length)")
    if opt.widen and max(opt.min_length) > (opt.max_min_length or opt.max_length):
        raise OptionError(f"-max_min_length {opt.max_min_length} is below the grid's minimum "
                          f"length {max(opt.min_length)}")
    check_decoding_device(opt)
