"""SIGTERM (a cluster's preemption), SIGHUP and ^C during training: finish the step, save, stop.

    with StopSignals() as stop:  # in the main thread; elsewhere it does nothing
        ...                      # after each optimizer step: if stop.received: save, raise Stopped

The first SIGTERM, SIGHUP or SIGINT only records its name (`stop.received`): the step in progress
finishes and the trainer saves a checkpoint at it before stopping (onmt/trainer.py). A second one
raises KeyboardInterrupt at once (the checkpoint being written is then abandoned: atomic_torch_save
leaves no partial file). The previous handlers come back when the block ends. Ranks spawned by
train.py -world_size N get their signals from the spawning process (`forwarded_signals`), once per
signal it receives.
"""
import contextlib
import os
import signal
import threading

from onmt.errors import Stopped

# SIGHUP (a closed terminal, a dropped ssh session) stops as SIGTERM does: it used to kill
# training with no save, its lock left behind
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


# the pid of the process that spawned this rank (utils/distributed.py), to tell its death from a ^C
LAUNCHER_PID = "ONMT_LAUNCHER_PID"


def handled_signals():
    """SIGNALS, less SIGHUP where it is ignored: `nohup train.py` asked the run to outlive its
    terminal."""
    return tuple(s for s in SIGNALS
                 if not (s == signal.SIGHUP and signal.getsignal(s) is signal.SIG_IGN))


class StopSignals:
    """Python runs a signal's handler between bytecodes, once however many times the signal came
    meanwhile: two SIGTERMs inside one long native call (a torch op) were one, and the run went on.
    Each delivery is counted through a wakeup pipe (`signal.set_wakeup_fd`, written by the C-level
    handler at every delivery), so a second stop signal, however close, stops the run as soon as
    the call returns."""

    def __init__(self):
        self.received = None          # name of the first signal, e.g. "SIGTERM"
        self.signum = None
        self._previous = {}
        self._pipe = self._previous_fd = None

    def _arrived(self):
        """The stop signals delivered since the last look (1 when not counted)."""
        if self._pipe is None:
            return 1
        got = b""
        while True:
            try:
                chunk = os.read(self._pipe[0], 4096)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                break
            got += chunk
        return max(1, sum(b in SIGNALS for b in got))

    def _handle(self, signum, frame):
        if self.received is not None or self._arrived() > 1:
            raise KeyboardInterrupt   # a second signal: stop now, without saving
        self.received, self.signum = signal.Signals(signum).name, signum
        launcher = os.environ.get(LAUNCHER_PID)
        if signum == signal.SIGINT and launcher and os.getppid() != int(launcher):
            # torch.multiprocessing sets SIGINT as a rank's parent-death signal: no ^C was pressed
            self.received = f"SIGINT (sent as its launching process {launcher} ended)"

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._pipe = os.pipe()
            for fd in self._pipe:
                os.set_blocking(fd, False)
            self._previous_fd = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
            for s in handled_signals():
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}
        if self._pipe is not None:
            signal.set_wakeup_fd(self._previous_fd)
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None
        return False

    def stopped(self, step, saved):
        """The Stopped exception to raise after saving `saved` (a path, or None on ranks that do not
        save) at `step`: one line, exit status 128 + the signal's number (143 SIGTERM, 130 ^C,
        129 SIGHUP)."""
        where = f"; saved {saved}" if saved else ""
        return Stopped(f"stopped by {self.received} at step {step}{where}", 128 + self.signum)


@contextlib.contextmanager
def signals_deferred():
    """SIGTERM, SIGHUP and ^C held back inside the block and delivered when it ends: for the renames
    that must all happen (a dataset swapped in). Inside, a handler only records them; after, the
    previous handlers come back and each recorded signal is raised again (a process-wide signal may
    reach any thread, so masking the main thread alone would not hold it back). Outside the main
    thread the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending, previous = [], {}

    def record(signum, frame):
        pending.append(signum)
    for s in handled_signals():
        previous[s] = signal.signal(s, record)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


@contextlib.contextmanager
def forwarded_signals(pids):
    """In the process that spawned the ranks (utils/distributed.py spawn, whose ranks leave its
    process group so that a signal to the group reaches them through here alone, once): SIGTERM and
    SIGINT are not its death but forwarded to the processes `pids()` names, which finish their step
    and save (a second signal, forwarded too, stops them at once); the block yields the list of the
    signal numbers received (empty when none). Outside the main thread it does nothing."""
    received, previous = [], {}
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def forward(signum, frame):
        received.append(signum)
        for pid in pids():
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, TypeError):
                pass
    for s in handled_signals():
        previous[s] = signal.signal(s, forward)
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
