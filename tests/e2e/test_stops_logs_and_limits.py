"""Round three (issue 53) of the hostile cases, on train.py, translate.py and preprocess.py end to end: a log file
on a full disk, and an input too long for one training step (docs/hostile-inputs.md)."""
import os
import random
import re

import pytest

from helpers.hostile import TINY
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main

LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (INFO|WARNING)\] ")


def _corpus(folder, n=24, long_line=None, long_tokens=0):
    rng = random.Random(1)
    words = [f"w{i}" for i in range(40)]
    src = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))) for _ in range(n)]
    if long_line is not None:
        src[long_line] = " ".join(rng.choice(words) for _ in range(long_tokens))
    tgt = [" ".join(s.split()[:3]) for s in src]
    (folder / "src.txt").write_text("\n".join(src) + "\n")
    (folder / "tgt.txt").write_text("\n".join(tgt) + "\n")
    return str(folder / "src.txt"), str(folder / "tgt.txt")


def _preprocess(folder, src, tgt, *more):
    run_main(preprocess_bin.main, ["-train_src", src, "-train_tgt", tgt, "-save_data", str(folder / "p" / "data"),
                                   "-share_vocab", "-dynamic_dict", *more])
    return str(folder / "p" / "data")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_log_file_on_a_full_disk_is_one_warning_and_the_command_goes_on(tmp_path, capsys):
    """train.py, translate.py and preprocess.py -log_file on a full disk printed a `--- Logging error ---`
    traceback per line (167 for a short training) and exited 0 with an empty log."""
    src, tgt = _corpus(tmp_path)
    data = _preprocess(tmp_path, src, tgt, "-log_file", "/dev/full")
    run_main(train_bin.main, ["-data", data, "-save_model", str(tmp_path / "m"), *TINY, "-train_steps", "2",
                              "-report_every", "1", "-log_file", "/dev/full"])
    run_main(translate_bin.main, ["-model", str(tmp_path / "m_step_2.pt"), "-src", src,
                                  "-output", str(tmp_path / "pred.txt"), "-log_file", "/dev/full"])
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err
    warnings = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert len(warnings) == 3 and all("warning: -log_file /dev/full: No space left on device; logging to standard "
                                      "error only from here" in w for w in warnings), warnings
    assert (tmp_path / "m_step_2.pt").exists() and len((tmp_path / "pred.txt").read_text().splitlines()) == 24


def test_an_input_too_long_for_one_training_step_is_refused_before_training(tmp_path, capsys):
    """A 200,000-token article preprocessed with -src_seq_length 300000: train.py's step 1 never ended (5.2 GB
    inside one torch.lstm call), deaf to SIGTERM and ^C, and left model.lock. Now refused before any step, in one
    line naming the example and what to cut, the lock gone."""
    src, tgt = _corpus(tmp_path, n=70, long_line=41, long_tokens=200_000)
    data = _preprocess(tmp_path, src, tgt, "-src_seq_length", "300000")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", data, "-save_model", str(tmp_path / "model"), "-batch_size", "64",
                                  "-train_steps", "2"])
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert exc.value.code == 1 and "Traceback" not in err and len(lines) == 1, err[-2000:]
    assert re.search(r"training example 42 of .*data\.train\.0\.pt has 200,000 source tokens: one training step "
                     r"on its batch \(64 rows padded to its length\) needs about [\d,]+ GiB, more than the [\d,]+ GiB "
                     r"of cpu memory; cut long inputs with preprocess.py -src_seq_length_trunc N", lines[0]), lines[0]
    assert not (tmp_path / "model.lock").exists() and not list(tmp_path.glob("model_step_*"))
    # cut, it trains
    (tmp_path / "cut").mkdir()
    data = _preprocess(tmp_path / "cut", src, tgt, "-src_seq_length", "300000", "-src_seq_length_trunc", "50")
    run_main(train_bin.main, ["-data", data, "-save_model", str(tmp_path / "model"), *TINY, "-train_steps", "1"])
    assert (tmp_path / "model_step_1.pt").exists()


def test_a_second_signal_inside_a_long_native_call_stops_at_its_return(tmp_path, capsys, monkeypatch):
    """Python runs a signal's handler between bytecodes, once for however many came meanwhile: two SIGTERMs inside
    one long native call (torch's) were one, and the step went on and saved (SIGTERM twice "did nothing"). Now
    the second stops the run as soon as the call returns: one line, exit 130, no checkpoint of the abandoned
    step, the lock removed."""
    import threading
    import time

    import torch

    from helpers.e2e import torch_threads
    from onmt.trainer import Trainer
    src, tgt = _corpus(tmp_path)
    data = _preprocess(tmp_path, src, tgt)
    original, returned = Trainer.train_step, []

    def long_native_call(self, group, step):
        if step == 2:
            for delay in (0.05, 0.15):
                threading.Timer(delay, os.kill, (os.getpid(), __import__("signal").SIGTERM)).start()
            a = torch.ones(2500, 2500)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 0.5:      # native calls of ~0.1 s or more each, 0.5 s in all
                a @ a
            returned.append(step)
        return original(self, group, step)
    monkeypatch.setattr(Trainer, "train_step", long_native_call)
    capsys.readouterr()
    with torch_threads(1), pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", data, "-save_model", str(tmp_path / "m"), *TINY, "-train_steps", "5",
                                  "-save_checkpoint_steps", "1"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 130 and err.splitlines()[-1].endswith(": interrupted"), err[-500:]
    assert "Traceback" not in err and returned == []          # stopped right after a native call, mid-loop
    assert sorted(p.name for p in tmp_path.glob("m_step_*.pt")) == ["m_step_1.pt"]
    assert not (tmp_path / "m.lock").exists()


def test_running_out_of_memory_in_a_training_step_is_one_line(tmp_path, capsys, monkeypatch):
    """An allocation failure mid-training was a RuntimeError traceback; now one line naming the longest example
    and what to cut, as translation's out-of-memory line names its longest input, the lock removed."""
    from onmt.trainer import Trainer
    src, tgt = _corpus(tmp_path)
    data = _preprocess(tmp_path, src, tgt)
    original = Trainer.train_step

    def allocation_fails(self, group, step):
        if step == 2:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 99999999999 bytes")
        return original(self, group, step)
    monkeypatch.setattr(Trainer, "train_step", allocation_fails)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", data, "-save_model", str(tmp_path / "m"), *TINY, "-train_steps", "3"])
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert exc.value.code == 1 and "Traceback" not in err and len(lines) == 1, err[-1000:]
    assert re.search(r"error: out of memory in a training step \(the longest example, \d+ of .*data\.train\.0\.pt, "
                     r"has \d+ source tokens\): lower -batch_size .*-src_seq_length_trunc N", lines[0]), lines[0]
    assert not (tmp_path / "m.lock").exists()


def test_under_nohup_a_hangup_does_not_stop_training(tmp_path):
    """SIGHUP now stops training as SIGTERM does, except where it is ignored (`nohup train.py ...`): the run
    outlives its terminal as asked."""
    import signal
    import subprocess
    import sys
    import time

    from helpers.paths import ROOT
    src, tgt = _corpus(tmp_path)
    data = _preprocess(tmp_path, src, tgt)
    log = tmp_path / "err.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), "-data", data, "-save_model",
                                 str(tmp_path / "m"), *TINY, "-train_steps", "30", "-report_every", "1"],
                                stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ, OMP_NUM_THREADS="1"),
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 120
    while proc.poll() is None and "Step 2/30" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=120) == 0, log.read_text()[-1000:]
    assert (tmp_path / "m_step_30.pt").exists() and not (tmp_path / "m.lock").exists()
