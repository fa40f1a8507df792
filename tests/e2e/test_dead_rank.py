"""Two ranks started as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); one is killed
with SIGKILL while training: the survivor stops with one line and a non-zero status, no traceback."""
import os
import signal
import socket
import subprocess
import sys
import time

from helpers.e2e import random_pair_data
from helpers.paths import ROOT


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_rank_ends_the_other_in_one_line(tmp_path):
    prefix = random_pair_data(str(tmp_path), seed=2, n_examples=64, max_len=8, target=lambda w: w[:3])
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", LOCAL_WORLD_SIZE="2")
        log = open(tmp_path / f"rank{rank}.err", "w")
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "train.py"), "-data", prefix, "-save_model", str(tmp_path / "m"),
             "-rnn_size", "8", "-word_vec_size", "8", "-layers", "1", "-batch_size", "4", "-train_steps", "100000",
             "-valid_steps", "0", "-save_checkpoint_steps", "0", "-report_every", "5", "-gpu", "-1"],
            env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT))
    try:
        deadline = time.time() + 120
        while "Step 5/" not in (tmp_path / "rank0.err").read_text() and time.time() < deadline:
            assert all(p.poll() is None for p in procs), (tmp_path / "rank0.err").read_text()[-2000:]
            time.sleep(0.2)
        procs[1].send_signal(signal.SIGKILL)
        code = procs[0].wait(timeout=120)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    err = (tmp_path / "rank0.err").read_text()
    tail = [line for line in err.splitlines() if line.strip() and not line.startswith("[20")]
    assert code not in (0, None) and "Traceback" not in err, err[-3000:]
    assert tail and "another process of this run stopped" in tail[-1], err[-3000:]
