"""One logger for the toolkit; only rank 0 logs.

Every line goes to standard error, and with -log_file to that file too (`-log_file -`: standard
output). A log file (or standard output) that fails a write (a full disk, a closed device) is
dropped at its first failure with one warning on standard error naming it and the error; the
command goes on, its log whole on standard error (Python's logging printed a `--- Logging error ---`
traceback for every line instead, and the command exited 0 with an empty log).
"""
import logging
import sys

logger = logging.getLogger("onmt")


class _DroppedOnFailure:
    """A log handler's failed write (an OSError) removes the handler from the logger and says so
    once on standard error; any other error is logging's own (a traceback: a bug)."""
    where = ""

    def handleError(self, record):
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            return super().handleError(record)
        if self not in logger.handlers:
            return
        logger.removeHandler(self)
        try:
            self.stream.close()   # its buffer cannot be written either
        except (OSError, ValueError, AttributeError):
            pass
        self.stream = None
        prog = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "onmt"
        try:
            sys.stderr.write(f"{prog}: warning: {self.where}: {error.strerror or error}; "
                             "logging to standard error only from here\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


class _LogFile(_DroppedOnFailure, logging.FileHandler):
    pass


class _LogStream(_DroppedOnFailure, logging.StreamHandler):
    pass


def init_logger(log_file="", rank=0):
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    fmt = logging.Formatter("[%(asctime)s %(levelname)s] %(message)s", "%Y-%m-%d %H:%M:%S")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(fmt)
    logger.addHandler(handler)
    if log_file == "-":          # standard output, as for every other output of the toolkit
        out = _LogStream(sys.stdout)
        out.where = "-log_file - (standard output)"
    elif log_file:
        try:
            out = _LogFile(log_file)
        except OSError as e:
            # a file that cannot be appended to (/proc/version: EINVAL): named, as run_main says
            e.filename = e.filename or log_file
            raise
        out.where = f"-log_file {log_file}"
    else:
        return logger
    out.setFormatter(fmt)
    logger.addHandler(out)
    return logger
