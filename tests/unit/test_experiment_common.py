"""The experiments' job scheduler (experiments/common.py run_jobs), with real subprocesses."""
import subprocess
import sys

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
