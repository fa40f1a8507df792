"""The update step: between parsing and validation, every entry point resolves what options imply
and fills in the options a namespace lacks. Only here is `opt` changed; `validate_*` only checks.

    opt = parse_with_given(translate_parser(), argv)
    update_translate_opts(opt)      # -avoid_trigram_repetition -> -block_ngram_repeat 3, ...
    validate_translate_opts(opt)    # one-line OptionError, opt untouched

Each `update_*` sets every option of its group that `opt` lacks to the parser's default (a namespace
made by hand, or one holding the model options of a checkpoint written before an option existed),
so that later code reads `opt.name` directly. Every `update_*` may run again on its own result.
"""
import copy
import functools

from onmt.errors import OptionError, UserError
from onmt.opts.data import prepare_opts, preprocess_opts
from onmt.opts.families import FAMILIES, RESUME_ADDS_PARAMETERS, family_name
from onmt.opts.model import ADDED_MODEL_OPTIONS, model_opts
from onmt.opts.parse import given, make_parser
from onmt.opts.search_rules import update_sampling
from onmt.opts.train import train_opts
from onmt.opts.translate import (
    evaluate_opts,
    explore_opts,
    plot_attention_opts,
    translate_opts,
    tune_decoding_opts,
)


@functools.lru_cache(maxsize=None)
def _defaults(declare):
    """{dest: default} of the options `declare` (an *_opts function) adds to a parser, as parsing an
    empty command line sets them (the first option of a dest gives its default); required options,
    which have none, are left out."""
    parser = make_parser("")
    declare(parser)
    out, seen = {}, set()
    for action in parser._actions:
        if action.dest == "help" or action.dest in seen:
            continue
        seen.add(action.dest)
        if not action.required:
            out[action.dest] = action.default
    return out


@functools.lru_cache(maxsize=None)
def option_names(declare):
    """The dests of the options `declare` adds (required ones included), in declaration order."""
    parser = make_parser("")
    declare(parser)
    return tuple(dict.fromkeys(a.dest for a in parser._actions if a.dest != "help"))


def fill_defaults(opt, declare):
    """Set each option of `declare` that `opt` lacks to its default (required options aside)."""
    have = vars(opt)
    for name, default in _defaults(declare).items():
        if name not in have:
            setattr(opt, name, copy.deepcopy(default))


# Options that set the same thing: a family's recipe leaves them all alone when one of them is
# given.
SAME_SETTING = {"layers": ("layers", "enc_layers", "dec_layers")}


def _apply_recipe(opt, recipe):
    for name, value in recipe.items():
        if not any(given(opt, n) for n in SAME_SETTING.get(name, (name,))):
            setattr(opt, name, value)


def update_model_opts(opt):
    """The model group: defaults for what `opt` lacks; the family (-model_family, or its alias
    -reinforced or -copy_attn: families.family_name) and what it implies (families.FAMILIES:
    -reinforced implies -share_embeddings and -copy_attn), then its recipe where not given
    (-reinforced: -brnn, one layer unless -layers, -enc_layers or -dec_layers is given, the paper's
    sizes, dropout and scheduled sampling); -layers N sets -enc_layers and -dec_layers. An alias
    contradicting -model_family is left for validation to refuse. (Not for a checkpoint's options,
    resolved when it was trained: see `update_saved_model_opts`.)"""
    fill_defaults(opt, model_opts)
    opt.model_family = family_name(vars(opt))
    family = FAMILIES[opt.model_family]
    for name, value in family.implies.items():
        setattr(opt, name, value)
    _apply_recipe(opt, family.recipe)
    if opt.layers > 0:
        opt.enc_layers = opt.dec_layers = opt.layers


def lacking_model_options(saved):
    """The model options a checkpoint's saved options (a dict) lack, apart from those added after
    checkpoints existed (ADDED_MODEL_OPTIONS): without them the checkpoint is damaged."""
    return [n for n in option_names(model_opts) if n not in saved and n not in ADDED_MODEL_OPTIONS]


def update_saved_model_opts(opt):
    """A checkpoint's model options: resolved when it was trained, they only lack the options added
    since (ADDED_MODEL_OPTIONS, whose defaults give the model it was trained with); one written
    before -model_family gets the family of its -reinforced and -copy_attn."""
    fill_defaults(opt, model_opts)
    opt.model_family = family_name(vars(opt))


def update_train_opts(opt):
    """train.py's own options (the model group has `update_model_opts`, run by `resolve_train_run`):
    defaults for what `opt` lacks; the family's training recipe (-reinforced: the paper's optimizer
    and batch) where not given (on -train_from the checkpoint's own options replace these);
    -early_stopping_criteria defaults to ppl, to rougeL for the mixed objective or RL
    (-rl_gamma > 0, which raises the perplexity by design: its best checkpoint is its best greedy
    validation ROUGE-L, unless -no_valid_rouge), and rougeL among them turns -valid_rouge on."""
    fill_defaults(opt, train_opts)
    _apply_recipe(opt, FAMILIES[family_name(vars(opt))].train_recipe)
    if not opt.early_stopping_criteria:
        rl = (opt.rl_gamma or 0) > 0 and opt.valid_rouge is not False
        opt.early_stopping_criteria = ["rougeL"] if rl else ["ppl"]
    opt.early_stopping_criteria = list(dict.fromkeys(opt.early_stopping_criteria))
    if "rougeL" in opt.early_stopping_criteria and opt.valid_rouge is None:
        opt.valid_rouge = True


def update_translate_opts(opt):
    """Defaults for what `opt` lacks; what sampling implies (search_rules.update_sampling);
    -avoid_trigram_repetition is -block_ngram_repeat 3;
    -detokenize (readable output) is -replace_unk too unless -keep_unk."""
    fill_defaults(opt, translate_opts)
    update_sampling(opt)
    if opt.avoid_trigram_repetition:
        opt.block_ngram_repeat = 3
    if opt.detokenize and not opt.keep_unk:
        opt.replace_unk = True


def update_tune_decoding_opts(opt):
    """Defaults for what `opt` lacks; each grid's values once, in the order given."""
    fill_defaults(opt, tune_decoding_opts)
    opt.model = list(dict.fromkeys(opt.model))
    opt.alpha = list(dict.fromkeys(opt.alpha))
    opt.min_length = list(dict.fromkeys(opt.min_length))


def update_preprocess_opts(opt):
    fill_defaults(opt, preprocess_opts)


def update_prepare_opts(opt):
    """Defaults for what `opt` lacks; -splits once each, in the order given."""
    fill_defaults(opt, prepare_opts)
    opt.splits = list(dict.fromkeys(opt.splits))


def update_evaluate_opts(opt):
    """Defaults for what `opt` lacks; -sentence_split without surrounding spaces."""
    fill_defaults(opt, evaluate_opts)
    opt.sentence_split = opt.sentence_split.strip()


def update_explore_opts(opt):
    fill_defaults(opt, explore_opts)


def update_plot_attention_opts(opt):
    fill_defaults(opt, plot_attention_opts)


# --------------------------------------------------------------------------- a run's options
# Training options a resume takes from the checkpoint unless given again (exact resume by default).
OPTIMIZER_OPTIONS = ("optim", "learning_rate", "adagrad_accumulator_init", "adam_beta1",
                     "adam_beta2", "max_grad_norm", "decay_method", "learning_rate_decay",
                     "start_decay_steps", "decay_steps", "warmup_steps")
OBJECTIVE_OPTIONS = ("rl_gamma", "rl_reward", "max_gen_length", "normalization",
                     "copy_loss_by_seqlength")
# what makes a resumed run the run it resumes (its batches, their order and size, its draws): the
# checkpoint's unless given again
BATCHING_OPTIONS = ("batch_size", "batch_type", "accum_count", "pool_factor", "valid_batch_size",
                    "seed", "rl_normalization", "length_buckets")
# the weights' moving average (-average_decay): the checkpoint's unless given again
AVERAGE_OPTIONS = ("average_decay", "average_every")
# the run's own schedule, stopping and reporting: the checkpoint's on a resume into its -save_model
# (the run goes on) unless given again; a new phase (another -save_model) has its own
RUN_OPTIONS = ("train_steps", "epochs", "valid_steps", "save_checkpoint_steps", "keep_checkpoint",
               "report_every", "early_stopping", "early_stopping_criteria", "valid_rouge",
               "sample_every")
# options that say the same: one of them given, none is carried
RUN_SAME = {"train_steps": ("train_steps", "epochs"), "epochs": ("train_steps", "epochs"),
            "valid_rouge": ("valid_rouge", "early_stopping_criteria")}
# what the objective implies: derived again, not carried, when -rl_gamma changes
OBJECTIVE_DERIVED = ("early_stopping_criteria", "valid_rouge")
# this process's choices, never carried: the log names those the checkpoint's run had on
PROCESS_OPTIONS = ("amp", "compile", "cuda_graphs", "tensorboard", "train_time_limit")


def resolve_train_run(opt, saved=None, data=None, target_limit=100):
    """The options of one training run: a copy of train.py's updated and validated `opt` (never
    changed) with the model group updated (`update_model_opts`), -data the dataset `data` (built for
    an upstream config; None: -data), on -train_from the checkpoint's model and training choices
    (`saved`: its options; `_resume`), -max_gen_length the data's target limit `target_limit` unless
    set, and -valid_rouge on exactly with -rl_gamma unless given. Returns (options, lines for the
    log); `validate_train_run` checks them."""
    run = copy.deepcopy(opt)
    update_model_opts(run)
    if data is not None:
        run.data = data
    notes = _resume(run, saved) if saved is not None else []
    if not run.max_gen_length:
        run.max_gen_length = target_limit
    if run.valid_rouge is None:
        run.valid_rouge = run.rl_gamma is not None
    return run, notes


def _resume(run, saved):
    """-train_from: the checkpoint's model (its family and shape, always) and its training choices,
    its optimizer's options included, unless given here (-reset_optim resets the optimizer's state,
    never its options: a fresh SGD at lr 1.0 would learn nothing from an Adam checkpoint at 1e-4). A
    model option the checkpoint lacks must be given here (a default could silently change the
    model); one contradicting it is refused, but for the family's `resume_may_change`. UserError
    naming the checkpoint otherwise."""
    # a cycle: onmt.opts, validate's package, imports update
    from onmt.opts.validate import check_saved_model_types
    try:
        check_saved_model_types(saved)
    except OptionError as e:
        raise UserError(f"checkpoint {run.train_from} is damaged or from another program: its "
                        f"options are invalid: {e}") from None
    # one written before -model_family: its aliases'
    saved = {**saved, "model_family": family_name(saved)}
    names = option_names(model_opts)
    lacking = [n for n in names
               if n not in saved and not given(run, n) and n not in ADDED_MODEL_OPTIONS]
    if lacking:
        raise UserError(f"checkpoint {run.train_from} is damaged or from another program: its "
                        f"options lack {', '.join(lacking)} (give "
                        f"{' '.join('-' + n for n in lacking[:3])} to say what they were)")
    may_change = FAMILIES[saved["model_family"]].resume_may_change
    from_here = set(may_change) | set(OBJECTIVE_OPTIONS) | set(OPTIMIZER_OPTIONS)
    contradictions = [f"-{n} {getattr(run, n)} (the checkpoint's: {saved[n]})" for n in names
                      if n not in from_here and n in saved and given(run, n)
                      and getattr(run, n) != saved[n]]
    if contradictions:
        raise UserError(f"-train_from {run.train_from} keeps the model it holds (its family, shape "
                        f"and attention); {', '.join(contradictions[:3])} given here contradict "
                        "it: drop them, or train a new model (a resume may change "
                        f"{', '.join('-' + n for n in may_change)})")
    from_here |= set(BATCHING_OPTIONS) | set(AVERAGE_OPTIONS)
    taken, changed = [], []
    for name in names + OBJECTIVE_OPTIONS + OPTIMIZER_OPTIONS + BATCHING_OPTIONS + AVERAGE_OPTIONS:
        if name not in saved and name in ADDED_MODEL_OPTIONS and name not in from_here:
            setattr(run, name, ADDED_MODEL_OPTIONS[name])   # the checkpoint predates the option
        elif name in saved and not (name in from_here and given(run, name)):
            if (name in BATCHING_OPTIONS + OPTIMIZER_OPTIONS + OBJECTIVE_OPTIONS + AVERAGE_OPTIONS
                    and getattr(run, name) != saved[name]):
                taken.append(f"-{name} {saved[name]}")
            setattr(run, name, saved[name])
        elif name in saved and given(run, name) and getattr(run, name) != saved[name]:
            changed.append(f"-{name} {getattr(run, name)} (the checkpoint's: {saved[name]})")
    notes = []
    if taken:
        notes.append(f"-train_from {run.train_from}: from the checkpoint (not given here): "
                     f"{', '.join(taken)}")
    if changed:
        notes.append(f"-train_from {run.train_from}: changed here: {', '.join(changed)}")
    notes += _run_options(run, saved)
    if run.copy_loss_by_seqlength and run.rl_gamma and not given(run, "copy_loss_by_seqlength"):
        # it would weigh the ML term by 1/length: not the -rl_gamma mix
        run.copy_loss_by_seqlength = False
        notes.append(f"-copy_loss_by_seqlength of {run.train_from} is not carried into the mixed "
                     "objective (it would divide the ML term by each summary's length and shift "
                     "the mix from -rl_gamma)")
    return notes


def _run_options(run, saved):
    """-train_from into the checkpoint's own -save_model (the run goes on): its RUN_OPTIONS unless
    given here (or one saying the same, RUN_SAME; the early-stopping criteria and -valid_rouge
    derived again for a new -rl_gamma); into another (a new phase): none, the log naming those of
    the checkpoint's that differ. Either way the log names the PROCESS_OPTIONS the checkpoint's run
    had that this one has not. Returns the lines for the log."""
    same_run = saved.get("save_model") == run.save_model
    if run.valid_rouge is None:   # resolved as resolve_train_run does, to compare
        run.valid_rouge = run.rl_gamma is not None
    new_objective = given(run, "rl_gamma") and run.rl_gamma != saved.get("rl_gamma")
    taken, kept = [], []
    for name in RUN_OPTIONS:
        if name not in saved or getattr(run, name) == saved[name]:
            continue
        if any(given(run, n) for n in RUN_SAME.get(name, (name,))):
            continue   # the command line's: "changed here" when given itself
        if same_run and not (new_objective and name in OBJECTIVE_DERIVED):
            taken.append(f"-{name} {_shown(saved[name])}")
            setattr(run, name, copy.deepcopy(saved[name]))
        elif not same_run:
            kept.append(f"-{name} {_shown(getattr(run, name))} (the checkpoint's: "
                        f"{_shown(saved[name])})")
    changed = [f"-{n} {_shown(getattr(run, n))} (the checkpoint's: {_shown(saved[n])})"
               for n in RUN_OPTIONS if given(run, n) and n in saved and getattr(run, n) != saved[n]]
    dropped = [f"-{n} {_shown(saved[n])}" for n in PROCESS_OPTIONS
               if saved.get(n) and getattr(run, n) != saved[n]]
    notes = []
    if taken:
        notes.append(f"-train_from {run.train_from}: the run's own options, from the checkpoint "
                     f"(not given here): {', '.join(taken)}")
    if changed:
        notes.append(f"-train_from {run.train_from}: the run's options changed here: "
                     f"{', '.join(changed)}")
    if kept:
        notes.append(f"-train_from {run.train_from} into another -save_model ({run.save_model}, "
                     f"the checkpoint's: {saved.get('save_model')}): a new phase, its own "
                     f"schedule and stopping: {', '.join(kept)}")
    if dropped:
        notes.append(f"-train_from {run.train_from}: not carried (this process's choices, give "
                     f"them again): {', '.join(dropped)}")
    return notes


def _shown(value):
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def resume_adds_parameters(opt):
    """Whether this -train_from run turns on an option that adds parameters to the checkpoint's
    model (families.RESUME_ADDS_PARAMETERS): they start as a fresh model's."""
    return bool(opt.train_from) and any(given(opt, n) for n in RESUME_ADDS_PARAMETERS)


def distributed_choices(opt):
    """What utils/distributed.py needs to know of how -world_size and -gpu came: `world_size_given`
    (under torchrun it must then be WORLD_SIZE) and `cpu_given` (-gpu -1 given: under torchrun, the
    CPU)."""
    return {"world_size_given": given(opt, "world_size"),
            "cpu_given": given(opt, "gpu") and opt.gpu < 0}


def resolve_translate_run(opt, model_opt, preprocess, target_limit):
    """translate.py's options for one checkpoint: a copy of the updated and validated `opt` (never
    changed) where each of these options not given takes the checkpoint's value:
    -src_seq_length_trunc (and, with -tgt, -tgt_seq_length_trunc) the truncation of its
    preprocessing record `preprocess` (None: an older checkpoint, no truncation), -max_length its
    longest training target (`target_limit`, 0: none recorded, the option's default),
    -block_ngram_repeat its family's test-time rule (`model_opt`: the checkpoint's model options);
    a beam search without -length_penalty given notes that none is this toolkit's default (not
    upstream's nor Hugging Face's). Returns (options, one line for the log per rule);
    `validate_translate_run` checks them."""
    run, notes, record = copy.deepcopy(opt), [], preprocess or {}
    run.src_seq_length_trunc = _trunc(opt, record, "src", notes)
    if opt.tgt:
        run.tgt_seq_length_trunc = _trunc(opt, record, "tgt", notes)
    if given(opt, "max_length"):
        notes.append(f"predictions stop at {opt.max_length} tokens (-max_length)")
    else:
        run.max_length = target_limit or opt.max_length
        notes.append(f"predictions stop at {run.max_length} tokens: " +
                     ("the training targets' length limit (-max_length to change)" if target_limit
                      else "the -max_length default (the training data recorded no target limit)"))
    if opt.beam_size > 1 and not given(opt, "length_penalty"):
        # the flag set of a run carried over from OpenNMT-py or Hugging Face, whose defaults differ
        notes.append("length penalty: none, this toolkit's default: a hypothesis scores its summed "
                     "log-probabilities (OpenNMT-py's default -length_penalty avg and Hugging "
                     "Face's length_penalty=1.0 divide them by the length: -length_penalty avg)")
    if given(opt, "block_ngram_repeat") or given(opt, "avoid_trigram_repetition"):
        rule = f"no repeated {opt.block_ngram_repeat}-gram" if opt.block_ngram_repeat else "off"
        notes.append(f"n-gram blocking: {rule} (-block_ngram_repeat given)")
    else:
        family = FAMILIES[model_opt.model_family]
        run.block_ngram_repeat = family.block_ngram_repeat
        rule = (f"no repeated {run.block_ngram_repeat}-gram, the {family.name} model's "
                "test-time rule"
                if run.block_ngram_repeat else f"off, the {family.name} model's default")
        notes.append(f"n-gram blocking: {rule} (-block_ngram_repeat N to change)")
    return run, notes


def _trunc(opt, record, side, notes):
    name, flag = f"{side}_seq_length_trunc", f"-{side}"
    if given(opt, name):
        n = getattr(opt, name)
        notes.append(f"{flag} truncated to {n} tokens (-{name})" if n
                     else f"{flag} not truncated (-{name} 0)")
        return n
    n = int(record.get(name, 0) or 0)
    if n:
        notes.append(f"{flag} truncated to {n} tokens, as preprocessing truncated the training "
                     f"data (-{name} N to change, 0 for none)")
    return n
