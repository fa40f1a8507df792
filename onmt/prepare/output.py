"""What every corpus preparer shares: the detected corpus (`Corpus`), the choice of splits, and the
all-or-nothing writer of `-output/{split}.{src,tgt}.txt` with progress lines.

Every output file is written to a temporary name and all of them are renamed together once every
split is complete; on an error or ^C / SIGTERM the temporary files are removed (and the -output
folder too when this run created it and it is still empty), so a failed run leaves nothing behind.
"""
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field

from onmt import opts
from onmt.errors import UserError
from onmt.utils.files import AtomicFile, write_text_atomic
from onmt.utils.logging import init_logger


@dataclass
class Corpus:
    """A detected corpus: its form, and per split a description of its files and a function that
    yields (source line, target line), already cleaned."""
    form: str
    description: str
    splits: dict = field(default_factory=dict)      # split -> (list of file names, examples())
    notes: list = field(default_factory=list)       # things worth a log line (ignored files, ...)
    # more of how the text was made (prepare.json): {"digits": "#"}
    text: dict = field(default_factory=dict)


def _terminate(signum, frame):
    raise KeyboardInterrupt     # unwinds through the writer, which removes its temporary files


def start(opt):
    """Logging on stdout (stderr is for the one-line error), SIGTERM cleans up like ^C."""
    logger = init_logger(opt.log_file)
    for h in logger.handlers:
        if type(h) is logging.StreamHandler:
            h.setStream(sys.stdout)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    return logger


def chosen_splits(corpus, wanted, folder, logger):
    """The splits of `wanted` that `corpus` holds, in order; logs the absent ones."""
    present = [s for s in wanted if s in corpus.splits]
    if not present:
        raise UserError(f"{folder} holds none of the splits asked for ({' '.join(wanted)}); "
                        f"it holds: {' '.join(corpus.splits) or 'none'}")
    for s in wanted:
        if s not in corpus.splits:
            logger.info(f"{s}: not in {folder}, not written")
    for s in corpus.splits:
        if s not in wanted:
            logger.info(f"{s}: in {folder} but not asked for (-splits), not written")
    return present


def check_not_into_input(path, input_folder):
    """UserError when the output file `path` is a link into `input_folder`: the link's target, a
    file of the corpus, would be replaced by the prepared text (AtomicFile writes a link's
    target)."""
    if input_folder is None or not os.path.islink(path):
        return
    real, inside = os.path.realpath(path), os.path.realpath(input_folder)
    if os.path.commonpath([real, inside]) == inside:
        raise UserError(f"-output {path} is a link to {real}, inside -input {input_folder}: "
                        "writing it would replace the corpus; remove the link or give another "
                        "-output")


class Outputs:
    """Files of `folder` written aside (files.AtomicFile), renamed together by commit(); removed on
    exit without commit."""

    def __init__(self, folder, input_folder=None):
        self.folder, self.input_folder = folder, input_folder
        self.created = False
        self.files = []                     # AtomicFile per file opened

    def __enter__(self):
        if not os.path.isdir(self.folder):
            if os.path.exists(self.folder):
                raise UserError(f"-output {self.folder} exists and is not a folder")
            os.makedirs(self.folder)
            self.created = True
        return self

    def open(self, name):
        """A text file (UTF-8, "\\n" line ends) that becomes `folder/name` at commit()."""
        path = os.path.join(self.folder, name)
        check_not_into_input(path, self.input_folder)
        out = AtomicFile(path)
        self.files.append(out)
        return out.file

    def commit(self):
        for out in self.files:              # every file complete before the first is renamed
            out.close()
        for out in self.files:
            out.commit()
        self.files = []

    def __exit__(self, *exc):
        for out in self.files:
            out.discard()
        self.files = []
        if self.created and exc[0] is not None and not os.listdir(self.folder):
            os.rmdir(self.folder)
        return False


PROGRESS_SECONDS = 10.0   # a progress line at least this often, whatever -report_every says


def write_corpus(corpus, splits, folder, report_every, logger, input_folder=None):
    """Write `folder/{split}.{src,tgt}.txt` for every split; returns {split: number of examples}."""
    counts = {}
    with Outputs(folder, input_folder) as out:
        for split in splits:
            names, examples = corpus.splits[split]
            logger.info(f"{split}: reading {', '.join(names)}")
            src, tgt = out.open(f"{split}.src.txt"), out.open(f"{split}.tgt.txt")
            n = empty_src = empty_tgt = 0
            last = start = time.monotonic()
            for s, t in examples():
                src.write(s + "\n")
                tgt.write(t + "\n")
                n += 1
                empty_src += not s
                empty_tgt += not t
                now = time.monotonic()   # also every PROGRESS_SECONDS: raw articles tokenize slowly
                if n % report_every == 0 or now - last >= PROGRESS_SECONDS:
                    logger.info(f"{split}: {n} examples ({n / max(now - start, 1e-9):.0f}/s)")
                    last = now
            empties = ", ".join(f"{k} {v} empty"
                                for k, v in (("source", empty_src), ("target", empty_tgt)) if v)
            logger.info(f"{split}: {n} examples"
                        + (f" ({empties}, kept to keep the lines aligned)" if empties else ""))
            counts[split] = n
        out.commit()
    for split in splits:
        logger.info(f"wrote {os.path.join(folder, split)}.src.txt and .tgt.txt: "
                    f"{counts[split]} lines each")
    return counts


def run(opt, corpus, logger):
    """Log the detected form, write the chosen splits."""
    logger.info(f"format: {corpus.form} ({corpus.description}) in {opt.input}")
    for note in corpus.notes:
        logger.info(note)
    splits = chosen_splits(corpus, opt.splits, opt.input, logger)
    for name in [TEXT_RECORD] + [f"{split}.{side}.txt" for split in splits
                                 for side in ("src", "tgt")]:
        # before anything is read
        check_not_into_input(os.path.join(opt.output, name), opt.input)
    result = write_corpus(corpus, splits, opt.output, opt.report_every, logger, opt.input)
    write_text_record(opt.output, opt, corpus.text)
    return result


TEXT_RECORD = "prepare.json"


def write_text_record(folder, opt, extra=None):
    """`folder/prepare.json`: how the text was made ({"tokenize": "ptb" or "none", "lower": bool},
    plus `extra`: {"digits": "#"} where every digit of the text is written # as in Gigaword), which
    preprocess.py carries into meta.json and the checkpoints, so that translate.py and the API
    prepare raw input the same way. Every published form of CNN/DM and Gigaword is PTB-style
    tokenized (by its authors or here), so "ptb" unless -tokenize none."""

    record = {"tokenize": "none" if opt.tokenize == "none" else "ptb", "lower": bool(opt.lower),
              **(extra or {})}
    write_text_atomic(os.path.join(folder, TEXT_RECORD), json.dumps(record) + "\n",
                      f"-output {folder}")


def prepare_main(parser, detect, argv=None):
    """The whole of a prepare tool: parse and check `parser`'s options, find the corpus with
    `detect(folder, format, lower, tokenize)`, log its form and write the chosen splits."""
    opt = opts.parse_with_given(parser, argv)
    opts.update_prepare_opts(opt)
    opts.validate_prepare_opts(opt)
    logger = start(opt)
    return run(opt, detect(opt.input, opt.format, opt.lower, opt.tokenize), logger)

