"""The Python API: summarize text with a checkpoint, as translate.py does.

    from onmt import Summarizer
    s = Summarizer.load("model.pt", device="cpu")               # precision="int8" / "bf16": faster decoding
    s.summarize(["a long article ..."], beam_size=5)            # -> ["Its summary."] (readable text)
    s.summarize(texts, beam_size=5, return_details=True)       # -> [dict per text]

`summarize` takes translate.py's search options as keyword arguments, with its names and defaults
(beam_size=5, n_best=1, min_length=0, max_length, length_penalty="none", alpha=0.0,
coverage_penalty="none", beta=0.0, stepwise_penalty, block_ngram_repeat, avoid_trigram_repetition,
ignore_when_blocking, replace_unk, batch_size=30,
src_seq_length_trunc). An argument left out (or None) is "not given", exactly as an option left off
translate.py's command line: the checkpoint's preprocessing record then decides lowercasing, source
truncation, the prediction length limit and the model family's n-gram blocking
(onmt/translate/input_rules.py). The options are converted, updated and validated as translate.py's
(onmt/opts/, with no command line), and the text goes through the same code
(onmt/translate/session.py), so the summaries are those translate.py writes for the same lines.

With return_details=True, each text gets a dict: "summary" (str), "score" (float), "n_best"
(list of (summary, score), best first), and the inspection record of the best summary (the one
translate.py -attn_debug dumps, onmt/translate/records.py): "src", "pred", "ids", "attn",
"intra", "p_copy", "copied", "line".
"""
import torch

from onmt import opts

# keyword -> translate.py option; store_true options take a bool, nargs="+" ones a list
SEARCH_OPTIONS = ("beam_size", "n_best", "min_length", "max_length", "length_penalty", "alpha",
                  "coverage_penalty", "beta", "stepwise_penalty",
                  "block_ngram_repeat", "avoid_trigram_repetition", "ignore_when_blocking", "replace_unk",
                  "batch_size", "src_seq_length_trunc")


def translate_options(**kwargs):
    """translate.py's options for these keyword arguments (SEARCH_OPTIONS), without a command line: each
    value converted and checked as translate.py's parser does (opts.parse_values), then its update and
    validation; the arguments given count as given on the command line. Raises TypeError on an unknown
    keyword, onmt.opts.OptionError on an invalid value."""
    unknown = sorted(set(kwargs) - set(SEARCH_OPTIONS))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the search options are {', '.join(SEARCH_OPTIONS)}")
    opt = opts.parse_values(opts.translate_parser(), kwargs)
    opts.update_translate_opts(opt)
    opts.validate_translate_opts(opt)
    return opt


def check_texts(texts):
    """The documents of `texts` (an iterable of str); TypeError naming the first that is not a string
    (None, a number or bytes would otherwise be summarized as "None", "5", "b'...'")."""
    if isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a string or a list of strings, got {type(texts).__name__}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            hint = " (decode bytes first: text.decode('utf-8'))" if isinstance(t, (bytes, bytearray)) else ""
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str{hint}")
        yield t


class Summarizer:
    """A checkpoint loaded once, summarizing lists of texts (see the module docstring)."""

    def __init__(self, session, device):
        self.session, self.device = session, device

    @classmethod
    def load(cls, path, device="cpu", precision="fp32", compile=False):
        """The model of checkpoint `path` on `device` ("cpu", "cuda", "cuda:1" or a torch.device),
        decoding in `precision` (translate.py's -precision: "fp32", "bf16", "fp16" or "int8"; one
        OptionError where the device cannot run it fast); `compile`: translate.py's -compile (the mlp
        attention's scores through torch.compile). As translate.py does, the process then keeps
        freed memory for reuse (onmt/utils/memory.py: each decoding step's (rows x X) scores are not
        mapped afresh; without it int8 decoding ran ~15 % slower here)."""
        from onmt.translate.session import load_session
        from onmt.utils.memory import reuse_freed_memory_for
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise opts.OptionError(f"device={device!r}: {e}") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise opts.OptionError(f"device={str(device)!r}: CUDA is not available here; use device='cpu'")
        if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
            raise opts.OptionError(f"device={str(device)!r}: this machine has {torch.cuda.device_count()} GPU(s)")
        session = load_session(path, device, precision, compile)
        reuse_freed_memory_for(device)
        return cls(session, device)

    @property
    def model(self):
        return self.session.model

    @property
    def vocabs(self):
        return self.session.vocabs

    def summarize(self, texts, *, return_details=False, progress=False, detokenize=True, **search):
        """Summaries of `texts` (a list of strings, one document each; or one string).

        Returns per text its summary (a string; a list of n_best strings when n_best > 1), or with
        return_details=True a dict (module docstring). A single string in gives a single result.
        progress: show translate.py's progress bar / log lines. detokenize: readable text (he's, (,
        sentence case where the model writes lowercased text: onmt/prepare/detokenize.py), as
        translate.py -detokenize writes; False: the model's tokens, as translate.py writes by default
        (what ROUGE scripts compare).
        """
        from onmt.translate.session import translate_lines
        from onmt.translate.translator import Callbacks
        if progress:   # the progress lines and bar go through the toolkit's logger: give it stderr
            from onmt.utils.logging import init_logger, logger
            if not logger.handlers:
                init_logger()
        single = isinstance(texts, str)
        lines = [texts] if single else list(check_texts(texts))
        # one line each, whatever the whitespace; a byte-order mark is no part of the first word
        lines = [" ".join(line.replace("\ufeff", " ").split()) for line in lines]
        opt = translate_options(**search)
        records = {}

        def keep(record):
            records[record["line"]] = record
        results = translate_lines(opt, self.session, lines, show_progress=progress,
                                  callbacks=Callbacks(on_record=keep) if return_details else None)
        out, write = [], self.session.readable() if detokenize else " ".join
        for i, nbest in enumerate(results):
            texts_i = [write(t.tokens) for t in nbest]
            if not return_details:
                out.append(texts_i[0] if opt.n_best == 1 else texts_i)
                continue
            details = dict(records[i])
            details.update(summary=texts_i[0], score=float(nbest[0].score),
                           n_best=[(s, float(t.score)) for s, t in zip(texts_i, nbest)])
            out.append(details)
        return out[0] if single else out
