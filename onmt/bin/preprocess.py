"""Text -> vocabulary + numericalized shards (`onmt_preprocess -train_src ... -save_data P`)."""
import logging
import signal
import sys

from onmt import opts
from onmt.errors import Terminated
from onmt.inputters.preprocess import check_inputs_survive, preprocess
from onmt.utils.cli import run_main
from onmt.utils.files import is_stream, write_text_atomic
from onmt.utils.logging import init_logger
from onmt.utils.memory import reuse_freed_memory
from onmt.utils.output_rule import check_replaceable


def _terminate(signum, frame):
    # a KeyboardInterrupt: unwinds through the writers, which remove their temporary files
    raise Terminated(signum)


def save_config_file(path, text):
    """-save_config: written whole or not at all (a stream written through); over an existing file
    only when it is a YAML mapping (the one output rule: never over a checkpoint, a dataset's file,
    a corpus)."""
    if not is_stream(path):
        check_replaceable(path, f"-save_config {path}", "yaml")
    write_text_atomic(path, text, f"-save_config {path}")


def main(argv=None):
    """Run preprocessing; returns None (console scripts exit with main()'s value). See
    load_vocabs."""
    opt = opts.parse_with_given(opts.preprocess_parser(), argv)
    opts.update_preprocess_opts(opt)
    opts.validate_preprocess_opts(opt)
    check_inputs_survive(opt)   # before the log is opened for appending
    logger = init_logger(opt.log_file)
    if opts.repeated_options(opt):
        logger.warning(opts.repeated_options(opt))
    if opt.save_config:
        opts.write_config(opt, opt.save_config, opts.preprocess_parser(), write=save_config_file)
        logger.info("wrote the options to %s", opt.save_config)
        return
    reuse_freed_memory()
    for h in logger.handlers:           # progress and summary on stdout: stderr is for errors only
        if type(h) is logging.StreamHandler:
            h.setStream(sys.stdout)
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) is signal.SIG_DFL:
            signal.signal(s, _terminate)
    preprocess(opt)


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
