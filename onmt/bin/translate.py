"""Translate with a checkpoint: `translate.py -model M.pt -src test.src -output pred.txt [...]`.

Writes one line per input line (n_best consecutive lines per input line when -n_best > 1), to a
temporary file renamed to -output when complete. With -attn_debug FILE, the inspection record of
every line (onmt/translate/records.py) goes into FILE; with -attn_plot DIR, the first -attn_plot_n
lines are plotted into DIR (onmt/inspection/plots.py). With -dump_beam FILE, the beam search's
history goes into FILE (`write_beam_dump`). Output paths are checked before any work.
The Python API (onmt/api.py) shares this path: onmt/translate/session.py.
"""
import json
import os
import random
import sys
import time

import torch

from onmt import opts
from onmt.bin.common import start
from onmt.bin.evaluate import NAMES
from onmt.errors import UserError
from onmt.evaluation import METRICS, score, summarize
from onmt.inputters.corpus import check_line_counts, read_lines
from onmt.inspection.plots import plot_records, require_matplotlib
from onmt.translate.records import DumpWriter
from onmt.translate.session import (  # noqa: F401 (re-exported)
    load_session,
    model_from_checkpoint,
    translate_lines,
)
from onmt.translate.translator import Callbacks
from onmt.utils.cli import run_main
from onmt.utils.files import (
    check_distinct_outputs,
    check_not_inputs,
    check_output,
    check_output_folder,
    write_lines_atomic,
    write_text_atomic,
)
from onmt.utils.logging import logger
from onmt.utils.profiling import Profiler, trace_path


def load_model(path, device):
    """(model in eval mode on `device`, Vocabs) from a checkpoint."""
    session = load_session(path, device)
    return session.model, session.vocabs


def report_rouge(pred_lines, ref_lines):
    """Log ROUGE (built-in scorer, ROUGE-1.5.5's standard settings) of the predictions against
    -tgt."""
    res = summarize(score(pred_lines, ref_lines))
    logger.info("ROUGE (P/R/F1) against -tgt: " + "; ".join(
        f"{NAMES[m]} {res[m]['p']:.2f}/{res[m]['r']:.2f}/{res[m]['f']:.2f}" for m in METRICS))
    return res


def check_outputs(opt):
    """Every output path writable and none of them an input, -attn_plot's matplotlib there: one line
    before any work."""
    check_not_inputs(outputs(opt), inputs(opt))
    check_distinct_outputs(outputs(opt))
    for what, path in outputs(opt).items():
        if path:
            check_output(path, f"{what} {path}", OUTPUT_KINDS[what], opt.overwrite)
    if opt.attn_plot:
        check_output_folder(opt.attn_plot, f"-attn_plot {opt.attn_plot}")
        require_matplotlib("-attn_plot")


# what each output is (utils/output_rule.py KINDS): an existing file of another kind is refused
OUTPUT_KINDS = {"-output": "text", "-attn_debug": "dump", "-dump_beam": "json",
                "-profile_trace": "json", "-log_file": "log"}


def outputs(opt):
    """The files translate.py writes, no two of them one file."""
    return {"-output": opt.output, "-attn_debug": opt.attn_debug, "-dump_beam": opt.dump_beam,
            "-profile_trace": profile_trace(opt) if opt.profile else None,
            "-log_file": opt.log_file}


def inputs(opt):
    """The files translate.py reads, which no output may be."""
    return {"-model": opt.model, "-src": None if opt.src == "-" else opt.src, "-tgt": opt.tgt,
            "-config": vars(opt).get("config")}


def profile_trace(opt):
    """-profile's trace: -profile_trace, else the -output path without extension + _profile.json."""
    return trace_path(opt, os.path.splitext(opt.output)[0])


def main(argv=None):
    opt, device = start(opts.translate_parser(), opts.update_translate_opts,
                        opts.validate_translate_opts, argv, inputs=inputs, outputs=outputs)
    torch.manual_seed(opt.seed)
    random.seed(opt.seed)
    check_outputs(opt)

    # split on "\n" only, as preprocessing does
    src_lines = read_stdin_lines() if opt.src == "-" else list(read_lines(opt.src, "-src"))
    tgt_lines = list(read_lines(opt.tgt, "-tgt")) if opt.tgt else None
    if tgt_lines is not None:
        check_line_counts("-src", len(src_lines), "-tgt", len(tgt_lines))
    session = load_session(opt.model, device, opt.precision, opt.compile)
    beam_history = [] if opt.dump_beam else None
    began = time.perf_counter()
    with Inspection(opt) as inspection:
        profiler = None
        if opt.profile:
            profiler = Profiler(opt.profile, profile_trace(opt), device, "translation batches")
        callbacks = Callbacks(beam_history=beam_history, profiler=profiler,
                              **inspection.translate_kwargs())
        results = translate_lines(opt, session, src_lines, tgt_lines, callbacks=callbacks)
    if opt.report_time:
        log_time(time.perf_counter() - began, len(src_lines))
    write = session.readable() if opt.detokenize else " ".join
    write_lines_atomic(opt.output, [write(t.tokens) + (f"\t{t.score}" if opt.with_score else "")
                                    for nbest in results for t in nbest], f"-output {opt.output}")
    if beam_history is not None:
        write_beam_dump(opt.dump_beam, opt, beam_history)
    logger.info(f"Translated {len(src_lines)} lines into {opt.output}")
    inspection.finish()
    if opt.report_rouge:
        report_rouge([" ".join(nbest[0].tokens) for nbest in results], tgt_lines)
    return results


def read_stdin_lines():
    """-src -: the lines of the standard input (UTF-8 text, split on "\n" as files are); one
    UserError for bytes that are no text."""
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"-src -: the standard input is not UTF-8 text (byte {e.start})") from None
    if "\0" in text:
        raise UserError("-src -: a NUL byte in the standard input, not text")
    lines = text.removeprefix("\ufeff").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def log_time(seconds, n_lines):
    """-report_time: upstream OpenNMT-py's lines, the time of the model's load excluded."""
    logger.info(f"Total translation time (s): {seconds:.3f}")
    logger.info(f"Average translation time (s): {seconds / max(n_lines, 1):.6f}")
    logger.info(f"Sentences per second: {n_lines / seconds if seconds > 0 else 0.0:.2f}")


def write_beam_dump(path, opt, examples):
    """-dump_beam: one JSON object, written atomically:
    {"beam_size": K, "n_best": N, "examples": [{"line": 0-based input line, "src": [source words],
     "steps": [{"tokens": [K ids, extended vocabulary], "words": [K words], "scores": [K running
     scores, null for -inf], "backpointers": [K indices into the previous step's K]}, ...]}, ...]}.
    Step t holds the K hypotheses kept after the t-th topk (a hypothesis ending in </s> at step t
    appears there, then its slot is emptied); an empty input line has no steps. Scores are sums of
    log-probabilities (minus the coverage penalty with -stepwise_penalty), before length penalty."""
    write_text_atomic(path, json.dumps({"beam_size": opt.beam_size, "n_best": opt.n_best,
                                        "examples": examples}),
                      f"-dump_beam {path}")
    logger.info(f"Beam search history of {len(examples)} lines in {path}")


class Inspection:
    """-attn_debug (records streamed into the dump) and -attn_plot (the first -attn_plot_n lines'
    records kept, plotted by `finish()`). A with-block around the translation: the dump is renamed
    into place when the block completes, removed on an error."""

    def __init__(self, opt):
        self.opt = opt
        self.plotting = bool(opt.attn_plot)
        self.plot_n = opt.attn_plot_n or None          # None: every example
        self.kept = []
        self.writer = None

    def __enter__(self):
        if self.opt.attn_debug:
            self.writer = DumpWriter(self.opt.attn_debug)
        return self

    def _plotted(self, line):
        return self.plotting and (self.plot_n is None or line < self.plot_n)

    def translate_kwargs(self):
        if self.writer is None and not self.plotting:
            return {}
        every = self.writer is not None or self.plot_n is None
        return {"on_record": self.add, "record_lines": None if every else range(self.plot_n)}

    def add(self, record):
        if self.writer is not None:
            self.writer.add(record)
        if self._plotted(record["line"]):
            self.kept.append(record)

    def __exit__(self, exc_type, *rest):
        if self.writer is not None:
            self.writer.__exit__(exc_type, *rest)
        return False

    def finish(self):
        """Plot the kept records; log what was written."""
        if self.writer is not None:
            logger.info(f"Attention and p(copy) of {self.writer.n} examples in "
                        f"{self.opt.attn_debug}")
        if self.plotting:
            paths = plot_records(self.kept, self.opt.attn_plot, self.plot_n)
            logger.info(f"Plotted {len(paths)} examples into {self.opt.attn_plot}")


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
