"""The model families' option knowledge: one profile per family, the one place to edit for a
family's options. The registry (onmt/model_builder.py MODEL_REGISTRY) attaches each profile's model
and loss classes; the update step (update.py) and the checks (validate.py) only loop over these
tables.

    FAMILIES[name] = Family(name, ...)   # what the family implies, refuses and alone accepts, its
                                         # recipe, the paper's settings, test-time defaults, resumes

`-model_family NAME` picks a profile; `-reinforced` and `-copy_attn` are its aliases (each profile's
`alias`), resolved once by the update step (`family_name`). This module imports nothing: the option
declarations (model.py) read the names, the registry the profiles.
"""
from typing import Callable, NamedTuple, Optional


class Refusal(NamedTuple):
    """An option the family cannot honour when the user gives it a value that `bad(value)` flags."""
    option: str
    bad: Callable
    reason: str
    # how the user wrote it, e.g. "-encoder_type" for brnn (default: -option)
    flag: str = ""
    shown: Optional[Callable] = None   # value -> the words after the flag (default: the value)


class Requirement(NamedTuple):
    """A cross-option rule of the family: `ok(opt)` or one OptionError line `message(opt)`."""
    ok: Callable
    message: Callable


# On -train_from, the model's options come from the checkpoint, except these training choices, which
# the command line (or -config) may change: what the new phase of training does (each family's
# default).
RESUMABLE = ("scheduled_sampling", "scheduled_sampling_mode", "scheduled_sampling_start",
             "scheduled_sampling_ramp", "lambda_coverage", "coverage_attn", "dropout", "param_init",
             "fix_word_vecs_enc", "fix_word_vecs_dec")
# Of those, the ones whose turning on adds parameters to the checkpoint's model (initialized as for
# a fresh model: See et al.'s coverage phase).
RESUME_ADDS_PARAMETERS = ("coverage_attn",)


class Family(NamedTuple):
    name: str
    title: str                       # how a refusal names it
    help: str                        # one line for -model_family's help
    alias: Optional[str] = None      # the flag that is this family: an alias of -model_family NAME
    # set by the family, whatever else is given (its own alias included)
    implies: dict = {}
    # model options where the user gave none (command line or -config)
    recipe: dict = {}
    train_recipe: dict = {}          # train.py options where the user gave none
    refuses: tuple = ()              # Refusal: given options it cannot honour
    only: tuple = ()                 # options that only this family reads (refused for the others)
    requires: tuple = ()             # Requirement: its cross-option rules
    # its paper's settings, as options (train.py logs a run's differences)
    paper: dict = {}
    paper_name: str = ""             # whose settings those are, for that log line
    # translate.py's n-gram blocking unless -block_ngram_repeat is given
    block_ngram_repeat: int = 0
    needs_dynamic_dict: bool = False   # the model reads src_ex / tgt_ex (it copies)
    needs_shared_vocab: bool = False   # the model shares one embedding (PartialEmbedding)
    resume_may_change: tuple = RESUMABLE

    @property
    def flag(self):
        """The command line that picks the family: its alias, else -model_family NAME."""
        return f"-{self.alias}" if self.alias else f"-model_family {self.name}"


def _share_decoder_embeddings_sizes(opt):
    return (f"-share_decoder_embeddings needs -word_vec_size equal to -rnn_size (the generator's "
            f"matrix is the decoder embedding), got {opt.word_vec_size} and {opt.rnn_size}")


_SHARED_GENERATOR = Requirement(
    lambda o: not o.share_decoder_embeddings or o.word_vec_size == o.rnn_size,
    _share_decoder_embeddings_sizes)

RNN = Family(
    "rnn", "the encoder-decoder",
    "GRU/LSTM encoder-decoder, with or without attention (Cho et al., Bahdanau et al., "
    "Luong et al.)",
    requires=(_SHARED_GENERATOR,
              Requirement(lambda o: o.copy_attn_type is None,
                          lambda o: "-copy_attn_type needs -copy_attn")))

COPY = Family(
    "copy", "See et al.'s pointer-generator",
    "See et al.'s pointer-generator (-copy_attn), optional coverage",
    alias="copy_attn", implies={"copy_attn": True}, needs_dynamic_dict=True,
    requires=(_SHARED_GENERATOR,
              Requirement(lambda o: o.copy_attn_type in (None, o.global_attention),
                          lambda o: f"-copy_attn_type {o.copy_attn_type}: the copy distribution is "
                                    "the decoder's attention here, "
                                    f"-global_attention {o.global_attention}")))

# Paulus et al.'s recipe (section 5 and appendix: CNN/DM, the ML phase): what -reinforced alone
# trains with, each where the user gave nothing. Their learning rate 1e-4 for the mixed phase is
# config/*_rl.yaml's. Two departures, each measured (docs/results.md): attention scores scaled
# by 1/sqrt(H) (the paper is silent), and no scheduled sampling: their 0.25 cost 2.94 ROUGE-Lsum
# on CNN/DM at equal CPU and exact match on the sanity tasks (the run's log names it;
# config/cnndm_reinforced.yaml keeps their 0.25).
REINFORCED = Family(
    "reinforced", "-reinforced (Paulus et al.'s model)",
    "Paulus et al.'s deep reinforced model (-reinforced)",
    alias="reinforced", implies={"reinforced": True, "copy_attn": True, "share_embeddings": True},
    recipe={"brnn": True, "layers": 1, "word_vec_size": 100, "rnn_size": 400, "dropout": 0.0,
            "scheduled_sampling": 0.0, "intra_attn_scale": "sqrt"},
    train_recipe={"optim": "adam", "learning_rate": 0.001, "batch_size": 50},
    refuses=(Refusal("rnn_type", lambda v: v != "LSTM", "the paper's model is an LSTM"),
             Refusal("global_attention", lambda v: True, "it uses intra-temporal attention"),
             Refusal("input_feed", lambda v: not v, "its decoder always reads its previous output"),
             Refusal("coverage_attn", lambda v: bool(v), "it has intra-temporal attention instead"),
             Refusal("lambda_coverage", lambda v: True, "it has no coverage"),
             Refusal("bridge", lambda v: bool(v),
                     "its decoder starts from the encoder's final states"),
             Refusal("copy_attn_type", lambda v: True,
                     "it copies with its intra-temporal attention"),
             Refusal("brnn", lambda v: not v, "its encoder is bidirectional", "-encoder_type",
                     lambda v: "rnn")),
    only=("scheduled_sampling", "scheduled_sampling_mode", "scheduled_sampling_start",
          "scheduled_sampling_ramp", "no_temporal_attn", "no_intra_decoder_attn", "no_tied_output",
          "intra_attn_scale"),
    requires=(Requirement(lambda o: o.enc_layers == o.dec_layers,
                          lambda o: "-reinforced needs as many encoder as decoder layers (the "
                                    "encoder's final states start the decoder), got -enc_layers "
                                    f"{o.enc_layers} -dec_layers {o.dec_layers}"),
              Requirement(lambda o: not (o.share_decoder_embeddings and o.no_tied_output),
                          lambda o: "-share_decoder_embeddings contradicts -no_tied_output")),
    # the ML phase's settings for CNN/DM (rl_gamma is the mixed phase's)
    paper={"word_vec_size": 100, "rnn_size": 400, "enc_layers": 1, "dropout": 0.0, "optim": "adam",
           "learning_rate": 0.001, "batch_size": 50, "scheduled_sampling": 0.25,
           "rl_gamma": 0.9984},
    paper_name="Paulus et al.'s (config/cnndm_reinforced.yaml has theirs)",
    block_ngram_repeat=3,   # the paper's no-repeated-trigram rule
    needs_dynamic_dict=True, needs_shared_vocab=True)

# In order of specialization: where several aliases are given, the last family's wins (-reinforced
# -copy_attn is the reinforced model, which copies).
FAMILIES = {f.name: f for f in (RNN, COPY, REINFORCED)}
DEFAULT_FAMILY = "rnn"


def family_name(values):
    """The family that options name: -model_family, else the last family whose alias is set, else
    rnn. `values`: vars(opt), a checkpoint's options or a config mapping (any of them may predate
    -model_family). The one place the aliases are read."""
    name = values.get("model_family")
    if name:
        return name
    chosen = DEFAULT_FAMILY
    for family in FAMILIES.values():
        if family.alias and values.get(family.alias):
            chosen = family.name
    return chosen
