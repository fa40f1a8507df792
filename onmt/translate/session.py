"""What translate.py and the Python API (onmt/api.py) share: a checkpoint loaded for translation and
the translation of text lines with the checkpoint's test-time input rules (input_rules.py).

    session = load_session("model.pt", torch.device("cpu"),
                           precision="fp32")   # or bf16 / fp16 / int8
    results = translate_lines(opt, session, src_lines)     # opt: translate.py's options
"""
import argparse
from functools import partial
from typing import NamedTuple, Optional

from onmt import opts
from onmt.errors import OptionError, UserError
from onmt.inputters.vocab import Vocabs
from onmt.prepare.detokenize import detokenize
from onmt.translate.input_rules import data_target_limit, prepare_lines, resolve
from onmt.utils.logging import logger


class Session(NamedTuple):
    model: object                # in eval mode, on its device
    vocabs: Vocabs
    model_opt: argparse.Namespace   # the checkpoint's model options, updated and validated
    preprocess: Optional[dict]   # the checkpoint's preprocessing record (None: an older checkpoint)

    def readable(self):
        """tokens -> text for a reader (onmt/prepare/detokenize.py), sentence-cased when the model
        writes lowercased text (its target vocabulary has no capital letter); decided once, here."""

        return partial(detokenize, sentence_case=self.lowercased())

    def lowercased(self):
        return bool((self.preprocess or {}).get("lower")) or not any(
            w != w.lower() for w in self.vocabs.tgt.itos[:2000] if not w.startswith("<"))


def checkpoint_model_options(saved, name=None):
    """The model options of a checkpoint (`saved`: its "opt" dict; `name`: its path, for the
    messages) as train.py resolved them, with the defaults of the options added since it was written
    (onmt/opts/update.py), validated as train.py validates them. A model option it lacks otherwise,
    or an impossible one, is one UserError naming the checkpoint."""
    where = f"checkpoint {name}" if name else "the checkpoint"
    lacking = opts.lacking_model_options(saved)
    if lacking:
        raise UserError(f"{where} is damaged or from another program: its options lack "
                        f"{', '.join(lacking)}")
    model_opt = argparse.Namespace(**saved)
    opts.update_saved_model_opts(model_opt)
    try:
        opts.check_saved_model_types(saved)
        opts.validate_model_opts(model_opt)
    except OptionError as e:
        raise UserError(f"{where} is damaged or from another program: its options are "
                        f"invalid: {e}") from None
    return model_opt


def model_from_checkpoint(ckpt, device, name=None, execution=None):
    """(model in eval mode on `device`, built with `execution` (onmt/execution.py; None: the
    default), Vocabs, the model's options) from a loaded checkpoint (`name`: its path, for the
    messages)."""
    from onmt.model_builder import build_model  # start-up time: the model's modules import torch
    try:
        vocabs = Vocabs.from_dict(ckpt["vocab"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(f"checkpoint {name or ''} is damaged: its vocabulary cannot be read "
                        f"({e!r})") from None
    model_opt = checkpoint_model_options(ckpt["opt"], name)
    model = build_model(model_opt, vocabs, ckpt["model"], checkpoint_name=name, own_options=True,
                        device=device, execution=execution)
    model.eval()
    return model, vocabs, model_opt


def load_session(path, device, precision="fp32", compile=False):
    """The Session of the checkpoint at `path`, its model on `device`, decoding in `precision`
    (-precision); `compile` (-compile): its mlp attention scores through torch.compile, compiled on
    first use; both chosen by the model's Execution (onmt/execution.py), which build_model
    logs, and checked once, before, by the caller (opts.check_precision and opts.check_compile:
    translate.py's and onmt_tune_decoding's validation, Summarizer.load). `path` a list of several
    checkpoints: their ensemble (ensemble.py), one vocabulary (a UserError naming the first that
    differs), the first one's options and input rules."""
    # start-up time: these import torch
    from onmt.execution import Execution
    from onmt.utils.checkpoint import load_checkpoint
    paths = list(path) if isinstance(path, (list, tuple)) else [path]
    loaded = []
    for p in paths:
        ckpt = load_checkpoint(p, device="cpu")
        model, vocabs, model_opt = model_from_checkpoint(
            ckpt, device, name=p, execution=Execution.for_decoding(precision, compile))
        loaded.append((model, vocabs, model_opt, ckpt.get("preprocess")))
        del ckpt
    if len(loaded) == 1:
        return Session(*loaded[0])
    # start-up time: it imports torch
    from onmt.translate.ensemble import Ensemble, check_same_vocabularies
    problem = check_same_vocabularies([(p, v) for p, (_, v, _, _) in zip(paths, loaded)])
    if problem:
        raise UserError(problem)
    logger.info(f"Ensemble of {len(paths)} models: {', '.join(map(str, paths))} (each step's "
                "distribution the mean of theirs; the first one's options and input rules)")
    model, vocabs, model_opt, preprocess = loaded[0]
    return Session(Ensemble([m for m, _, _, _ in loaded]).eval(), vocabs, model_opt, preprocess)


def translate_lines(opt, session, src_lines, tgt_lines=None, *, callbacks=None, show_progress=True,
                    log_notes=True, first_line=0):
    """Translate `src_lines` (scoring `tgt_lines` when given) as translate.py does: translate.py's
    options `opt` (updated and validated, never changed) resolved for the checkpoint
    (opts.resolve_translate_run: truncation, -max_length, -block_ngram_repeat) and its input rules
    (input_rules.py), each logged once, then Translator.translate with `callbacks` (a
    translator.Callbacks: inspection records, the -dump_beam history, the profiler). Returns its
    results: per line, n_best Translation. `log_notes` False: the rules are not logged (the API's
    second and later batches of one stream). `first_line`: the index of src_lines[0] in a stream
    (the API's), whose batches then sample (-random_sampling_*) from -seed + first_line, not all
    from the same random numbers."""
    from onmt.translate.translator import Translator  # start-up time: it imports torch
    run, option_notes = opts.resolve_translate_run(opt, session.model_opt, session.preprocess,
                                                   data_target_limit(session.preprocess))
    rules, notes = resolve(run, session.preprocess)
    for note in notes + option_notes if log_notes else []:
        logger.info(note)
    opts.validate_translate_run(run)
    translator = Translator.from_opt(run, session.model, session.vocabs,
                                     show_progress=show_progress, seed=run.seed + first_line)

    def prepare(lines, trunc):
        return prepare_lines(lines, rules.lower, trunc, rules.tokenize, rules.mask_digits)
    return translator.translate(prepare(src_lines, rules.src_trunc),
                                prepare(tgt_lines, rules.tgt_trunc), callbacks=callbacks)
