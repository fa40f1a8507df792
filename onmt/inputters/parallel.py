"""An ordered, bounded map over chunks, in worker processes or in-process.

`Pool.imap` would read its whole input ahead (its feeder thread drains the generator), which breaks
the memory bound of preprocessing; here at most `window` chunks are in flight at any time.
Worker state (e.g. a Numericalizer with a large dict) travels inside `fn` itself, a
`functools.partial(task, state)`: a worker gets `fn` once, by fork, never pickled per task, and no
module-level variable holds it.

Why not `multiprocessing.Pool`: its workers share locks on its two queues, and `Pool.terminate()`
kills a worker that may hold one (a worker writing a large result holds the result queue's lock),
after which its own task thread waits on that lock forever: an error while chunks were in flight
(invalid UTF-8 met by the reader) hung preprocessing about once in 50 runs. Here each worker has
its own two pipes and nothing is shared: item i goes to worker i % N, which answers in order; a
feeder thread per worker sends its items (the main process never blocks writing to a worker that
is itself blocked writing a result). Shutdown is finite by construction: on success each worker is
told to stop and joined; on an error (or when the consumer stops early) every worker is killed
with SIGKILL, which no state can delay, and every join has a timeout. A worker that dies (the OOM
killer) is reported as an error instead of waited for.
"""
import multiprocessing as mp
import queue
import signal
import threading
import traceback

from onmt.errors import UserError
from onmt.utils.stop import signals_deferred

JOIN_TIMEOUT = 10.0      # seconds a stopped or killed worker (or a feeder thread) is waited for


class WorkerDied(UserError):
    """A worker process ended without answering (killed, e.g. by the out-of-memory killer)."""


def ordered_map(fn, items, workers=1, window=None):
    """Yield fn(item) for each item, in order, using `workers` processes when > 1 and fork exists.
    State that `fn` keeps between items (a dict bound by functools.partial) is per process: the
    worker's copy, made by fork, or the caller's own when in-process.

    An exception raised by `fn` in a worker is raised here (once, for the first failing item in
    order); so is one raised by `items`. Either way, or when the consumer stops iterating, the
    workers are gone when this generator is closed."""
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        for item in items:
            yield fn(item)
        return
    window = max(1, window or 2 * workers)
    pool = _Workers(workers, fn)
    finished = False
    try:
        sent = received = 0
        for item in items:
            pool.send(sent % workers, item)
            sent += 1
            if sent - received >= window:
                yield pool.result(received % workers)
                received += 1
        while received < sent:
            yield pool.result(received % workers)
            received += 1
        finished = True
    finally:
        pool.close(graceful=finished)


# --------------------------------------------------------------------------- worker side
def _serve(tasks, results, inherited, fn):
    """A worker: answer (True, fn(item)) or (False, exception) per (item,) message, in order; a None
    message or the end of the task pipe ends it."""
    # The main process handles ^C, SIGHUP (to the whole group) and SIGTERM (it kills the workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for conn in inherited:          # the main process's ends of the pipes: EOF must mean EOF
        conn.close()
    while True:
        try:
            msg = tasks.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        try:
            answer = (True, fn(msg[0]))
        except BaseException as e:  # noqa: BLE001
            _send_error(results, e)
            return
        try:
            results.send(answer)
        except (BrokenPipeError, OSError):
            return


def _send_error(results, e):
    e.add_note("in a worker process:\n" + "".join(traceback.format_exception(e)).rstrip())
    try:
        results.send((False, e))
    except Exception:  # noqa: BLE001 - unpicklable: send its text (pickling fails before any write)
        try:
            results.send((False, RuntimeError(f"{type(e).__name__}: {e}")))
        except OSError:
            pass
    except OSError:
        pass


# --------------------------------------------------------------------------- main side
_END = object()


def _feed(box, conn):
    """Send the items put in `box` to a worker until _END (then tell it to stop) or a broken pipe
    (the worker is gone: `_Workers.result` reports it)."""
    try:
        while True:
            item = box.get()
            if item is _END:
                conn.send(None)
                return
            conn.send((item,))
    except OSError:
        return


class _Workers:
    def __init__(self, n, fn):
        ctx = mp.get_context("fork")
        self.procs, self.tasks, self.results, self.boxes, self.feeders = [], [], [], [], []
        try:
            # ^C or SIGTERM during the forks waits until they are done: raised inside fork's
            # handlers (logging's _releaseLock) it was printed as "Exception ignored" and lost
            with signals_deferred():
                self._start(ctx, n, fn)
        except BaseException:
            self.close(graceful=False)
            raise

    def _start(self, ctx, n, fn):
        for _ in range(n):
            task_r, task_w = ctx.Pipe(duplex=False)
            result_r, result_w = ctx.Pipe(duplex=False)
            inherited = self.tasks + self.results + [task_w, result_r]
            p = ctx.Process(target=_serve, args=(task_r, result_w, inherited, fn), daemon=True)
            p.start()
            task_r.close()
            result_w.close()
            self.procs.append(p)
            self.tasks.append(task_w)
            self.results.append(result_r)
        for task_w in self.tasks:         # threads only after the last fork
            box = queue.SimpleQueue()
            t = threading.Thread(target=_feed, args=(box, task_w), daemon=True)
            t.start()
            self.boxes.append(box)
            self.feeders.append(t)

    def send(self, w, item):
        self.boxes[w].put(item)

    def result(self, w):
        """The next answer of worker `w`: its value, or its exception raised here."""
        try:
            ok, value = self.results[w].recv()
        except (EOFError, OSError):
            p = self.procs[w]
            p.join(JOIN_TIMEOUT)
            code = p.exitcode
            how = (f"was killed by signal {-code}"
                   + (" (out of memory?)" if code == -signal.SIGKILL else "")
                   if code is not None and code < 0 else f"exited with status {code}")
            raise WorkerDied(f"a worker process (pid {p.pid}) {how} "
                             "before finishing its work") from None
        if not ok:
            raise value
        return value

    def close(self, graceful):
        """Stop the workers: told to stop and joined (graceful), else killed at once; bounded in
        time."""
        if not graceful:
            for p in self.procs:
                if p.exitcode is None:
                    p.kill()
        for box in self.boxes:
            box.put(_END)
        for p in self.procs:
            p.join(JOIN_TIMEOUT)
            if p.exitcode is None:            # a graceful stop that did not happen in time
                p.kill()
                p.join(JOIN_TIMEOUT)
        for t in self.feeders:
            t.join(JOIN_TIMEOUT)
        for conn in self.tasks + self.results:
            conn.close()
        self.procs, self.tasks, self.results, self.boxes, self.feeders = [], [], [], [], []
