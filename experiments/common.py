"""What the experiments share: running this repository's scripts as one-thread subprocesses."""
import os
import subprocess
import sys

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
