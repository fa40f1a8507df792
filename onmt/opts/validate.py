"""Validation: the cross-option checks of each group, run after the update step (update.py). A check
never changes `opt`; an impossible option is one OptionError whose one line names it."""
from onmt.errors import OptionError
from onmt.opts.parse import given


def _check_numbers(opt, positive=(), non_negative=(), unit=(), unit_open=()):
    """One-line OptionErrors for impossible numbers: each name of `positive` must be > 0, of
    `non_negative` >= 0, of `unit` in [0, 1], of `unit_open` in [0, 1); NaN and infinity never pass."""
    import math
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
        import torch
        if not torch.cuda.is_available():
            raise OptionError(f"-gpu {gpu} given but CUDA is not available")


def validate_prepare_opts(opt):
    import os
    if opt.report_every <= 0:
        raise OptionError(f"-report_every must be positive, got {opt.report_every}")
    if os.path.realpath(opt.input) == os.path.realpath(opt.output):
        raise OptionError("-input and -output must be different folders")


def validate_preprocess_opts(opt):
    from onmt.constants import N_SPECIALS
    for name in ("src_vocab_size", "tgt_vocab_size"):
        if getattr(opt, name) <= N_SPECIALS:
            raise OptionError(f"-{name} {getattr(opt, name)} must be larger than the {N_SPECIALS} special tokens")
    if opt.shard_size <= 0:
        raise OptionError(f"-shard_size must be positive, got {opt.shard_size}")
    if opt.num_threads <= 0:
        raise OptionError(f"-num_threads must be positive, got {opt.num_threads}")
    if (opt.valid_src is None) != (opt.valid_tgt is None):
        raise OptionError("-valid_src and -valid_tgt go together")
    if opt.share_vocab and opt.tgt_vocab:
        raise OptionError("-share_vocab takes one vocabulary file: give -src_vocab, not -tgt_vocab")
    if opt.share_vocab and opt.tgt_vocab_size > opt.src_vocab_size:
        raise OptionError("-share_vocab needs -tgt_vocab_size <= -src_vocab_size "
                          "(the target vocabulary is a prefix of the source vocabulary)")


# What the reinforced model's family cannot honour (checked when given explicitly), and the options
# that only it reads.
_REINFORCED_REFUSES = (("rnn_type", lambda v: v != "LSTM", "the paper's model is an LSTM"),
                       ("global_attention", lambda v: True, "it uses intra-temporal attention"),
                       ("input_feed", lambda v: not v, "its decoder always reads its previous output"),
                       ("coverage_attn", lambda v: bool(v), "it has intra-temporal attention instead"),
                       ("lambda_coverage", lambda v: True, "it has no coverage"),
                       ("bridge", lambda v: bool(v), "its decoder starts from the encoder's final states"),
                       ("copy_attn_type", lambda v: True, "it copies with its intra-temporal attention"))
_REINFORCED_ONLY = ("scheduled_sampling", "scheduled_sampling_mode", "no_temporal_attn",
                    "no_intra_decoder_attn", "no_tied_output", "intra_attn_scale")


def check_model_numbers(opt):
    """The model group's impossible numbers (train.py checks them at start, before reading any data)."""
    _check_numbers(opt, positive=("rnn_size", "word_vec_size", "enc_layers", "dec_layers"),
                   non_negative=("param_init", "lambda_coverage"), unit_open=("dropout",))
    if opt.layers == 0 or opt.layers < -1:
        raise OptionError(f"-layers must be positive (or -1: use -enc_layers and -dec_layers), got {opt.layers}")


def validate_model_opts(opt):
    """Cross-option checks of the model group (after `update_model_opts`, or on a checkpoint's options
    after `update_saved_model_opts`)."""
    check_model_numbers(opt)
    if opt.reinforced:
        refused = [f"-{name} {getattr(opt, name)}" for name, bad, _ in _REINFORCED_REFUSES
                   if given(opt, name) and bad(getattr(opt, name))]
        if refused:
            why = "; ".join(f"-{name}: {reason}" for name, bad, reason in _REINFORCED_REFUSES
                            if given(opt, name) and bad(getattr(opt, name)))
            raise OptionError(f"-reinforced (Paulus et al.'s model) cannot honour {', '.join(refused)} ({why})")
        if given(opt, "brnn") and not opt.brnn:
            raise OptionError("-reinforced (Paulus et al.'s model) cannot honour -encoder_type rnn "
                              "(its encoder is bidirectional)")
    else:
        only = [f"-{name}" for name in _REINFORCED_ONLY if given(opt, name)]
        if only:
            raise OptionError(f"{', '.join(only)} only appl{'ies' if len(only) == 1 else 'y'} to -reinforced")
    if opt.reinforced and opt.enc_layers != opt.dec_layers:
        raise OptionError(f"-reinforced needs as many encoder as decoder layers (the encoder's final states "
                          f"start the decoder), got -enc_layers {opt.enc_layers} -dec_layers {opt.dec_layers}")
    if opt.share_decoder_embeddings:
        if opt.reinforced and opt.no_tied_output:
            raise OptionError("-share_decoder_embeddings contradicts -no_tied_output")
        if not opt.reinforced and opt.word_vec_size != opt.rnn_size:
            raise OptionError(f"-share_decoder_embeddings needs -word_vec_size equal to -rnn_size (the generator's "
                              f"matrix is the decoder embedding), got {opt.word_vec_size} and {opt.rnn_size}")
    if opt.reuse_copy_attn and not opt.copy_attn:
        raise OptionError("-reuse_copy_attn needs -copy_attn")
    if opt.copy_attn_type is not None and not opt.reinforced:
        if not opt.copy_attn:
            raise OptionError("-copy_attn_type needs -copy_attn")
        if opt.copy_attn_type != opt.global_attention:
            raise OptionError(f"-copy_attn_type {opt.copy_attn_type}: the copy distribution is the decoder's "
                              f"attention here, -global_attention {opt.global_attention}")
    if given(opt, "lambda_coverage") and not opt.coverage_attn:
        raise OptionError("-lambda_coverage needs -coverage_attn")
    if opt.brnn and opt.rnn_size % 2:
        raise OptionError(f"-brnn needs an even -rnn_size, got {opt.rnn_size}")
    if opt.coverage_attn and not opt.copy_attn and opt.global_attention == "none":
        raise OptionError("-coverage_attn needs attention (-global_attention is none)")
    if opt.copy_attn and opt.global_attention == "none":
        raise OptionError("-copy_attn needs attention (-global_attention is none)")
    if not 0.0 <= opt.scheduled_sampling <= 1.0:
        raise OptionError(f"-scheduled_sampling must be in [0, 1], got {opt.scheduled_sampling}")


def check_saved_model_types(saved):
    """OptionError naming the option unless every model option of a checkpoint's saved options (a dict)
    has a value its command-line option could have given: the right type (an int for -rnn_size, a bool
    for a flag) and one of its choices (a damaged or hand-edited checkpoint would otherwise crash later,
    far from the cause)."""
    import argparse

    from onmt.opts.model import model_opts
    from onmt.opts.parse import make_parser
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
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            ok, kind = isinstance(value, bool), "true or false"
        elif action.type is int:
            ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif action.type is float:
            ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        else:
            ok, kind = isinstance(value, str), "a string"
        if ok and action.choices is not None and value not in action.choices:
            ok, kind = False, "one of " + ", ".join(map(str, action.choices))
        if not ok:
            raise OptionError(f"-{name} {value!r} is not {kind}")


# Paulus et al.'s settings for CNN/DM (the ML phase; rl_gamma is the mixed phase's), as options.
PAPER_SETTINGS = {"word_vec_size": 100, "rnn_size": 400, "enc_layers": 1, "dropout": 0.0, "optim": "adam",
                  "learning_rate": 0.001, "batch_size": 50, "scheduled_sampling": 0.25, "rl_gamma": 0.9984}


def paper_differences(opt):
    """'-name value (paper: p)' for each PAPER_SETTINGS entry this -reinforced run sets otherwise
    (the RL phase's own learning rate, 1e-4 in the paper, is not a difference)."""
    if not opt.reinforced:
        return []
    out = []
    for name, paper in PAPER_SETTINGS.items():
        value = getattr(opt, name)
        if name == "learning_rate" and opt.rl_gamma:
            continue
        if name == "rl_gamma" and value is None:
            continue
        if value != paper:
            out.append(f"-{name} {value} (paper: {paper})")
    return out


def validate_train_opts(opt):
    _check_numbers(opt, positive=("batch_size", "valid_batch_size", "pool_factor", "report_every", "learning_rate",
                                  "accum_count", "world_size"),
                   non_negative=("train_steps", "epochs", "max_grad_norm", "adagrad_accumulator_init"),
                   unit_open=("adam_beta1", "adam_beta2"))
    check_model_numbers(opt)
    if opt.profile < 0:
        raise OptionError(f"-profile must be >= 0, got {opt.profile}")
    if opt.train_steps <= 0 and opt.epochs <= 0:
        raise OptionError("one of -train_steps or -epochs must be positive")
    if opt.rl_gamma is not None and not 0.0 <= opt.rl_gamma <= 1.0:
        raise OptionError(f"-rl_gamma must be in [0, 1], got {opt.rl_gamma}")
    if opt.early_stopping < 0:
        raise OptionError(f"-early_stopping must be >= 0, got {opt.early_stopping}")
    if "rougeL" in (opt.early_stopping_criteria or ()) and opt.valid_rouge is False:
        raise OptionError("-early_stopping_criteria rougeL needs the greedy validation ROUGE: drop -no_valid_rouge")
    if opt.train_time_limit < 0 or opt.train_time_limit != opt.train_time_limit:
        raise OptionError(f"-train_time_limit must be >= 0, got {opt.train_time_limit}")
    if opt.copy_loss_by_seqlength and opt.rl_gamma and given(opt, "copy_loss_by_seqlength"):
        raise OptionError("-copy_loss_by_seqlength with -rl_gamma would divide the ML term by each summary's "
                          "length and so shift the mix away from -rl_gamma; use -rl_normalization tokens for "
                          "per-token terms")
    if opt.max_gen_length < 0:
        raise OptionError(f"-max_gen_length must be >= 0, got {opt.max_gen_length}")
    if opt.sample_every < 0:
        raise OptionError(f"-sample_every must be >= 0, got {opt.sample_every}")
    _check_numbers(opt, positive=("learning_rate_decay", "decay_steps", "warmup_steps"),
                   non_negative=("start_decay_steps",))
    if not opt.train_from:   # a resume may change one schedule option of the checkpoint's schedule
        exponential = [f"-{n}" for n in ("learning_rate_decay", "start_decay_steps", "decay_steps") if given(opt, n)]
        if exponential and opt.decay_method != "none":
            raise OptionError(f"{' '.join(exponential)}: exponential decay is -decay_method none's, "
                              f"not {opt.decay_method}'s")
        if given(opt, "warmup_steps") and opt.decay_method == "none":
            raise OptionError("-warmup_steps applies to -decay_method noam or rsqrt")
    if opt.reset_optim != "none" and not opt.train_from:
        raise OptionError(f"-reset_optim {opt.reset_optim} needs -train_from")
    if any(r < 0 or r >= opt.world_size for r in opt.gpu_ranks) or len(set(opt.gpu_ranks)) < len(opt.gpu_ranks):
        raise OptionError(f"-gpu_ranks must be distinct ranks below -world_size {opt.world_size}, "
                          f"got {' '.join(map(str, opt.gpu_ranks))}")
    if opt.gpu_ranks and opt.gpu >= 0:
        raise OptionError("give -gpu (one GPU) or -gpu_ranks (with -world_size), not both")
    if opt.world_size > 1 and opt.gpu >= 0:
        raise OptionError(f"-gpu {opt.gpu} names one GPU; for {opt.world_size} processes on GPUs give "
                          f"-gpu_ranks {' '.join(map(str, range(opt.world_size)))}, or use torchrun")
    _check_gpu(opt.gpu)
    if opt.gpu_ranks:
        import torch
        if not torch.cuda.is_available():
            raise OptionError("-gpu_ranks given but CUDA is not available")
    if opt.compile:
        from onmt.hardware import compile_problem
        problem = compile_problem("cuda" if opt.gpu >= 0 or opt.gpu_ranks else "cpu")
        if problem:
            raise OptionError(f"-compile: {problem}")


def validate_translate_opts(opt):
    if opt.beam_size < 1:
        raise OptionError(f"-beam_size must be >= 1, got {opt.beam_size}")
    _check_numbers(opt, positive=("max_length",), non_negative=("min_length", "alpha", "beta", "block_ngram_repeat"))
    if opt.profile < 0:
        raise OptionError(f"-profile must be >= 0, got {opt.profile}")
    if opt.stepwise_penalty and opt.coverage_penalty == "none":
        raise OptionError("-stepwise_penalty needs -coverage_penalty wu or summary")
    if given(opt, "beta") and opt.coverage_penalty == "none":
        raise OptionError("-beta is the coverage penalty's parameter: give -coverage_penalty wu or summary")
    if given(opt, "min_length") and given(opt, "max_length") and opt.min_length > opt.max_length:
        raise OptionError(f"-min_length {opt.min_length} is above -max_length {opt.max_length}")
    if not 1 <= opt.n_best <= opt.beam_size:
        raise OptionError(f"-n_best must be between 1 and -beam_size ({opt.beam_size}), got {opt.n_best}")
    if opt.batch_size <= 0:
        raise OptionError(f"-batch_size must be positive, got {opt.batch_size}")
    for name in ("src_seq_length_trunc", "tgt_seq_length_trunc"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")
    if opt.report_rouge and not opt.tgt:
        raise OptionError("-report_rouge needs -tgt (the reference summaries)")
    if opt.attn_plot_n < 0:
        raise OptionError(f"-attn_plot_n must be >= 0, got {opt.attn_plot_n}")
    _check_gpu(opt.gpu)
    check_precision(opt.precision, "cuda" if opt.gpu >= 0 else "cpu")


def check_precision(precision, device_type):
    """-precision on a device of `device_type`: one OptionError saying why where it would not run fast."""
    from onmt.hardware import precision_problem
    problem = precision_problem(precision, device_type)
    if problem:
        raise OptionError(f"-precision {precision}: {problem}")


MIN_BOOTSTRAP = 100   # fewer resamples cannot place the 2.5% and 97.5% percentiles (nor a p-value of 0.01)


def validate_evaluate_opts(opt):
    if len(opt.pred) > 2:
        raise OptionError(f"-pred takes one file, or two to compare, got {len(opt.pred)}")
    for name in ("bootstrap", "limit_bytes", "limit_words"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")
    if 0 < opt.bootstrap < MIN_BOOTSTRAP:
        raise OptionError(f"-bootstrap {opt.bootstrap}: a 95% interval or a p-value needs at least {MIN_BOOTSTRAP} "
                          "resamples (1,000 is usual; 0: none)")
    if opt.limit_bytes and opt.limit_words:
        raise OptionError("give -limit_bytes or -limit_words, not both")


def validate_plot_attention_opts(opt):
    if opt.attn_plot_n < 0:
        raise OptionError(f"-attn_plot_n must be >= 0, got {opt.attn_plot_n}")
