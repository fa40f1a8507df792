"""Stopping train.py -world_size N (the spawner, onmt/utils/distributed.py): a signal while the ranks start,
and ranks that do not follow a stop, never hang the run."""
import os

import pytest

from helpers.e2e import random_pair_data
from onmt.utils import distributed

RNN = ["-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn", "-dropout", "0", "-optim", "adam",
       "-learning_rate", "0.01"]
B = 4            # batch size of a rank
DEADLINE_S = 240  # a run of spawned processes taking longer is killed


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("dist_stop")), seed=1, n_examples=64, max_len=8,
                            target=lambda words: words[: max(2, len(words) - 2)])


@pytest.mark.parametrize("delay", [0.3, 1.5, 3.0])
def test_a_signal_while_the_ranks_start_is_a_stop_too(data, tmp_path, delay):
    """SIGTERM to the whole group while train.py -world_size 2 starts (the ranks are being created, are
    importing, or are in the group before leaving it): exit 143, one line saying it was stopped, no
    traceback, and no rank left running."""
    import signal
    import subprocess
    import sys
    import time

    from helpers.e2e import ROOT
    cmd = [sys.executable, os.path.join(ROOT, "train.py"), "-data", data, "-save_model", str(tmp_path / "s"), *RNN,
           "-train_steps", "100000", "-valid_steps", "0", "-save_checkpoint_steps", "0", "-batch_size", str(B),
           "-world_size", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE_S)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode in (143, -signal.SIGTERM), (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    if proc.returncode == 143:      # -15: the signal came before Python's handlers (nothing started)
        last = err.strip().splitlines()[-1]    # stopped while spawning or training, or while importing
        assert "stopped by SIGTERM" in last or "terminated (SIGTERM)" in last, last
    time.sleep(0.5)
    alive = subprocess.run(["pgrep", "-f", str(tmp_path / "s")], capture_output=True, text=True).stdout.split()
    assert not alive, f"ranks left running: {alive}"


def _exit_with(code):
    import os
    os._exit(code)


def _wait_for_ever():
    import time
    time.sleep(600)


def test_a_rank_that_does_not_follow_a_stop_is_ended_after_the_grace(monkeypatch):
    """After a stop signal one rank stopped in order (exit 143) while its peer waits on it for ever (it
    was still meeting it at start-up): the peer is ended STOP_GRACE_S later, and the run is a stop, exit
    143, not a hang (seen in CI: SIGTERM to the group 0.3 s and 1.5 s after train.py -world_size 2 started)."""
    import multiprocessing
    import time

    from onmt.errors import Stopped
    monkeypatch.setattr(distributed, "STOP_GRACE_S", 0.5)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_exit_with, args=(143,)), ctx.Process(target=_wait_for_ever)]
    for p in procs:
        p.start()
    start = time.monotonic()
    try:
        with pytest.raises(Stopped, match="stopped by SIGTERM") as e:
            distributed._stopped(procs, 15, 2)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert e.value.code == 143 and not procs[1].is_alive() and time.monotonic() - start < 20
