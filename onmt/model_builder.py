"""The model registry: the one place that maps a model family to its model class.

    MODEL_REGISTRY[name] = ModelEntry(FAMILIES[name], model_cls, fused_cls)
        FAMILIES[name]                   the family's option knowledge (onmt/opts/families.py)
        model_cls                        the plain class: the equations (onmt/models, reinforced)
        fused_cls                        its subclass with the fast paths (the family's fused.py)
        cls.from_opt(opt, vocabs, execution)  -> nn.Module implementing onmt/interface.py

`build_model` picks the class from the Execution ONCE (`ModelEntry.model_class`: the fused subclass
exactly when the execution's kernels are "fused"), the encoder and decoder the same way
(onmt/models/components.py), and names the class on its log line.

Every family trains with the one Trainer (onmt/trainer.py), which knows no model, and the one
objective (onmt/losses: `build_loss(opt)`, ML or mixed with self-critical RL by -rl_gamma), which
reads the model interface alone.

`opt.model_family` is the family the options resolved (-model_family, its aliases -reinforced and
-copy_attn resolved by onmt/opts/update.py) and `model_entry(opt)` its entry; nothing else in the
toolkit branches on the model family.
"""
import logging
from typing import NamedTuple

import torch.nn as nn

from onmt.errors import UserError
from onmt.execution import as_execution
from onmt.models.fused import FusedCopyNMTModel, FusedNMTModel
from onmt.models.seq2seq import CopyNMTModel, NMTModel
from onmt.modules.embeddings import Embeddings
from onmt.opts.families import FAMILIES, Family
from onmt.reinforced.fused import FusedReinforcedModel
from onmt.reinforced.model import ReinforcedModel

logger = logging.getLogger(__name__)


class ModelEntry(NamedTuple):
    # its options: implied, refused, its recipe, data needs, test-time rule, ...
    profile: Family
    model_cls: type        # the plain class
    fused_cls: type        # its fused subclass

    def model_class(self, execution=None):
        """The class `build_model` builds for `execution`: the fused subclass exactly when its
        kernels are "fused"."""
        return self.fused_cls if as_execution(execution).fused else self.model_cls

    @property
    def name(self):
        return self.profile.name

    def check_data(self, opt, meta):
        """Refuse preprocessed data (its meta dict) that this model cannot train on."""
        missing = [flag for flag, need, key in
                   (("-share_vocab", self.profile.needs_shared_vocab, "share_vocab"),
                    ("-dynamic_dict", self.profile.needs_dynamic_dict, "dynamic_dict"))
                   if need and not meta.get(key, False)]
        if missing:
            raise UserError(f"the {self.name} model needs data preprocessed with "
                            f"{' '.join(missing)}: rerun preprocess.py with {' '.join(missing)}")
        if opt.share_embeddings and not meta.get("share_vocab", False):
            raise UserError("-share_embeddings needs data preprocessed with -share_vocab")


MODEL_REGISTRY = {
    "rnn": ModelEntry(FAMILIES["rnn"], NMTModel, FusedNMTModel),
    "copy": ModelEntry(FAMILIES["copy"], CopyNMTModel, FusedCopyNMTModel),
    "reinforced": ModelEntry(FAMILIES["reinforced"], ReinforcedModel, FusedReinforcedModel),
}


def model_entry(opt):
    """The registry entry for these options."""
    return MODEL_REGISTRY[opt.model_family]


def init_parameters(model, param_init):
    """Uniform(-param_init, param_init) on every parameter (0: keep PyTorch defaults); PAD rows
    zeroed. The one initialization of every family (build_model calls it; code building a model by
    its `from_opt` directly calls it too)."""
    if param_init:
        for p in model.parameters():
            nn.init.uniform_(p, -param_init, param_init)
    for m in model.modules():
        if isinstance(m, Embeddings):
            m.zero_padding_row()


def _load_pretrained(model, opt, vocabs):
    """-pre_word_vecs_enc / -dec into the encoder / decoder embeddings
    (modules found by attribute)."""
    for path, owner, vocab, side in ((opt.pre_word_vecs_enc, "encoder", vocabs.src, "encoder"),
                                     (opt.pre_word_vecs_dec, "decoder", vocabs.tgt, "decoder")):
        if not path:
            continue
        emb = model.embeddings(owner)
        if not isinstance(emb, Embeddings):
            logger.warning("the %s has no word embeddings to load %s into", side, path)
            continue
        found = emb.load_pretrained(path, vocab)
        logger.info("%s embeddings: %d of %d words found in %s", side, found, len(vocab), path)


def _fix_embeddings(model, opt):
    """-fix_word_vecs_enc / -dec: the encoder's / decoder's embedding parameters are not trained."""
    for side in ("encoder", "decoder"):
        if not getattr(opt, f"fix_word_vecs_{side[:3]}"):
            continue
        emb = model.embeddings(side)
        if not isinstance(emb, nn.Module):
            raise UserError(f"-fix_word_vecs_{side[:3]}: the {name_of(model)} model's {side} "
                            "has no embeddings")
        for p in emb.parameters():
            p.requires_grad_(False)


def name_of(model):
    return type(model).__name__


def build_model(opt, vocabs, checkpoint_state=None, allow_new=False, checkpoint_name=None,
                own_options=False, device="cpu", execution=None):
    """The model for `opt` (fresh, or with the parameters of `checkpoint_state`), on `device`, built
    with `execution` (what runs, made once by the entry point: onmt/execution.py; None: the
    default, fused kernels, no decoding precision, nothing compiled; a kernels name "fused" /
    "plain": the default with it); logs its family, its number of parameters, its device, its
    execution and the fused paths that do not apply to it, each with why (`execution_line`: the one
    line that says what runs).

    allow_new: parameters that `checkpoint_state` lacks (e.g. coverage added on -train_from) keep
    the initialization of a fresh model; otherwise a checkpoint must hold exactly the model's
    parameters, each of the model's shape. The UserError of a checkpoint that does not fit names
    `checkpoint_name` and says "its options" (`own_options`: the checkpoint's own) or
    "these options".
    """
    name = opt.model_family
    execution = as_execution(execution)
    model = MODEL_REGISTRY[name].model_class(execution).from_opt(opt, vocabs, execution=execution)
    init_parameters(model, opt.param_init)
    if checkpoint_state is not None:
        # older keys renamed (interface.py)
        checkpoint_state = model.upgrade_state_dict(checkpoint_state)
        own = model.state_dict()
        unexpected = [k for k in checkpoint_state if k not in own]
        missing = [k for k in own if k not in checkpoint_state]
        resized = [f"{k} is {_shape(checkpoint_state[k])} in the checkpoint, "
                   f"{_shape(own[k])} in the model"
                   for k in own if k in checkpoint_state
                   and tuple(checkpoint_state[k].shape) != tuple(own[k].shape)]
        if unexpected or (missing and not allow_new) or resized:
            raise UserError(
                f"{'checkpoint ' + checkpoint_name if checkpoint_name else 'the checkpoint'}"
                f" does not fit the {name} model of {'its' if own_options else 'these'} options: "
                + "; ".join(x for x in (
                    f"unexpected {', '.join(unexpected[:4])}" if unexpected else "",
                    f"missing {', '.join(missing[:4])}" if missing else "",
                    ", ".join(resized[:2])) if x))
        model.load_state_dict(checkpoint_state, strict=False)
        if missing:
            logger.info("new parameters, initialized as for a fresh model: %s", ", ".join(missing))
    else:
        _load_pretrained(model, opt, vocabs)
    _fix_embeddings(model, opt)
    model = model.to(device)
    logger.info(execution_line(name, model, device))
    return model


def execution_line(name, model, device):
    """build_model's line:
    "Model NAME (CLASS): N parameters; device D; execution: kernels K, precision P, compile C"
    then the fused paths of the execution that do not apply to the model, each with why
    (`model.execution_notes()`), or "; every fused path applies"."""
    n_params = sum(p.numel() for p in model.parameters())
    notes = model.execution_notes()
    tail = "".join(f"; {note}" for note in notes) if notes or not model.execution.fused else \
        "; every fused path applies"
    return (f"Model {name} ({type(model).__name__}): {n_params} parameters; device {device}; "
            f"execution: {model.execution.describe()}{tail}")


def _shape(t):
    return "x".join(map(str, t.shape)) or "a scalar"
