"""What translate.py and the Python API (onmt/api.py) share: a checkpoint loaded for translation and
the translation of text lines with the checkpoint's test-time input rules (input_rules.py).

    session = load_session("model.pt", torch.device("cpu"))
    results = translate_lines(opt, session, src_lines)     # opt: translate.py's options
"""
import argparse
from typing import NamedTuple, Optional

from onmt.errors import UserError
from onmt.inputters.vocab import Vocabs
from onmt.utils.logging import logger


class Session(NamedTuple):
    model: object                # in eval mode, on its device
    vocabs: Vocabs
    model_opt: argparse.Namespace
    preprocess: Optional[dict]   # the checkpoint's preprocessing record (None: an older checkpoint)


class MissingOption(UserError, AttributeError):
    """An option the checkpoint's options lack (an AttributeError too: getattr's default still works)."""


class CheckpointOptions(argparse.Namespace):
    """A checkpoint's options; reading one it lacks is one line naming the checkpoint and the option."""

    def __getattr__(self, name):            # only called for a missing attribute
        if name.startswith("__"):
            raise AttributeError(name)
        where = self.__dict__.get("_checkpoint") or "the checkpoint"
        raise MissingOption(f"checkpoint {where} is damaged or from another program: its options lack {name}")


def model_from_checkpoint(ckpt, device, name=None):
    """(model in eval mode on `device`, Vocabs, the model's options) from a loaded checkpoint (`name`:
    its path, for the messages)."""
    from onmt.model_builder import build_model
    try:
        vocabs = Vocabs.from_dict(ckpt["vocab"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(f"checkpoint {name or ''} is damaged: its vocabulary cannot be read ({e!r})") from None
    model_opt = CheckpointOptions(**ckpt["opt"], _checkpoint=name)
    model = build_model(model_opt, vocabs, ckpt["model"], checkpoint_name=name, own_options=True).to(device)
    model.eval()
    return model, vocabs, model_opt


def load_session(path, device):
    """The Session of the checkpoint at `path`, its model on `device`."""
    from onmt.utils.checkpoint import load_checkpoint
    ckpt = load_checkpoint(path, device="cpu")
    model, vocabs, model_opt = model_from_checkpoint(ckpt, device, name=path)
    return Session(model, vocabs, model_opt, ckpt.get("preprocess"))


def translate_lines(opt, session, src_lines, tgt_lines=None, *, on_record=None, record_lines=None,
                    show_progress=True, beam_history=None, profiler=None):
    """Translate `src_lines` (scoring `tgt_lines` when given) as translate.py does: the input rules
    of the checkpoint and `opt` (each logged once; opt.max_length and opt.block_ngram_repeat are
    set to the resolved values), then Translator.translate (see there for on_record /
    record_lines; beam_history: a list filled with the -dump_beam entries). Returns its results: per
    line, n_best Translation."""
    from onmt.translate.input_rules import prepare_lines, resolve
    from onmt.translate.translator import Translator
    rules, notes = resolve(opt, session.model_opt, session.preprocess)
    for note in notes:
        logger.info(note)
    opt.max_length, opt.block_ngram_repeat = rules.max_length, rules.block_ngram_repeat
    if opt.min_length > opt.max_length:
        raise UserError(f"-min_length {opt.min_length} is above the maximum prediction length {opt.max_length} "
                        "(the checkpoint's rule: give -max_length)")
    translator = Translator.from_opt(opt, session.model, session.vocabs, show_progress=show_progress,
                                     beam_history=beam_history, profiler=profiler)
    return translator.translate(prepare_lines(src_lines, rules.lower, rules.src_trunc),
                                prepare_lines(tgt_lines, rules.lower, rules.tgt_trunc),
                                on_record=on_record, record_lines=record_lines)
