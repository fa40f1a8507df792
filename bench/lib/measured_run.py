"""Processes of bench/compare_upstream.py: each run alone on one thread, its wall time and the peak
resident memory of its whole process tree measured, its output kept in a log; and the harness's
one-line failures."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
PAGE = os.sysconf("SC_PAGE_SIZE")


def fail(msg):
    print(f"compare_upstream: {msg}", file=sys.stderr)
    sys.exit(1)


def _tree(pid):
    """pid and its descendants (via /proc/<pid>/task/<tid>/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _env(pythonpath=None):
    """This process's environment with PYTHONPATH `pythonpath` (None: as it is; "": none)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env.pop("PYTHONPATH", None)
        env.update({"PYTHONPATH": pythonpath} if pythonpath else {})
    return env


def run(cmd, log_path, cwd=ROOT, pythonpath=None):
    """Run cmd (stdout+stderr to log_path), one thread; (exit code, wall s, peak RSS of the tree in MiB, log text).
    pythonpath: the process's PYTHONPATH (None: the caller's; "": none)."""
    env = dict(_env(pythonpath), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1",
               PYTHONWARNINGS="ignore")
    t = time.perf_counter()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        peak = 0
        while True:
            peak = max(peak, sum(_rss(p) for p in _tree(proc.pid)))
            try:
                wpid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if wpid != 0:
                proc.returncode = os.waitstatus_to_exitcode(status)
                # a child's ru_maxrss counts the pages it shared with this process when forked (the
                # harness's own hundreds of MiB): only for a process too short for one poll
                peak = peak or ru.ru_maxrss * 1024  # the largest single process, KiB
                break
            time.sleep(0.1)
    wall = time.perf_counter() - t
    with open(log_path) as f:
        text = f.read()
    return proc.returncode, wall, peak / 2 ** 20, text


def last_line(text):
    """The last non-blank line of a process's output, cut to 300 characters."""
    last = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or ["(no output)"]
    return last[0].strip()[:300]


def must(rc, text, what, log_path):
    if rc != 0:
        fail(f"{what} failed (exit {rc}): {last_line(text)}  [log: {log_path}]")
