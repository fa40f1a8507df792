"""SIGTERM (a cluster's preemption) and ^C during training: finish the step, save, stop.

    with StopSignals() as stop:      # in the main thread; elsewhere it does nothing
        ...                          # after each optimizer step: if stop.received: save, raise Stopped

The first SIGTERM or SIGINT only records its name (`stop.received`): the step in progress finishes
and the trainer saves a checkpoint at it before stopping (onmt/trainer.py). A second one raises
KeyboardInterrupt at once (the checkpoint being written is then abandoned: atomic_torch_save leaves
no partial file). The previous handlers come back when the block ends.
"""
import contextlib
import signal
import threading

from onmt.errors import Stopped

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    def __init__(self):
        self.received = None          # name of the first signal, e.g. "SIGTERM"
        self.signum = None
        self._previous = {}

    def _handle(self, signum, frame):
        if self.received is not None:
            raise KeyboardInterrupt   # a second signal: stop now, without saving
        self.received, self.signum = signal.Signals(signum).name, signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}
        return False

    def stopped(self, step, saved):
        """The Stopped exception to raise after saving `saved` (a path, or None on ranks that do not
        save) at `step`: one line, exit status 128 + the signal's number (143 SIGTERM, 130 ^C)."""
        where = f"; saved {saved}" if saved else ""
        return Stopped(f"stopped by {self.received} at step {step}{where}", 128 + self.signum)


@contextlib.contextmanager
def signals_deferred():
    """SIGTERM and ^C held back inside the block and delivered when it ends: for the few renames that
    must all happen (a dataset swapped in). Outside the main thread, or where the platform cannot block
    signals, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
