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

from onmt.opts.data import prepare_opts, preprocess_opts
from onmt.opts.model import ADDED_MODEL_OPTIONS, model_opts
from onmt.opts.parse import given, make_parser
from onmt.opts.train import train_opts
from onmt.opts.translate import evaluate_opts, plot_attention_opts, translate_opts


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


# Paulus et al.'s recipe (section 5 and appendix: CNN/DM, the ML phase): what `-reinforced` alone
# trains with, each where the user gave nothing (command line or -config). Model options first, then
# train.py's own. Their learning rate 1e-4 for the mixed phase is config/*_rl.yaml's.
REINFORCED_MODEL_DEFAULTS = {"word_vec_size": 100, "rnn_size": 400, "dropout": 0.0, "scheduled_sampling": 0.25,
                             "intra_attn_scale": "sqrt"}
REINFORCED_TRAIN_DEFAULTS = {"optim": "adam", "learning_rate": 0.001, "batch_size": 50}


def _apply_recipe(opt, recipe):
    for name, value in recipe.items():
        if not given(opt, name):
            setattr(opt, name, value)


def update_model_opts(opt):
    """The model group: defaults for what `opt` lacks; -reinforced implies -brnn (unless -brnn or
    -encoder_type is given), -share_embeddings and -copy_attn, one layer unless -layers,
    -enc_layers or -dec_layers is given, and the paper's sizes, dropout and scheduled sampling
    (REINFORCED_MODEL_DEFAULTS) where not given; -layers N sets -enc_layers and -dec_layers.
    (Not for a checkpoint's options, resolved when it was trained: see `update_saved_model_opts`.)"""
    fill_defaults(opt, model_opts)
    if opt.reinforced:
        opt.share_embeddings = opt.copy_attn = True
        if not given(opt, "brnn"):
            opt.brnn = True
        if not any(given(opt, n) for n in ("layers", "enc_layers", "dec_layers")):
            opt.layers = 1
        _apply_recipe(opt, REINFORCED_MODEL_DEFAULTS)
    if opt.layers > 0:
        opt.enc_layers = opt.dec_layers = opt.layers


def lacking_model_options(saved):
    """The model options a checkpoint's saved options (a dict) lack, apart from those added after
    checkpoints existed (ADDED_MODEL_OPTIONS): without them the checkpoint is damaged."""
    return [n for n in option_names(model_opts) if n not in saved and n not in ADDED_MODEL_OPTIONS]


def update_saved_model_opts(opt):
    """A checkpoint's model options: resolved when it was trained, they only lack the options added
    since (ADDED_MODEL_OPTIONS, whose defaults give the model it was trained with)."""
    fill_defaults(opt, model_opts)


def update_train_opts(opt):
    """train.py's own options (the model group has `update_model_opts`): defaults for what `opt` lacks;
    -reinforced trains with the paper's optimizer and batch (REINFORCED_TRAIN_DEFAULTS) where not given
    (on -train_from the checkpoint's own options replace these, bin/train.py); -early_stopping_criteria
    defaults to ppl, and rougeL among them turns -valid_rouge on."""
    fill_defaults(opt, train_opts)
    if vars(opt).get("reinforced"):
        _apply_recipe(opt, REINFORCED_TRAIN_DEFAULTS)
    if not opt.early_stopping_criteria:
        opt.early_stopping_criteria = ["ppl"]
    opt.early_stopping_criteria = list(dict.fromkeys(opt.early_stopping_criteria))
    if "rougeL" in opt.early_stopping_criteria and opt.valid_rouge is None:
        opt.valid_rouge = True


def update_translate_opts(opt):
    """Defaults for what `opt` lacks; -avoid_trigram_repetition is -block_ngram_repeat 3."""
    fill_defaults(opt, translate_opts)
    if opt.avoid_trigram_repetition:
        opt.block_ngram_repeat = 3


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


def update_plot_attention_opts(opt):
    fill_defaults(opt, plot_attention_opts)
