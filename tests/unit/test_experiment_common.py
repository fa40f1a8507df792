"""The experiments' job scheduler (experiments/common.py run_jobs), with real subprocesses."""
import os
import signal
import subprocess
import sys
import time

import pytest

from experiments.common import run_jobs, start_logged


def _job(tmp_path, name, seconds=0.0, code=0):
    """A command that records its start and end in tmp_path/order and exits with `code`."""
    order = tmp_path / "order"
    script = (f"import time; open({str(order)!r}, 'a').write('start {name}\\n'); time.sleep({seconds}); "
              f"open({str(order)!r}, 'a').write('end {name}\\n'); raise SystemExit({code})")
    return [sys.executable, "-c", script]


def _events(tmp_path):
    return (tmp_path / "order").read_text().split("\n")[:-1]


def test_needs_are_waited_for_and_at_most_n_jobs_run(tmp_path):
    jobs = [("a", [], _job(tmp_path, "a", 0.3)), ("b", [], _job(tmp_path, "b", 0.3)),
            ("c", ["a", "b"], _job(tmp_path, "c")), ("d", [], None)]   # d: done already
    finished = []
    run_jobs(jobs, 1, lambda name, cmd: start_logged(cmd, str(tmp_path / "log")), finished.append, poll=0.02)
    assert _events(tmp_path) == ["start a", "end a", "start b", "end b", "start c", "end c"]
    assert finished == ["a", "b", "c"]


def test_two_at_a_time_overlap(tmp_path):
    jobs = [("a", [], _job(tmp_path, "a", 0.5)), ("b", [], _job(tmp_path, "b", 0.5))]
    run_jobs(jobs, 2, lambda name, cmd: start_logged(cmd, str(tmp_path / "log")), poll=0.02)
    assert sorted(_events(tmp_path)[:2]) == ["start a", "start b"]


def test_a_job_that_finds_nothing_to_run_counts_as_done(tmp_path):
    jobs = [("train", [], "lazy"), ("score", ["train"], _job(tmp_path, "score"))]
    started = []

    def start(name, cmd):
        started.append(name)
        return None if cmd == "lazy" else start_logged(cmd, str(tmp_path / "log"))
    run_jobs(jobs, 2, start, poll=0.02)
    assert started == ["train", "score"] and _events(tmp_path) == ["start score", "end score"]


def test_a_failure_ends_the_others_and_names_the_job(tmp_path):
    procs = []

    def start(name, cmd):
        procs.append(subprocess.Popen(cmd))
        return procs[-1]
    jobs = [("slow", [], _job(tmp_path, "slow", 30)), ("bad", [], _job(tmp_path, "bad", 0, code=3)),
            ("after", ["bad"], _job(tmp_path, "after"))]
    with pytest.raises(SystemExit, match="bad failed \\(3\\); see the log"):
        run_jobs(jobs, 2, start, poll=0.02, log_hint="the log")
    procs[0].wait(timeout=10)
    assert procs[0].returncode != 0 and "end slow" not in _events(tmp_path)
    assert "start after" not in _events(tmp_path)


def test_jobs_that_can_never_start_are_named(tmp_path):
    jobs = [("a", ["missing"], _job(tmp_path, "a"))]
    with pytest.raises(SystemExit, match="never start: a"):
        run_jobs(jobs, 1, lambda name, cmd: start_logged(cmd, str(tmp_path / "log")), poll=0.02)


# a stand-in for train.py: holds a lock while it runs, and on SIGTERM / ^C "saves" (removes the lock) and exits
TRAIN = """import os, signal, sys, time
lock = sys.argv[1]
open(lock, "w").write(str(os.getpid()))
def stop(signum, frame):
    os.remove(lock); open(lock + ".stopped", "w").write(signal.Signals(signum).name); sys.exit(128 + signum)
signal.signal(signal.SIGTERM, stop); signal.signal(signal.SIGINT, stop)
time.sleep(120)
"""
# a job process: runs the stand-in through experiments/common.py run, as cnndm.py -job train:X runs train.py
JOB = "import sys; sys.path.insert(0, {root!r}); from experiments.common import run; run(['-c', {train!r}, {lock!r}])"
SCHEDULER = """import sys; sys.path.insert(0, {root!r})
from experiments.common import run_jobs, start_logged
jobs = [(f"train:{{i}}", [], [sys.executable, "-c", job.format(i=i)]) for i, job in enumerate({jobs!r})]
run_jobs(jobs, 2, lambda name, cmd: start_logged(cmd, {log!r}), poll=0.05, estimate=lambda name: 600)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_ends_every_child_and_leaves_no_lock(tmp_path, signum):
    """Issue 53: SIGTERM or ^C to the scheduler (experiments/cnndm.py) ended it alone; its train.py kept
    running, and the restart failed on that orphan's lock."""
    from helpers.paths import ROOT
    locks = [str(tmp_path / f"model{i}.lock") for i in range(2)]
    jobs = [JOB.format(root=ROOT, train=TRAIN, lock=lock) for lock in locks]
    proc = subprocess.Popen([sys.executable, "-c", SCHEDULER.format(root=ROOT, jobs=jobs, log=str(tmp_path / "log"))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not all(os.path.exists(lock) for lock in locks):
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pids = [int(open(lock).read()) for lock in locks]
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert err.strip().splitlines() == [f"stopped by {signal.Signals(signum).name}: the scheduler and its 2 running "
                                        "job(s) ended (train:0, train:1); run it again to go on where it stopped"]
    assert "start train:0 (about 10 min: ETA" in out
    for lock, pid in zip(locks, pids):
        assert not os.path.exists(lock) and os.path.exists(lock + ".stopped")
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
