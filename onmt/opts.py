"""Every command-line option of the toolkit, one function per group.

Options are declared here and nowhere else; `validate_*` functions hold the cross-option checks.
Every option can also come from a YAML file given with ``-config``.
"""
import configargparse

from onmt.errors import OptionError

# Upstream OpenNMT-py options a user may bring: -> (this project's option, or None when there is no
# counterpart, and a few words on it). Used only to explain an unknown option.
UPSTREAM_OPTIONS = {
    "enc_hid_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "dec_hid_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "enc_rnn_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "dec_rnn_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "src_word_vec_size": ("-word_vec_size", "one size for both sides"),
    "tgt_word_vec_size": ("-word_vec_size", "one size for both sides"),
    "gpuid": ("-gpu", "the GPU id, -1 for the CPU"),
    "max_shard_size": ("-shard_size", "counted in examples"),
    "decoder_type": (None, "the decoder is always an RNN"),
    "model_type": (None, "text only"),
    "data_type": (None, "text only"),
    "transformer_ff": (None, "no Transformer here"),
    "heads": (None, "no Transformer here"),
    "position_encoding": (None, "no Transformer here"),
    "label_smoothing": (None, "not implemented"),
    "truncated_decoder": (None, "not implemented"),
    "copy_attn_force": (None, "not implemented"),
    "random_sampling_topk": (None, "decoding is greedy or beam search"),
    "random_sampling_temp": (None, "decoding is greedy or beam search"),
    "phrase_table": (None, "-replace_unk copies the attended source word"),
    "fp32": (None, "translation runs in float32"),
    "int8": (None, "translation runs in float32"),
}


class _ExactParser(configargparse.ArgumentParser):
    """configargparse's parser with exact option names. argparse matches a prefix of a single-dash
    option even with allow_abbrev=False (-src_vocab became -src_vocab_size) and reads -hidden_size as
    -h with the value 'idden_size'; here an option given on the command line must be spelt in full,
    and an unknown one stops with one line that says, for an upstream OpenNMT-py option, what it is
    here, else the closest names."""

    def parse_known_args(self, args=None, namespace=None, **kwargs):
        import sys
        self._check_names(sys.argv[1:] if args is None else list(args))
        return super().parse_known_args(args=args, namespace=namespace, **kwargs)

    def _check_names(self, argv):
        for token in argv:
            if token == "--":
                return
            if len(token) < 2 or token[0] != "-" or _is_number(token):
                continue
            name = token.split("=", 1)[0]
            if name not in self._option_string_actions:
                self.exit(2, f"{self.prog}: error: {unknown_option_message(name, self._option_string_actions)}\n")


def _is_number(token):
    try:
        float(token)
        return True
    except ValueError:
        return False


def unknown_option_message(name, known):
    """One line about an option `name` (e.g. "-hidden_size") that the parser with options `known` lacks."""
    import difflib
    bare = name.lstrip("-")
    if bare in UPSTREAM_OPTIONS:
        here, what = UPSTREAM_OPTIONS[bare]
        if here:
            return f"unknown option {name}: OpenNMT-py's -{bare} is {here} here ({what})"
        return f"unknown option {name}: OpenNMT-py's -{bare} has no counterpart here ({what})"
    close = difflib.get_close_matches(name, [k for k in known if not k.startswith("--")], n=3, cutoff=0.6)
    return f"unknown option {name}" + (f" (did you mean {' or '.join(close)}?)" if close else "")


def _parser(description):
    return _ExactParser(
        description=description,
        config_file_parser_class=configargparse.YAMLConfigFileParser,
        formatter_class=configargparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )


def parse_with_given(parser, argv=None):
    """Parse `argv` (sys.argv when None) -> opt, with `opt._given`: the dests of the options given on
    the command line or in a -config file, as opposed to defaults (see `given`)."""
    import argparse
    opt = parser.parse_args(argv)
    saved = [(a, a.default) for a in parser._actions]
    try:
        for a, _ in saved:
            a.default = argparse.SUPPRESS
        explicit, _ = parser.parse_known_args(argv)
    finally:
        for a, d in saved:
            a.default = d
    opt._given = frozenset(vars(explicit)) - {"config"}
    return opt


def given(opt, name):
    """True when option `name` was given by the user (command line or -config), not a default.
    (False for every option of a namespace not made by `parse_with_given`.)"""
    return name in getattr(opt, "_given", frozenset())


def saved_options(opt):
    """vars(opt) without the parsing bookkeeping (what a checkpoint stores)."""
    return {k: v for k, v in vars(opt).items() if not k.startswith("_")}


def config_opts(parser):
    parser.add("-config", "--config", is_config_file_arg=True, help="YAML file with options")


def save_config_opts(parser):
    parser.add("-save_config", "--save_config", default=None,
               help="write the options of this command (given and defaults) to this YAML file, usable as "
                    "-config, and exit without doing anything else (OpenNMT-py's)")


def write_config(opt, path):
    """-save_config: the options of `opt` as YAML (None values and empty lists left out: their
    defaults), readable back with -config."""
    import yaml
    values = {k: v for k, v in saved_options(opt).items()
              if k not in ("config", "save_config") and v is not None and v != []}
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(values, f, default_flow_style=False, sort_keys=True, allow_unicode=True)


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
            value = getattr(opt, name, None)
            if value is None:
                continue
            if not math.isfinite(value) or not ok(value):
                raise OptionError(f"-{name} {what}, got {value}")


# --------------------------------------------------------------------------- prepare
CNNDM_FORMATS = ("auto", "opennmt", "bin", "hf", "seed")
GIGAWORD_FORMATS = ("auto", "rush", "seed")


def prepare_opts(parser, formats=CNNDM_FORMATS):
    """tools/prepare_cnndm.py and tools/prepare_gigaword.py (their `formats` differ; see onmt/prepare/)."""
    g = parser.add_argument_group("Prepare")
    g.add("-input", "--input", required=True, help="folder holding the corpus as published")
    g.add("-output", "--output", required=True,
          help="folder to write {train,valid,test}.{src,tgt}.txt into (made if missing)")
    g.add("-format", "--format", default="auto", choices=formats,
          help="the form of -input (auto: detected from the file names, and logged)")
    g.add("-lower", "--lower", dest="lower", action="store_true", default=True, help="lowercase the text")
    g.add("-no_lower", "--no_lower", dest="lower", action="store_false",
          help="keep the case (default: lowercase, lower=%(default)s)")
    g.add("-tokenize", "--tokenize", default="auto", choices=("auto", "ptb", "none"),
          help="auto: PTB-style tokenization of raw text (the Hugging Face export), pre-tokenized forms kept "
               "as they are; ptb: tokenize every form; none: split on whitespace only")
    g.add("-splits", "--splits", nargs="+", default=["train", "valid", "test"], choices=("train", "valid", "test"),
          help="splits to write; those the corpus holds are written, the others logged")
    g.add("-report_every", "--report_every", type=int, default=100000, help="log progress every N examples")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def validate_prepare_opts(opt):
    import os
    if opt.report_every <= 0:
        raise OptionError(f"-report_every must be positive, got {opt.report_every}")
    if os.path.realpath(opt.input) == os.path.realpath(opt.output):
        raise OptionError("-input and -output must be different folders")
    opt.splits = list(dict.fromkeys(opt.splits))


# --------------------------------------------------------------------------- preprocess
def preprocess_opts(parser):
    g = parser.add_argument_group("Data")
    g.add("-train_src", "--train_src", required=True, help="training source file (plain or .gz)")
    g.add("-train_tgt", "--train_tgt", required=True, help="training target file (plain or .gz)")
    g.add("-valid_src", "--valid_src", default=None, help="validation source file")
    g.add("-valid_tgt", "--valid_tgt", default=None, help="validation target file")
    g.add("-save_data", "--save_data", required=True, help="output prefix for vocabulary and shards")
    g.add("-shard_size", "--shard_size", type=int, default=1000000, help="examples per shard")
    g.add("-seed", "--seed", type=int, default=3435, help="random seed")
    g.add("-report_every", "--report_every", type=int, default=100000,
          help="progress is a bar on a terminal, else a log line about every 10%% of a pass; for an input "
               "without a size (a pipe), a log line every N lines")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-overwrite", "--overwrite", action="store_true",
          help="accepted for OpenNMT-py's configs: a run always replaces the dataset of -save_data, "
               "atomically (the old one stays until the new one is complete)")
    g.add("-filter_valid", "--filter_valid", action="store_true",
          help="accepted for OpenNMT-py's configs: the valid split is always filtered by the length "
               "rules of the training split here (OpenNMT-py filters it only with this flag)")
    g.add("-num_threads", "--num_threads", type=int, default=1, help="worker processes for counting and numericalizing")
    g = parser.add_argument_group("Vocabulary")
    g.add("-src_vocab_size", "--src_vocab_size", type=int, default=50000, help="source vocabulary size (specials included)")
    g.add("-tgt_vocab_size", "--tgt_vocab_size", type=int, default=50000, help="target vocabulary size (specials included)")
    g.add("-src_words_min_frequency", "--src_words_min_frequency", type=int, default=0, help="drop source words rarer than this")
    g.add("-tgt_words_min_frequency", "--tgt_words_min_frequency", type=int, default=0, help="drop target words rarer than this")
    g.add("-share_vocab", "--share_vocab", action="store_true",
          help="one frequency-ordered word list; the target vocabulary is its prefix")
    g.add("-dynamic_dict", "--dynamic_dict", action="store_true", help="per-example OOV lists, src_ex and tgt_ex (copy)")
    g.add("-src_vocab", "--src_vocab", default=None,
          help="take the source vocabulary from this file: one word a line, optionally 'word count' (a "
               "vocabulary file of this project or OpenNMT-py's), in its order, cut to -src_vocab_size; with "
               "-share_vocab the one shared list")
    g.add("-tgt_vocab", "--tgt_vocab", default=None,
          help="take the target vocabulary from this file (as -src_vocab; not with -share_vocab)")
    g.add("-lower", "--lower", action="store_true", help="lowercase the text")
    g = parser.add_argument_group("Pruning")
    g.add("-src_seq_length", "--src_seq_length", type=int, default=50, help="drop examples with a longer source")
    g.add("-tgt_seq_length", "--tgt_seq_length", type=int, default=50, help="drop examples with a longer target")
    g.add("-src_seq_length_trunc", "--src_seq_length_trunc", type=int, default=0, help="truncate sources to this length (0: off)")
    g.add("-tgt_seq_length_trunc", "--tgt_seq_length_trunc", type=int, default=0, help="truncate targets to this length (0: off)")


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


# --------------------------------------------------------------------------- model
def model_opts(parser):
    g = parser.add_argument_group("Model")
    g.add("-reinforced", "--reinforced", action="store_true",
          help="Paulus et al.'s deep reinforced model (implies -share_embeddings -copy_attn)")
    g.add("-rnn_type", "--rnn_type", default="LSTM", choices=["LSTM", "GRU"], help="recurrent unit")
    g.add("-layers", "--layers", type=int, default=-1, help="layers of encoder and decoder (overrides the two below)")
    g.add("-enc_layers", "--enc_layers", type=int, default=2, help="encoder layers")
    g.add("-dec_layers", "--dec_layers", type=int, default=2, help="decoder layers")
    g.add("-brnn", "--brnn", action="store_true", help="bidirectional encoder (each direction gets rnn_size/2)")
    g.add("-encoder_type", "--encoder_type", dest="brnn", type=_encoder_type, metavar="rnn|brnn",
          help="OpenNMT-py's name: -encoder_type brnn is -brnn, rnn a unidirectional encoder (the default)")
    g.add("-rnn_size", "--rnn_size", "-hidden_size", "--hidden_size", type=int, default=500,
          help="decoder hidden size = encoder output size (-hidden_size: OpenNMT-py's name, the same option)")
    g.add("-word_vec_size", "--word_vec_size", type=int, default=500, help="word embedding size")
    g.add("-dropout", "--dropout", type=float, default=0.3, help="dropout probability")
    g.add("-global_attention", "--global_attention", default="general", choices=["none", "dot", "general", "mlp"],
          help="attention type; none is Cho et al.'s fixed-context model")
    g.add("-input_feed", "--input_feed", type=int, default=1, choices=[0, 1],
          help="feed the previous attentional vector to the decoder")
    g.add("-copy_attn", "--copy_attn", action="store_true", help="See et al.'s pointer-generator")
    g.add("-coverage_attn", "--coverage_attn", action="store_true", help="coverage vector in attention and coverage loss")
    g.add("-lambda_coverage", "--lambda_coverage", type=float, default=1.0, help="weight of the coverage loss")
    g.add("-share_embeddings", "--share_embeddings", action="store_true", help="share encoder/decoder embeddings (-share_vocab data)")
    g.add("-pre_word_vecs_enc", "--pre_word_vecs_enc", default=None, help="GloVe-format text file for encoder embeddings")
    g.add("-pre_word_vecs_dec", "--pre_word_vecs_dec", default=None, help="GloVe-format text file for decoder embeddings")
    g.add("-param_init", "--param_init", type=float, default=0.1, help="uniform init range (0: PyTorch defaults)")
    g = parser.add_argument_group("Model, OpenNMT-py's options (README, Upstream OpenNMT-py flags)")
    g.add("-share_decoder_embeddings", "--share_decoder_embeddings", action="store_true",
          help="the generator's output matrix is the decoder embedding (needs -word_vec_size = -rnn_size); "
               "-reinforced ties W_out = tanh(E_tgt W_proj) already: implied there")
    g.add("-fix_word_vecs_enc", "--fix_word_vecs_enc", action="store_true",
          help="do not train the encoder embeddings (with -share_embeddings: the one shared matrix)")
    g.add("-fix_word_vecs_dec", "--fix_word_vecs_dec", action="store_true",
          help="do not train the decoder embeddings (with -share_embeddings: the one shared matrix)")
    g.add("-bridge", "--bridge", action="store_true",
          help="a linear layer + ReLU between the encoder's final states and the decoder's initial states "
               "(one per state, h and c of an LSTM, over each example's layers concatenated)")
    g.add("-reuse_copy_attn", "--reuse_copy_attn", action="store_true",
          help="accepted, changes nothing: the pointer-generator always copies with the decoder's attention")
    g.add("-copy_attn_type", "--copy_attn_type", default=None, choices=["none", "dot", "general", "mlp"],
          help="accepted only equal to -global_attention: the copy distribution IS the decoder's attention "
               "(default: -global_attention, as in OpenNMT-py)")
    g = parser.add_argument_group("Reinforced model")
    g.add("-no_temporal_attn", "--no_temporal_attn", action="store_true", help="ablation: plain (not intra-temporal) encoder attention")
    g.add("-no_intra_decoder_attn", "--no_intra_decoder_attn", action="store_true", help="ablation: no intra-decoder attention")
    g.add("-no_tied_output", "--no_tied_output", action="store_true", help="ablation: free W_out instead of tanh(E_tgt W_proj)")
    g.add("-scheduled_sampling", "--scheduled_sampling", type=float, default=0.0,
          help="probability that the next decoder input is the model's own previous prediction")
    g.add("-scheduled_sampling_mode", "--scheduled_sampling_mode", default="argmax", choices=["argmax", "sample"],
          help="how the model's own prediction is chosen for scheduled sampling")


ENCODER_TYPES = {"rnn": False, "brnn": True}


def _encoder_type(value):
    """-encoder_type rnn|brnn -> the value of -brnn (the option stores into opt.brnn)."""
    import argparse
    if value not in ENCODER_TYPES:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from rnn, brnn)")
    return ENCODER_TYPES[value]


# Model options added after checkpoints existed -> the value that gives the model such a checkpoint
# was trained with. A checkpoint without one of them means that value (train.py -train_from,
# translate.py): read them with `model_option`.
ADDED_MODEL_OPTIONS = {"share_decoder_embeddings": False, "fix_word_vecs_enc": False, "fix_word_vecs_dec": False,
                       "bridge": False, "reuse_copy_attn": False, "copy_attn_type": None}


def model_option(opt, name):
    """opt.<name> for an ADDED_MODEL_OPTIONS name, its old meaning when `opt` (a checkpoint's) lacks it."""
    return vars(opt).get(name, ADDED_MODEL_OPTIONS[name])


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
                    "no_intra_decoder_attn", "no_tied_output")


def check_model_numbers(opt):
    """The model group's impossible numbers (train.py checks them at start, before reading any data)."""
    _check_numbers(opt, positive=("rnn_size", "word_vec_size", "enc_layers", "dec_layers"),
                   non_negative=("param_init", "lambda_coverage"), unit_open=("dropout",))
    if opt.layers == 0 or opt.layers < -1:
        raise OptionError(f"-layers must be positive (or -1: use -enc_layers and -dec_layers), got {opt.layers}")


def validate_model_opts(opt):
    """Cross-option checks of the model group; also fills what an option implies (-reinforced:
    -brnn -share_embeddings -copy_attn, one layer unless layers are given)."""
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
        opt.share_embeddings = opt.copy_attn = opt.brnn = True
        if not any(given(opt, n) for n in ("layers", "enc_layers", "dec_layers")):
            opt.layers = 1
    else:
        only = [f"-{name}" for name in _REINFORCED_ONLY if given(opt, name)]
        if only:
            raise OptionError(f"{', '.join(only)} only appl{'ies' if len(only) == 1 else 'y'} to -reinforced")
    if getattr(opt, "layers", -1) > 0:
        opt.enc_layers = opt.dec_layers = opt.layers
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


# Paulus et al.'s settings for CNN/DM (the ML phase; rl_gamma is the mixed phase's), as options.
PAPER_SETTINGS = {"word_vec_size": 100, "rnn_size": 400, "enc_layers": 1, "optim": "adam",
                  "learning_rate": 0.001, "scheduled_sampling": 0.25, "rl_gamma": 0.9984}


def paper_differences(opt):
    """'-name value (paper: p)' for each PAPER_SETTINGS entry this -reinforced run sets otherwise
    (the RL phase's own learning rate, 1e-4 in the paper, is not a difference)."""
    if not opt.reinforced:
        return []
    out = []
    for name, paper in PAPER_SETTINGS.items():
        value = getattr(opt, name, None)
        if name == "learning_rate" and getattr(opt, "rl_gamma", None):
            continue
        if name == "rl_gamma" and value is None:
            continue
        if value != paper:
            out.append(f"-{name} {value} (paper: {paper})")
    return out


# --------------------------------------------------------------------------- train
def train_opts(parser):
    g = parser.add_argument_group("General")
    g.add("-data", "--data", required=True, help="prefix given to preprocess.py -save_data")
    g.add("-save_model", "--save_model", default="model", help="checkpoints are {save_model}_step_{N}.pt")
    g.add("-train_from", "--train_from", default="", help="resume everything from this checkpoint")
    g.add("-gpu", "--gpu", type=int, default=-1, help="GPU id (-1: CPU)")
    g.add("-seed", "--seed", type=int, default=3435, help="random seed")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-amp", "--amp", action="store_true",
          help="automatic mixed precision on CUDA (ignored on the CPU); the generator, W_out, losses and "
               "rewards stay float32")
    g.add("-amp_dtype", "--amp_dtype", default="bf16", choices=["bf16", "fp16"],
          help="-amp's low precision: bf16 (bfloat16, no loss scaling) or fp16 (float16 with a GradScaler)")
    g = parser.add_argument_group("Schedule")
    g.add("-train_steps", "--train_steps", type=int, default=100000, help="stop after this many steps")
    g.add("-epochs", "--epochs", type=int, default=0, help="if > 0, train this many epochs instead of -train_steps")
    g.add("-valid_steps", "--valid_steps", type=int, default=10000, help="validate every N steps")
    g.add("-save_checkpoint_steps", "--save_checkpoint_steps", type=int, default=5000, help="save every N steps")
    g.add("-keep_checkpoint", "--keep_checkpoint", type=int, default=-1, help="keep the last N checkpoints (0 or -1: all, as in OpenNMT-py)")
    g.add("-report_every", "--report_every", type=int, default=50, help="log every N steps")
    g = parser.add_argument_group("Batching")
    g.add("-batch_size", "--batch_size", type=int, default=64, help="batch size (sentences or tokens)")
    g.add("-batch_type", "--batch_type", default="sents", choices=["sents", "tokens"], help="unit of -batch_size")
    g.add("-valid_batch_size", "--valid_batch_size", type=int, default=32, help="validation batch size (sentences)")
    g.add("-pool_factor", "--pool_factor", type=int, default=100, help="batches per length-sorted bucket pool")
    g.add("-accum_count", "--accum_count", type=int, default=1,
          help="one optimizer step per N batches (per process): the update of one N times larger batch")
    g = parser.add_argument_group("Several processes (README, Several GPUs)")
    g.add("-world_size", "--world_size", type=int, default=1,
          help="number of processes; N > 1 outside torchrun spawns N on this machine (CPU, or GPUs with "
               "-gpu_ranks); under torchrun its WORLD_SIZE counts")
    g.add("-gpu_ranks", "--gpu_ranks", type=int, nargs="*", default=[],
          help="OpenNMT-py's: the ranks that run on GPUs, 0 .. world_size-1 (rank r uses GPU r); "
               "-world_size 1 -gpu_ranks 0 is -gpu 0")
    g = parser.add_argument_group("Optimization")
    g.add("-optim", "--optim", default="sgd", choices=["sgd", "adagrad", "adam"], help="optimizer")
    g.add("-learning_rate", "--learning_rate", type=float, default=1.0, help="learning rate")
    g.add("-adagrad_accumulator_init", "--adagrad_accumulator_init", type=float, default=0.0, help="initial Adagrad accumulator")
    g.add("-adam_beta1", "--adam_beta1", type=float, default=0.9)
    g.add("-adam_beta2", "--adam_beta2", type=float, default=0.999)
    g.add("-max_grad_norm", "--max_grad_norm", type=float, default=5.0, help="clip gradients to this norm (0: off)")
    g.add("-decay_method", "--decay_method", default="none", choices=["none", "noam", "rsqrt"],
          help="OpenNMT-py's schedules (onmt/utils/optim.py): noam = lr * rnn_size^-0.5 * min(step^-0.5, "
               "step * warmup_steps^-1.5); rsqrt = lr / sqrt(max(step, warmup_steps)); none = constant, or "
               "exponential decay when one of the three options below is given")
    g.add("-learning_rate_decay", "--learning_rate_decay", type=float, default=None,
          help="-decay_method none: multiply the rate by this at -start_decay_steps and every -decay_steps "
               "after (OpenNMT-py's default 0.5 when one of the three is given; none given: constant rate)")
    g.add("-start_decay_steps", "--start_decay_steps", type=int, default=None,
          help="-decay_method none: the first decayed step (OpenNMT-py's default 50000 when one of the "
               "three is given)")
    g.add("-decay_steps", "--decay_steps", type=int, default=None,
          help="-decay_method none: steps between decays (OpenNMT-py's default 10000 when one of the three "
               "is given)")
    g.add("-warmup_steps", "--warmup_steps", type=int, default=4000, help="warm-up of -decay_method noam and rsqrt")
    g.add("-reset_optim", "--reset_optim", default="none", choices=["none", "all", "states", "keep_states"],
          help="with -train_from: none = the checkpoint's optimizer options (those given here win) and state; "
               "all = options from here, fresh state; states = the checkpoint's options (those given here "
               "win), fresh state; keep_states = options from here, the checkpoint's state")
    g = parser.add_argument_group("Loss")
    g.add("-normalization", "--normalization", default="tokens", choices=["tokens", "sents"],
          help="divide a step's summed loss by its target tokens or by its examples (OpenNMT-py's default "
               "is sents; this project's, tokens)")
    g.add("-copy_loss_by_seqlength", "--copy_loss_by_seqlength", action="store_true",
          help="copy models: each example's ML loss (and coverage loss) divided by its target length, "
               "then the usual -normalization")
    g = parser.add_argument_group("Inspection")
    g.add("-sample_every", "--sample_every", type=int, default=0,
          help="every N steps, log one validation example's source, reference and greedy prediction "
               "(copied words marked) with its mean p(copy) (0: off)")
    g.add("-tensorboard", "--tensorboard", action="store_true",
          help="write TensorBoard scalars (needs the tensorboard package: pip install .[tensorboard])")
    g.add("-tensorboard_log_dir", "--tensorboard_log_dir", default="runs/onmt",
          help="folder of the TensorBoard event files")
    g.add("-profile", "--profile", type=int, default=0,
          help="profile N training steps (after 2 warm-up steps) with torch.profiler: log the top 25 operators "
               "by self CPU (and CUDA) time, write a Chrome trace to -profile_trace, then stop (0: off)")
    g.add("-profile_trace", "--profile_trace", default="",
          help="the -profile Chrome trace (JSON; default: {save_model}_profile.json)")
    g = parser.add_argument_group("Reinforcement learning (self-critical policy gradient)")
    g.add("-rl_gamma", "--rl_gamma", type=float, default=None,
          help="train gamma * L_rl + (1 - gamma) * L_ml (absent: ML only; the paper: 0.9984; 1: RL only)")
    g.add("-rl_reward", "--rl_reward", default="rougeL", choices=["rougeL", "rouge1", "rouge2", "mix"],
          help="reward of a sequence against the reference (F1; mix: mean of the three)")
    g.add("-max_gen_length", "--max_gen_length", type=int, default=0,
          help="longest sampled / greedy sequence, </s> excluded (0: the data's target truncation or limit)")
    g.add("-valid_rouge", "--valid_rouge", dest="valid_rouge", action="store_const", const=True, default=None,
          help="validation also reports greedy ROUGE (default: on with -rl_gamma)")
    g.add("-no_valid_rouge", "--no_valid_rouge", dest="valid_rouge", action="store_const", const=False,
          help="no greedy ROUGE at validation")


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


def _check_gpu(gpu):
    if gpu >= 0:
        import torch
        if not torch.cuda.is_available():
            raise OptionError(f"-gpu {gpu} given but CUDA is not available")


# --------------------------------------------------------------------------- translate
def translate_opts(parser):
    g = parser.add_argument_group("Data")
    g.add("-model", "--model", required=True, help="checkpoint to translate with")
    g.add("-src", "--src", required=True, help="source file, one example per line")
    g.add("-tgt", "--tgt", default=None, help="score these targets (gold score, perplexity)")
    g.add("-output", "--output", default="pred.txt", help="predictions, one line per input line")
    g.add("-gpu", "--gpu", type=int, default=-1, help="GPU id (-1: CPU)")
    g.add("-batch_size", "--batch_size", type=int, default=30, help="examples per batch")
    g.add("-verbose", "--verbose", action="store_true", help="print source, prediction and score")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-seed", "--seed", type=int, default=829, help="random seed")
    g = parser.add_argument_group("Search")
    g.add("-beam_size", "--beam_size", type=int, default=5, help="beam size (1: greedy)")
    g.add("-n_best", "--n_best", type=int, default=1, help="output the n best hypotheses")
    g.add("-min_length", "--min_length", type=int, default=0, help="minimum prediction length")
    g.add("-max_length", "--max_length", type=int, default=100, help="maximum prediction length")
    g.add("-length_penalty", "--length_penalty", default="none", choices=["none", "avg", "wu"], help="length penalty")
    g.add("-alpha", "--alpha", type=float, default=0.0, help="length penalty parameter for wu")
    g.add("-coverage_penalty", "--coverage_penalty", default="none", choices=["none", "wu", "summary"],
          help="coverage penalty of a hypothesis's summed attention cov_i: wu: -beta*sum_i log(min(cov_i, 1)); "
               "summary: beta*(sum_i max(cov_i, 1) - S) (onmt/translate/decoding.py)")
    g.add("-beta", "--beta", type=float, default=0.0, help="coverage penalty parameter")
    g.add("-stepwise_penalty", "--stepwise_penalty", action="store_true",
          help="apply the coverage penalty to the running scores at every step, not only to finished hypotheses")
    g.add("-dump_beam", "--dump_beam", default="",
          help="write the beam search's history (per example and step: token ids, words, scores, backpointers) "
               "to this JSON file")
    g.add("-block_ngram_repeat", "--block_ngram_repeat", type=int, default=0, help="never repeat an n-gram of this size (0: off)")
    g.add("-avoid_trigram_repetition", "--avoid_trigram_repetition", action="store_true", help="same as -block_ngram_repeat 3")
    g.add("-ignore_when_blocking", "--ignore_when_blocking", nargs="+", default=[], help="tokens ignored by n-gram blocking")
    g.add("-replace_unk", "--replace_unk", action="store_true",
          help="replace <unk> with the source word of highest attention")
    g = parser.add_argument_group("Inspection")
    g.add("-attn_plot", "--attn_plot", default="",
          help="write a PNG per example into this folder: encoder attention, intra-decoder attention and "
               "p(copy) per output step (needs matplotlib: pip install .[plot])")
    g.add("-attn_plot_n", "--attn_plot_n", type=int, default=10, help="plot the first N examples (0: all)")
    g.add("-attn_debug", "--attn_debug", default="",
          help="dump the raw attention arrays and p(copy) of every example to this file "
               "(re-plot with tools/plot_attention.py)")
    g.add("-profile", "--profile", type=int, default=0,
          help="profile the first N batches with torch.profiler: log the top 25 operators by self CPU (and "
               "CUDA) time and write a Chrome trace to -profile_trace; the translation goes on (0: off)")
    g.add("-profile_trace", "--profile_trace", default="",
          help="the -profile Chrome trace (JSON; default: the -output path without extension + _profile.json)")
    g = parser.add_argument_group("Input as in training (defaults: the checkpoint's preprocessing)")
    g.add("-src_seq_length_trunc", "--src_seq_length_trunc", type=int, default=0,
          help="cut -src lines to N tokens (default: as the training data was cut; 0: not cut)")
    g.add("-tgt_seq_length_trunc", "--tgt_seq_length_trunc", type=int, default=0,
          help="cut -tgt lines to N tokens for gold scoring (default: as the training data was cut; 0: not cut)")
    g.add("-report_rouge", "--report_rouge", action="store_true",
          help="score the predictions against -tgt with ROUGE (built-in scorer) at the end")


def validate_translate_opts(opt):
    if opt.avoid_trigram_repetition:
        opt.block_ngram_repeat = 3
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


# --------------------------------------------------------------------------- evaluate
def evaluate_opts(parser):
    g = parser.add_argument_group("Evaluate")
    g.add("-pred", "--pred", required=True, nargs="+", action="extend",
          help="predictions, one summary per line (plain or .gz); a second file is compared with the "
               "first by a paired bootstrap test")
    g.add("-ref", "--ref", required=True, nargs="+", action="extend",
          help="references, one summary per line; several files (or -ref given again): several references")
    g.add("-json", "--json", default="", help="also write the scores (and intervals) to this JSON file")
    g.add("-official", "--official", action="store_true",
          help="score with the original ROUGE-1.5.5 Perl script (needs perl and XML::Parser)")
    g.add("-bootstrap", "--bootstrap", type=int, default=0,
          help="N bootstrap samples: 95%% confidence intervals (and the paired test's samples; 1000 if 0)")
    g.add("-seed", "--seed", type=int, default=1, help="seed of the bootstrap samples")
    g.add("-limit_bytes", "--limit_bytes", type=int, default=0,
          help="score only the first N bytes of every summary (ROUGE-1.5.5 -b; DUC-2004: 75)")
    g.add("-limit_words", "--limit_words", type=int, default=0,
          help="score only the first N words of every summary (ROUGE-1.5.5 -l)")
    g.add("-recall_only", "--recall_only", action="store_true", help="report recall only (as DUC does)")
    g.add("-no_stemming", "--no_stemming", action="store_true",
          help="no Porter stemming (ROUGE-1.5.5 without -m; the standard setting stems)")
    g.add("-sent_per_line", "--sent_per_line", action="store_true",
          help="files hold one sentence per line, an empty line after each summary")
    g.add("-sentence_split", "--sentence_split", default=".",
          help="a summary's sentences (ROUGE-Lsum) end with this token, unless it has <t> ... </t> "
               "tags ('' = one sentence)")


def validate_evaluate_opts(opt):
    if len(opt.pred) > 2:
        raise OptionError(f"-pred takes one file, or two to compare, got {len(opt.pred)}")
    for name in ("bootstrap", "limit_bytes", "limit_words"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")
    if opt.limit_bytes and opt.limit_words:
        raise OptionError("give -limit_bytes or -limit_words, not both")
    opt.sentence_split = opt.sentence_split.strip()


# --------------------------------------------------------------------------- parsers
def preprocess_parser():
    p = _parser("Text -> vocabulary + numericalized shards")
    config_opts(p)
    save_config_opts(p)
    preprocess_opts(p)
    return p


def train_parser():
    p = _parser("Shards -> checkpoints")
    config_opts(p)
    save_config_opts(p)
    model_opts(p)
    train_opts(p)
    return p


def translate_parser():
    p = _parser("Checkpoint + source -> predictions")
    config_opts(p)
    translate_opts(p)
    return p


def evaluate_parser():
    p = _parser("Predictions + references -> ROUGE")
    config_opts(p)
    evaluate_opts(p)
    return p


def prepare_cnndm_parser():
    p = _parser("CNN/DailyMail as published -> {train,valid,test}.{src,tgt}.txt")
    config_opts(p)
    prepare_opts(p, CNNDM_FORMATS)
    return p


def prepare_gigaword_parser():
    p = _parser("Gigaword as published -> {train,valid,test}.{src,tgt}.txt")
    config_opts(p)
    prepare_opts(p, GIGAWORD_FORMATS)
    return p


# --------------------------------------------------------------------------- plot_attention
def plot_attention_opts(parser):
    g = parser.add_argument_group("Re-plot an -attn_debug dump (tools/plot_attention.py)")
    g.add("-attn_debug", "--attn_debug", required=True, help="a dump written by translate.py -attn_debug")
    g.add("-attn_plot", "--attn_plot", required=True,
          help="write a PNG per example into this folder (needs matplotlib: pip install .[plot])")
    g.add("-attn_plot_n", "--attn_plot_n", type=int, default=10, help="plot the first N examples (0: all)")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def validate_plot_attention_opts(opt):
    if opt.attn_plot_n < 0:
        raise OptionError(f"-attn_plot_n must be >= 0, got {opt.attn_plot_n}")


def plot_attention_parser():
    p = _parser("-attn_debug dump -> one PNG per example")
    config_opts(p)
    plot_attention_opts(p)
    return p
