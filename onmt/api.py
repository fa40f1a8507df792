"""The Python API: summarize text with a checkpoint, as translate.py does.

    from onmt import Summarizer
    s = Summarizer.load("model.pt", device="cpu")  # precision="int8" / "bf16": faster decoding
    s.summarize(["a long article ..."], beam_size=5)       # -> ["Its summary."] (readable text)
    s.summarize(texts, beam_size=5, return_details=True)   # -> [dict per text]
    for summary in s.summarize(open("articles.txt")):      # an iterator in: an iterator out, read
        ...                                                # batch_size texts at a time

`summarize` takes translate.py's search options as keyword arguments, with its names and defaults
(beam_size=5, n_best=1, min_length=0, max_length, length_penalty="none", alpha=0.0,
coverage_penalty="none", beta=0.0, stepwise_penalty, block_ngram_repeat, avoid_trigram_repetition,
ignore_when_blocking, replace_unk, ban_unk_token, random_sampling_topk=1, random_sampling_topp=0.0,
random_sampling_temp=1.0, batch_size=30, src_seq_length_trunc, seed=829 (the samples'; an
iterator's batches draw from seed + the index of their first text): SEARCH_OPTIONS), or
Hugging Face generate()'s names for them (num_beams, num_return_sequences, max_new_tokens,
min_new_tokens, no_repeat_ngram_size, do_sample, top_k, top_p, temperature, a number as
length_penalty: onmt/opts/api_names.py), each of its Python type (an int for beam_size, a bool
for a flag, a list of str for ignore_when_blocking: a TypeError naming the argument otherwise).
An argument left out (or None) is "not given", exactly as an option left off translate.py's
command line: the checkpoint's preprocessing record then decides tokenizing, lowercasing, source
truncation, the prediction length limit and the model family's n-gram blocking
(onmt/translate/input_rules.py). replace_unk left out follows `detokenize`: readable text has the
attended source word where the model predicts <unk>, as translate.py -detokenize writes. The
options are converted, updated and validated as translate.py's (onmt/opts/, with no command line),
and the text goes through the same code (onmt/translate/session.py), so the summaries are those
translate.py writes for the same lines.

With return_details=True, each text gets a dict: "summary" (str), "score" (float), "n_best"
(list of (summary, score), best first), and the inspection record of the best summary (the one
translate.py -attn_debug dumps, onmt/translate/records.py): "src", "pred", "ids", "attn",
"intra", "p_copy", "copied", "line".

A library leaves the process as it found it: loading sets no allocator option (translate.py's
`reuse_freed_memory`, onmt/utils/memory.py, only with
`Summarizer.load(..., reuse_freed_memory=True)`), and `progress=True` gives the toolkit's logger a
stderr handler for the call only.
"""
import contextlib
import itertools
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

import torch

from onmt import opts
from onmt.opts import api_names
from onmt.translate.translator import Callbacks
from onmt.utils.logging import init_logger, logger
from onmt.utils.memory import reuse_freed_memory_for

# keyword -> translate.py option of that name (derived from its declarations: onmt/opts/
# api_names.py); store_true options take a bool, nargs="+" ones a list; Hugging Face's names too
SEARCH_OPTIONS = api_names.api_options()

# per text: its summary, its n_best, or its details
Summary = Union[str, List[str], Dict[str, Any]]


def translate_options(**kwargs: Any):
    """translate.py's options for these keyword arguments (SEARCH_OPTIONS, or Hugging Face's names
    for them: api_names.from_hf), without a command line: each value checked for its Python type
    (`check_types`), converted and checked as translate.py's parser does (opts.parse_values), then
    its update and validation; the arguments given count as given on the command line. Raises
    TypeError on an unknown keyword (or a Hugging Face name with no counterpart here, or given with
    its counterpart) or a value of the wrong type, ValueError on a Hugging Face setting with no
    counterpart, onmt.opts.OptionError on an invalid value."""
    unknown = sorted(set(kwargs) - set(SEARCH_OPTIONS) - set(api_names.HF_NAMES)
                     - set(api_names.HF_SAMPLING) - set(api_names.HF_UNSUPPORTED) - {"do_sample"})
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; "
                        f"the search options are {', '.join(SEARCH_OPTIONS)} "
                        f"(or Hugging Face's {', '.join(api_names.HF_NAMES)}, do_sample, "
                        f"{', '.join(api_names.HF_SAMPLING)})")
    parser = opts.translate_parser()
    # Hugging Face's names checked as their counterparts, under their own names
    counterpart = {**api_names.HF_NAMES, **api_names.HF_SAMPLING}
    check_types(parser, {k: v for k, v in kwargs.items() if k in counterpart}, counterpart)
    kwargs = api_names.from_hf(kwargs)
    check_types(parser, kwargs)
    opt = opts.parse_values(parser, kwargs)
    opts.update_translate_opts(opt)
    opts.validate_translate_opts(opt)
    return opt


def check_types(parser, values, options=None):
    """TypeError naming the first keyword of `values` whose value is not of its option's Python type
    (onmt/opts/validate.py value_type_problem: an int option takes an int, beam_size="5" is refused,
    as is True; a float option an int or a float; a flag a bool; a list option a list or tuple of
    str; a choice a str); None is "not given". `options`: {keyword: its option's name} where they
    differ (Hugging Face's names)."""
    for name, value in values.items():
        option = (options or {}).get(name, name)
        want = None if value is None else opts.value_type_problem(
            parser._option_string_actions[f"-{option}"], value)
        if want is not None:
            raise TypeError(f"{name} must be {want}, got {type(value).__name__} {value!r}")


def check_texts(texts: Iterable[str], start: int = 0) -> Iterator[str]:
    """The documents of `texts` (an iterable of str), one at a time; TypeError naming the first that
    is not a string (None, a number or bytes would otherwise be summarized as "None", "5",
    "b'...'"); `start`: the index of the first."""
    if isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TypeError("texts must be a string or an iterable of strings, "
                        f"got {type(texts).__name__}")
    for i, t in enumerate(texts, start):
        if not isinstance(t, str):
            hint = (" (decode bytes first: text.decode('utf-8'))"
                    if isinstance(t, (bytes, bytearray)) else "")
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str{hint}")
        bad = _not_text(t)
        if bad:
            raise ValueError(f"texts[{i}]: {bad}")
        yield t


def _not_text(t):
    """What makes the str `t` no text (a NUL, as the file readers refuse; a lone surrogate, which
    UTF-8 cannot encode: a UnicodeEncodeError from deep inside before), or None."""
    nul = t.find("\0")
    if nul >= 0:
        return f"a NUL character at position {nul}, not text"
    try:
        t.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"a lone surrogate {t[e.start]!r} at position {e.start}, "
                "not text (decode with errors='replace')")
    return None


@contextlib.contextmanager
def _progress_logging(progress):
    """With `progress`, the toolkit's logger writes to stderr for the block when it has no handler
    of its own; its handlers, level and propagation are as before after the block."""
    if not progress or logger.handlers:
        yield
        return
    saved = (list(logger.handlers), logger.level, logger.propagate)
    init_logger()
    try:
        yield
    finally:
        for handler in logger.handlers:
            if handler not in saved[0]:
                handler.close()
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]


def _one_line(text):
    """One line, whatever the whitespace; a byte-order mark is no part of the first word."""
    return " ".join(text.replace("\ufeff", " ").split())


class Summarizer:
    """A checkpoint loaded once, summarizing texts (see the module docstring)."""

    def __init__(self, session, device: torch.device, path: Optional[str] = None):
        self.session, self.device, self.path = session, device, path

    def __repr__(self) -> str:
        family = getattr(self.session.model_opt, "model_family", "?")
        return (f"Summarizer({self.path!r}, model_family={family!r}, device={str(self.device)!r}, "
                f"vocab={len(self.vocabs.src.itos)}/{len(self.vocabs.tgt.itos)})")

    @classmethod
    def load(cls, path: Union[str, os.PathLike, List[Union[str, os.PathLike]]],
             device: Union[str, torch.device] = "cpu",
             precision: str = "fp32", compile: bool = False,
             reuse_freed_memory: bool = False) -> "Summarizer":
        """The model of checkpoint `path` (a list of checkpoints: their ensemble, as translate.py
        -model A.pt B.pt; or a model released by onmt_release_model: its .pt file or its
        safetensors folder) on `device` ("cpu", "cuda", "cuda:1" or a torch.device),
        decoding in `precision` (translate.py's -precision: "fp32", "bf16", "fp16" or "int8"; one
        OptionError where the device cannot run it fast); `compile`: translate.py's -compile (the
        mlp attention's scores through torch.compile). `reuse_freed_memory`: as translate.py does,
        have the C library keep freed memory for reuse (onmt/utils/memory.py: each decoding step's
        (rows x X) scores are not mapped afresh; without it int8 decoding ran ~15 % slower here); a
        setting of the whole process, so off unless asked for."""
        # looked up on its module when called: the tests replace it there
        from onmt.translate.session import load_session
        several = isinstance(path, (list, tuple))
        if not all(isinstance(p, (str, os.PathLike)) for p in (path if several else [path])) or (
                several and not path):
            raise TypeError("path must be a str or a path (or a list of them: an ensemble), got "
                            f"{type(path).__name__}")
        for name, value, kind in (("precision", precision, str), ("compile", compile, bool),
                                  ("reuse_freed_memory", reuse_freed_memory, bool)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} must be a {kind.__name__}, "
                                f"got {type(value).__name__} {value!r}")
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise opts.OptionError(f"device={device!r}: {e}") from None
        # mps, xla, meta...: torch's own error came from deep inside
        if device.type not in ("cpu", "cuda"):
            raise opts.OptionError(f"device={str(device)!r}: "
                                   "this toolkit runs on 'cpu' or 'cuda' devices")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise opts.OptionError(f"device={str(device)!r}: "
                                   "CUDA is not available here; use device='cpu'")
        if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
            raise opts.OptionError(f"device={str(device)!r}: "
                                   f"this machine has {torch.cuda.device_count()} GPU(s)")
        # load_session trusts them: checked here, once
        opts.check_precision(precision, device.type)
        if compile:
            opts.check_compile(device.type)
        path = [os.fspath(p) for p in path] if several else os.fspath(path)
        session = load_session(path, device, precision, compile)
        if reuse_freed_memory:
            reuse_freed_memory_for(device)
        return cls(session, device, path)

    @property
    def model(self) -> torch.nn.Module:
        return self.session.model

    @property
    def vocabs(self):
        return self.session.vocabs

    def summarize(self, texts: Union[str, Iterable[str]], *, return_details: bool = False,
                  progress: bool = False, detokenize: bool = True,
                  **search: Any) -> Union[Summary, List[Summary], Iterator[Summary]]:
        """Summaries of `texts`: one string, a list (or tuple) of strings, or an iterator of strings
        (a generator, an open file), one document each.

        Returns per text its summary (a string; a list of n_best strings when n_best > 1), or with
        return_details=True a dict (module docstring). A single string in gives a single result, a
        list a list; an iterator gives an iterator, which reads `batch_size` texts (30 by default)
        at a time and yields their results before it reads more.
        progress: show translate.py's progress bar / log lines (on stderr, for this call).
        detokenize: readable text (he's, (, sentence case where the model writes lowercased text:
        onmt/prepare/detokenize.py; <unk> replaced by the attended source word unless
        replace_unk=False), as translate.py -detokenize writes; False: the model's tokens, as
        translate.py writes by default (what ROUGE scripts compare).
        """
        for name, value in (("return_details", return_details), ("progress", progress),
                            ("detokenize", detokenize)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
        if search.get("replace_unk") is None:
            search["replace_unk"] = detokenize
        opt = translate_options(**search)
        if isinstance(texts, str):
            with _progress_logging(progress):
                return self._summarize([_one_line(texts)], opt, return_details, progress,
                                       detokenize)[0]
        if isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
            raise TypeError("texts must be a string or an iterable of strings, "
                            f"got {type(texts).__name__}")
        # a list, a tuple: read at once
        if iter(texts) is not texts and hasattr(texts, "__len__"):
            lines = [_one_line(t) for t in check_texts(texts)]
            with _progress_logging(progress):
                return self._summarize(lines, opt, return_details, progress, detokenize)
        return self._stream(check_texts(texts), opt, return_details, progress, detokenize)

    def _stream(self, texts, opt, return_details, progress, detokenize):
        """The results of an iterator of texts, `opt.batch_size` texts at a time."""
        with _progress_logging(progress):
            start = 0
            while True:
                lines = [_one_line(t) for t in itertools.islice(texts, opt.batch_size)]
                if not lines:
                    return
                yield from self._summarize(lines, opt, return_details, progress, detokenize, start)
                start += len(lines)

    def _summarize(self, lines, opt, return_details, progress, detokenize, start=0):
        """The results of `lines` (a list of one-line texts; `start`: the index of the first, for
        the details' "line" and for logging the input rules once)."""
        # looked up on its module when called: the tests replace it there
        from onmt.translate.session import translate_lines
        records = {}

        def keep(record):
            records[record["line"]] = record
        results = translate_lines(opt, self.session, lines, show_progress=progress,
                                  log_notes=start == 0, first_line=start,
                                  callbacks=Callbacks(on_record=keep) if return_details else None)
        out, write = [], self.session.readable() if detokenize else " ".join
        for i, nbest in enumerate(results):
            texts_i = [write(t.tokens) for t in nbest]
            if not return_details:
                out.append(texts_i[0] if opt.n_best == 1 else texts_i)
                continue
            details = dict(records[i], line=start + i)
            details.update(summary=texts_i[0], score=float(nbest[0].score),
                           n_best=[(s, float(t.score)) for s, t in zip(texts_i, nbest)])
            out.append(details)
        return out
