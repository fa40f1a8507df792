"""One logger for the toolkit; only rank 0 logs."""
import logging
import sys

logger = logging.getLogger("onmt")


def init_logger(log_file="", rank=0):
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    fmt = logging.Formatter("[%(asctime)s %(levelname)s] %(message)s", "%Y-%m-%d %H:%M:%S")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(fmt)
    logger.addHandler(handler)
    if log_file == "-":          # standard output, as for every other output of the toolkit
        out = logging.StreamHandler(sys.stdout)
        out.setFormatter(fmt)
        logger.addHandler(out)
    elif log_file:
        fh = logging.FileHandler(log_file)
        fh.setFormatter(fmt)
        logger.addHandler(fh)
    return logger
