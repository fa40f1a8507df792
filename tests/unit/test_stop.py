"""SIGTERM and ^C: StopSignals records the first and interrupts on the second; signals_deferred holds
them back for the length of a block and delivers each once after it; both put the handlers back."""
import signal
import threading

import pytest

from onmt.errors import Stopped
from onmt.utils.stop import SIGNALS, StopSignals, signals_deferred


@pytest.fixture
def recorded():
    """Handlers that record the signals they get, in place of the current ones during the test."""
    got = []
    previous = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in SIGNALS}
    yield got
    for s, handler in previous.items():
        signal.signal(s, handler)


def test_first_signal_is_recorded_second_interrupts(recorded):
    outer = {s: signal.getsignal(s) for s in SIGNALS}
    with StopSignals() as stop:
        assert stop.received is None
        signal.raise_signal(signal.SIGTERM)
        assert stop.received == "SIGTERM"           # recorded: the step goes on
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert {s: signal.getsignal(s) for s in SIGNALS} == outer and recorded == []
    e = stop.stopped(12, "m_step_12.pt")
    assert isinstance(e, Stopped) and e.code == 128 + signal.SIGTERM
    assert str(e) == "stopped by SIGTERM at step 12; saved m_step_12.pt"
    assert str(stop.stopped(3, None)) == "stopped by SIGTERM at step 3"


def test_deferred_signals_arrive_once_each_after_the_block(recorded):
    outer = {s: signal.getsignal(s) for s in SIGNALS}
    with signals_deferred():
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        assert recorded == []                        # held back inside
    assert recorded == [signal.SIGTERM, signal.SIGINT]
    assert {s: signal.getsignal(s) for s in SIGNALS} == outer


def test_outside_the_main_thread_nothing_is_installed(recorded):
    seen = []

    def work():
        with StopSignals() as stop, signals_deferred():
            seen.append((stop.received, signal.getsignal(signal.SIGTERM)))
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [(None, signal.getsignal(signal.SIGTERM))]   # the test's own handler throughout


def test_sighup_is_a_stop_as_sigterm_is(recorded):
    """A closed terminal's SIGHUP killed training with no save: it is recorded, the step finishes and saves."""
    with StopSignals() as stop:
        signal.raise_signal(signal.SIGHUP)
        assert stop.received == "SIGHUP"
    e = stop.stopped(5, "m_step_5.pt")
    assert e.code == 129 and str(e) == "stopped by SIGHUP at step 5; saved m_step_5.pt"
    with signals_deferred():
        signal.raise_signal(signal.SIGHUP)
        assert recorded == []
    assert recorded == [signal.SIGHUP]


def test_two_signals_inside_one_native_call_are_two(recorded):
    """Delivered while the main thread is inside native code, two SIGTERMs reach Python as one handler call; the
    C-level handler writes a byte per delivery into the wakeup pipe, which counts them: the second stops at once.
    (The byte of an earlier delivery is written here by hand, as that handler writes it.)"""
    import os
    outer = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(outer)
    with StopSignals() as stop:
        signal.raise_signal(signal.SIGTERM)
        assert stop.received == "SIGTERM"                           # one: recorded
    with pytest.raises(KeyboardInterrupt):
        with StopSignals() as stop:
            os.write(stop._pipe[1], bytes([signal.SIGTERM]))        # a delivery not yet handled
            signal.raise_signal(signal.SIGTERM)                     # two: stop now
    assert signal.set_wakeup_fd(outer) == outer                     # the previous wakeup fd is back


def test_an_ignored_sighup_stays_ignored(recorded):
    """`nohup train.py` asks the run to outlive its terminal: SIGHUP ignored is left ignored."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with StopSignals() as stop, signals_deferred():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            signal.raise_signal(signal.SIGHUP)
            assert stop.received is None
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_ranks_sigint_from_its_launchers_death_says_so(recorded, monkeypatch):
    """torch.multiprocessing gives each rank SIGINT when its parent dies: after the launcher was SIGKILLed
    the ranks said "stopped by SIGINT", as if ^C had been pressed."""
    import os

    from onmt.utils.stop import LAUNCHER_PID
    monkeypatch.setenv(LAUNCHER_PID, str(os.getppid()))       # the launcher alive: a real ^C
    with StopSignals() as stop:
        signal.raise_signal(signal.SIGINT)
    assert str(stop.stopped(4, None)) == "stopped by SIGINT at step 4"
    monkeypatch.setenv(LAUNCHER_PID, str(os.getppid() + 100000))   # another process spawned it, and is gone
    with StopSignals() as stop:
        signal.raise_signal(signal.SIGINT)
    msg = str(stop.stopped(4, None))
    assert msg.startswith("stopped by SIGINT (sent as its launching process") and "ended" in msg
    assert stop.stopped(4, None).code == 130
