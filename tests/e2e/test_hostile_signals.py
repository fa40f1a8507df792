"""Signals: ^C during start-up, SIGTERM, ^C and SIGKILL during training (the step saved, an exact resume), a
second signal, SIGTERM to every command (one line, 143, its output intact) (docs/hostile-inputs.md)."""
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from helpers.hostile import ENV, LOG_LINE, PY, TINY, deadline, make_tiny
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    return make_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("where", ["train:load_vocabs", "train:build_model", "translate:load_session",
                                   "launch:imports"])
def test_ctrl_c_during_start_up_is_one_line_and_130(capsys, tiny, tmp_path, monkeypatch, where):
    import importlib

    import onmt.inputters.vocab_builder as vb
    import onmt.model_builder as mb
    from onmt.utils.cli import launch

    def interrupt(*a, **k):
        raise KeyboardInterrupt
    program, function = where.split(":")
    owner = {"load_vocabs": vb, "build_model": mb, "load_session": translate_bin, "imports": importlib}[function]
    monkeypatch.setattr(owner, "import_module" if function == "imports" else function, interrupt)
    with pytest.raises(SystemExit) as exc:
        if program == "launch":
            launch("onmt.bin.train")
        elif program == "train":
            run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY])
        else:
            run_main(translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"],
                                          "-output", str(tmp_path / "p.txt")])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 130 and err.endswith("interrupted") and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def _params(path):
    import torch
    return torch.load(path, weights_only=True)["model"]


def _same_params(a, b):
    import torch
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sigterm_during_training_saves_the_step_and_resumes_exactly(tiny, tmp_path):
    """Cluster preemption: SIGTERM once the first step is logged -> a checkpoint of the current step
    (with its data position and RNG), one line, exit 143; resuming it gives the uninterrupted run's
    parameters bit for bit."""
    import os
    import signal
    import subprocess

    from helpers.e2e import ROOT, torch_threads
    steps = ["-train_steps", "60", "-report_every", "1", "-valid_steps", "0"]
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), "-data", tiny["prefix"],
                             "-save_model", str(tmp_path / "b"), *TINY, *steps], cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines = []
    try:
        with deadline(120):
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if "Step 1/60" in line:
                    proc.send_signal(signal.SIGTERM)
                    break
            lines += proc.stderr.read().splitlines()
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "\n".join(lines)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert [line for line in lines if not LOG_LINE.match(line)] == [lines[-1]]
    m = re.fullmatch(r"train\.py: stopped by SIGTERM at step (\d+); saved (.*_step_(\d+)\.pt)", lines[-1])
    assert m and m.group(1) == m.group(3) and 1 <= int(m.group(1)) < 60, lines[-1]
    saved = m.group(2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [os.path.basename(saved)]     # nothing partial
    with torch_threads(1):
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "b"), *TINY, *steps,
                                  "-train_from", saved])
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "a"), *TINY, *steps])
    assert _same_params(_params(tmp_path / "a_step_60.pt"), _params(tmp_path / "b_step_60.pt"))


def test_sigkill_mid_training_resumes_from_the_last_checkpoint_exactly(tiny, tmp_path):
    """SIGKILL (the out-of-memory killer, a lost node) cannot be caught: whatever moment it strikes,
    even during a checkpoint write, the newest complete checkpoint loads and resuming it gives the
    uninterrupted run's parameters bit for bit; no partial checkpoint is ever left under its final name."""
    import os
    import signal
    import subprocess

    from helpers.e2e import ROOT, torch_threads
    steps = ["-train_steps", "60", "-report_every", "1", "-valid_steps", "0", "-save_checkpoint_steps", "3"]
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), "-data", tiny["prefix"],
                             "-save_model", str(tmp_path / "b"), *TINY, *steps], cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        with deadline(120):
            for line in proc.stderr:
                if "Step 7/60" in line:           # two checkpoints written, the third on its way
                    proc.send_signal(signal.SIGKILL)
                    break
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    saved = sorted(tmp_path.glob("b_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    assert saved
    for path in saved:                            # a killed write leaves at most a temporary file
        _params(path)
    newest = saved[-1]
    assert int(newest.stem.rsplit("_", 1)[1]) < 60
    with torch_threads(1):
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "b"), *TINY, *steps,
                                  "-train_from", str(newest)])
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "a"), *TINY, *steps])
    assert _same_params(_params(tmp_path / "a_step_60.pt"), _params(tmp_path / "b_step_60.pt"))


def _signal_at_step(monkeypatch, at, signum, times=1):
    """Make the training step `at` end with `times` signals `signum` sent to this process."""
    import os

    from onmt.trainer import Trainer
    real = Trainer.train_step

    def step(self, batches, n):
        stats = real(self, batches, n)
        if n == at:
            for _ in range(times):
                os.kill(os.getpid(), signum)
        return stats
    monkeypatch.setattr(Trainer, "train_step", step)


def test_ctrl_c_during_training_saves_the_step(capsys, tiny, tmp_path, monkeypatch):
    import signal

    from helpers.e2e import torch_threads
    before = signal.getsignal(signal.SIGINT)
    _signal_at_step(monkeypatch, 3, signal.SIGINT)
    with torch_threads(1), pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                  "-train_steps", "50"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 130 and err[-1].endswith(f"stopped by SIGINT at step 3; saved {tmp_path / 'm_step_3.pt'}")
    assert [p.name for p in tmp_path.iterdir()] == ["m_step_3.pt"] and _params(tmp_path / "m_step_3.pt")
    assert signal.getsignal(signal.SIGINT) is before          # the handlers are given back


def test_a_second_signal_stops_at_once_without_saving(capsys, tiny, tmp_path, monkeypatch):
    import signal

    from helpers.e2e import torch_threads
    _signal_at_step(monkeypatch, 3, signal.SIGTERM, times=2)
    with torch_threads(1), pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                  "-train_steps", "50"])
    assert exc.value.code == 130 and capsys.readouterr().err.strip().endswith("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_sigterm_during_any_command_is_one_line_143_and_its_output_intact(tmp_path):
    """translate.py, onmt_explore, onmt_evaluate, onmt_tune_decoding died at once, silently, their files
    being written left behind; now run_main unwinds them as on ^C."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from onmt.utils.cli import run_main
        from onmt.utils.files import AtomicFile

        def main(argv):
            with AtomicFile(sys.argv[1]) as f:
                f.write("new, half")
                print("writing", flush=True)
                time.sleep(60)

        run_main(main)
    """))
    out = tmp_path / "out.txt"
    out.write_text("OLD\n")
    p = subprocess.Popen([PY, str(script), str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=ENV)
    assert p.stdout.readline() == "writing\n"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and err.strip() == "prog.py: terminated (SIGTERM)", err
    assert out.read_text() == "OLD\n" and sorted(os.listdir(tmp_path)) == ["out.txt", "prog.py"]
