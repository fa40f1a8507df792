"""An ordered, bounded map over chunks, in worker processes or in-process.

`Pool.imap` would read its whole input ahead (its feeder thread drains the generator), which breaks
the memory bound of preprocessing; here at most `window` chunks are in flight at any time.
Worker state (e.g. a Numericalizer with a large dict) is handed over once, by fork, through
`initializer(*initargs)`, never pickled per task.
"""
import multiprocessing as mp
import signal
from collections import deque


def _worker_init(initializer, initargs):
    # The main process handles ^C and SIGTERM (and terminates the pool); a worker interrupted inside
    # the pool's queue would die holding its lock and hang the others.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)


def ordered_map(fn, items, workers=1, initializer=None, initargs=(), window=None):
    """Yield fn(item) for each item, in order, using `workers` processes when > 1 and fork exists."""
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        if initializer is not None:
            initializer(*initargs)
        for item in items:
            yield fn(item)
        return
    window = window or 2 * workers
    ctx = mp.get_context("fork")
    pool = ctx.Pool(workers, initializer=_worker_init, initargs=(initializer, initargs))
    try:
        pending = deque()
        for item in items:
            pending.append(pool.apply_async(fn, (item,)))
            if len(pending) >= window:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        pool.close()
    finally:
        pool.terminate()
        pool.join()
