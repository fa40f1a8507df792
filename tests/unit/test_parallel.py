"""onmt/inputters/parallel.py: the ordered map over worker processes."""
import functools
import os
import signal

import pytest

from onmt.inputters import parallel


def _square(x):
    return x * x


def test_ordered_map_in_workers_keeps_the_order():
    assert list(parallel.ordered_map(_square, range(20), workers=2)) == [x * x for x in range(20)]


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_workers_start_is_not_lost(monkeypatch, signum):
    """^C or SIGTERM landing while the workers are forked (it was printed as "Exception ignored" and
    lost, and the run ended with status 0) stops the map once they are started, workers gone."""
    real = parallel._Workers._start
    started = []

    def start_with_a_signal(self, ctx, n, fn):
        os.kill(os.getpid(), getattr(signal, signum))
        real(self, ctx, n, fn)
        started.extend(self.procs)
    monkeypatch.setattr(parallel._Workers, "_start", start_with_a_signal)

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)   # as preprocess.py's main sets it
    try:
        with pytest.raises(KeyboardInterrupt):
            list(parallel.ordered_map(functools.partial(_square), range(10), workers=2))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert len(started) == 2 and all(not p.is_alive() for p in started)
