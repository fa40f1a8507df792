"""What the experiments share: running this repository's scripts as one-thread subprocesses, and a
scheduler that runs a list of dependent jobs a few at a time.

A stop (SIGTERM, ^C, SIGHUP) ends every child it started: `run` (waiting) and `run_jobs` start their
children in sessions of their own, so that a terminal's ^C reaches them only through their parent, once,
and forward the signal to them; each train.py saves where it was and removes its lock, the parent waits
for it, says so in one line and exits 128 + the signal's number (a rerun goes on where it stopped)."""
import contextlib
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def forwarding(children):
    """SIGTERM, ^C and SIGHUP within the block are not this process's death but forwarded to the Popens
    `children()` still running; yields the list of the signal numbers received. A child in this process's
    own group is not sent a SIGINT (the terminal's ^C reached it already). Outside the main thread it does
    nothing."""
    import threading
    received, previous = [], {}
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def forward(signum, frame):
        received.append(signum)
        for p in children():
            if p.poll() is not None:
                continue
            try:
                if signum == signal.SIGINT and os.getpgid(p.pid) == os.getpgrp():
                    continue
                p.send_signal(signum)
            except (ProcessLookupError, OSError):
                pass
    for s in STOP_SIGNALS:
        previous[s] = signal.signal(s, forward)
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def stopped(signum, what):
    """One line on standard error (`what` ended by the signal), then exit 128 + its number."""
    print(f"stopped by {signal.Signals(signum).name}: {what}; run it again to go on where it stopped",
          file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def run(cmd, log=None, wait=True):
    """`python CMD...` in the repository root with one thread, output appended to `log` (or dropped).
    Without `wait`, the Popen (in this process's group: a terminal's ^C reaches it); else it waits, a
    signal forwarded to it (`forwarding`), and a failure is SystemExit naming the command and log."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = open(log, "a") if log else None
    proc = subprocess.Popen([sys.executable, *cmd], cwd=ROOT, env=env, stdout=out or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=wait)
    if not wait:
        return proc
    with forwarding(lambda: [proc]) as received:
        proc.wait()
    if received:
        stopped(received[0], f"{cmd[0]} ended ({proc.returncode})" + (f", see {log}" if log else ""))
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}" + (f"; see {log}" if log else ""))
    return proc


def duration(seconds):
    """`seconds` for a reader: "45 s", "12 min", "3.5 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _clock(t):
    return time.strftime("%H:%M:%S", time.localtime(t))


def run_jobs(jobs, n_jobs, start, finished=None, poll=5.0, log_hint="its log", estimate=None,
             progress_every=600.0):
    """Run every job of `jobs`, [(name, needs, command or None when done)], that is not done, up to
    `n_jobs` at a time, each when the jobs it needs are done; the first ready job in list order goes
    first. `start(name, command)` -> the job's Popen, or None when it finds nothing left to run (the job
    counts as done); `finished(name)` after a job succeeded; `estimate(name)`: the seconds it should take
    (None: unknown), printed with an ETA when it starts and every `progress_every` seconds while it runs.
    A failure ends the running jobs and is a SystemExit naming the job and `log_hint`; a stop (SIGTERM,
    ^C, SIGHUP) is forwarded to the running jobs, waited for, and ends with `stopped`'s line."""
    done = {name for name, _, cmd in jobs if cmd is None}
    running, began, guesses = {}, {}, {}
    last_progress = time.time()
    with forwarding(lambda: list(running.values())) as received:
        while len(done) < len(jobs) and not received:
            for name, needs, cmd in jobs:
                if len(running) >= n_jobs or received:
                    break
                if name in done or name in running or not all(n in done for n in needs):
                    continue
                proc = start(name, cmd)
                if proc is None:
                    done.add(name)
                    continue
                running[name], began[name] = proc, time.time()
                guess = guesses[name] = estimate(name) if estimate else None
                print(f"{_clock(began[name])} start {name}" + (
                    f" (about {duration(guess)}: ETA {_clock(began[name] + guess)})" if guess else ""), flush=True)
            if not running:
                if len(done) < len(jobs) and not received:
                    raise SystemExit("jobs left that can never start: "
                                     + ", ".join(n for n, _, _ in jobs if n not in done))
                break
            time.sleep(poll)
            if time.time() - last_progress >= progress_every:
                last_progress = time.time()
                _progress(running, began, guesses, len(done), len(jobs))
            for name, proc in list(running.items()):
                if proc.poll() is None or received:
                    continue
                del running[name]
                if proc.returncode != 0:
                    for p in running.values():
                        p.terminate()
                    for p in running.values():
                        p.wait()
                    raise SystemExit(f"{name} failed ({proc.returncode}); see {log_hint}")
                if finished is not None:
                    finished(name)
                done.add(name)
                print(f"{_clock(time.time())} done {name} after {duration(time.time() - began[name])} "
                      f"({len(done)} of {len(jobs)} jobs done)", flush=True)
        if received:
            for p in running.values():
                p.wait()         # each saves where it was (a second signal, forwarded too, stops it at once)
    if received:
        names = ", ".join(running) or "none running"
        stopped(received[0], f"the scheduler and its {len(running)} running job(s) ended ({names})")


def _progress(running, began, guesses, n_done, n_jobs):
    now = time.time()
    parts = []
    for name in running:
        guess = guesses.get(name)
        parts.append(f"{name} {duration(now - began[name])}" + (
            f" of about {duration(guess)} (ETA {_clock(began[name] + guess)})" if guess else " so far"))
    print(f"{_clock(now)} running: {'; '.join(parts)} ({n_done} of {n_jobs} jobs done)", flush=True)


def start_logged(cmd, log):
    """The Popen of a scheduler job: `cmd` in the repository root, its output appended to `log`, in a
    session of its own (a stop reaches it through `run_jobs`, once)."""
    return subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "a"), stderr=subprocess.STDOUT,
                            start_new_session=True)
