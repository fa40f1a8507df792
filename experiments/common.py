"""What the experiments share: running this repository's scripts as one-thread subprocesses, and a
scheduler that runs a list of dependent jobs a few at a time."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, log=None, wait=True):
    """`python CMD...` in the repository root with one thread, output appended to `log` (or dropped).
    Without `wait`, the Popen; else it waits and a failure is SystemExit naming the command and log."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = open(log, "a") if log else None
    proc = subprocess.Popen([sys.executable, *cmd], cwd=ROOT, env=env, stdout=out or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    if not wait:
        return proc
    if proc.wait() != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}" + (f"; see {log}" if log else ""))
    return proc


def run_jobs(jobs, n_jobs, start, finished=None, poll=5.0, log_hint="its log"):
    """Run every job of `jobs`, [(name, needs, command or None when done)], that is not done, up to
    `n_jobs` at a time, each when the jobs it needs are done; the first ready job in list order goes
    first. `start(name, command)` -> the job's Popen, or None when it finds nothing left to run (the job
    counts as done); `finished(name)` after a job succeeded. A failure ends the running jobs and is a
    SystemExit naming the job and `log_hint`."""
    done = {name for name, _, cmd in jobs if cmd is None}
    running = {}
    while len(done) < len(jobs):
        for name, needs, cmd in jobs:
            if len(running) >= n_jobs:
                break
            if name in done or name in running or not all(n in done for n in needs):
                continue
            proc = start(name, cmd)
            if proc is None:
                done.add(name)
                continue
            running[name] = proc
            print(f"{time.strftime('%H:%M:%S')} start {name}", flush=True)
        if not running:
            if len(done) < len(jobs):
                raise SystemExit("jobs left that can never start: "
                                 + ", ".join(n for n, _, _ in jobs if n not in done))
            break
        time.sleep(poll)
        for name, proc in list(running.items()):
            if proc.poll() is None:
                continue
            del running[name]
            if proc.returncode != 0:
                for p in running.values():
                    p.terminate()
                raise SystemExit(f"{name} failed ({proc.returncode}); see {log_hint}")
            if finished is not None:
                finished(name)
            done.add(name)
            print(f"{time.strftime('%H:%M:%S')} done {name}", flush=True)


def start_logged(cmd, log):
    """The Popen of a scheduler job: `cmd` in the repository root, its output appended to `log`."""
    return subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "a"), stderr=subprocess.STDOUT)
