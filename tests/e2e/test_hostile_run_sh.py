"""run.sh's actions on hostile input: no data yet, predictions that are the references, SIGTERM to run.sh
itself (the command it runs stops too) (docs/hostile-inputs.md)."""
import os
import signal
import subprocess
import time

import pytest

from helpers.hostile import (
    ENV,
    VENV,
    needs_venv,
    one_line_of,
)
from helpers.paths import ROOT


def _run_sh(env, *actions, timeout=300):
    return subprocess.run(["bash", os.path.join(ROOT, "run.sh"), *actions], env=dict(ENV, venv=VENV, **env),
                          capture_output=True, text=True, timeout=timeout)


@needs_venv
@pytest.mark.parametrize("action", ["preprocess", "translate", "evaluate"])
def test_run_sh_without_data_says_run_prepare_first(tmp_path, action):
    (tmp_path / "root" / "models").mkdir(parents=True)
    (tmp_path / "root" / "models" / "model_step_1.pt").write_text("x")
    r = _run_sh({"data": str(tmp_path / "no data"), "root": str(tmp_path / "root")}, action)
    assert "run ./run.sh prepare first" in one_line_of(r)
    assert not (tmp_path / "root" / "prep").exists()


@needs_venv
@pytest.mark.parametrize("action", ["translate", "evaluate"])
def test_run_sh_pred_that_is_the_references(tmp_path, action):
    """translate wrote its predictions over the references, evaluate then scored them 100."""
    data, root = tmp_path / "d", tmp_path / "r"
    (root / "models").mkdir(parents=True)
    (root / "models" / "model_step_1.pt").write_text("x")
    data.mkdir()
    for name in ("test.src.txt", "test.tgt.txt"):
        (data / name).write_text("w1 w2\n")
    r = _run_sh({"data": str(data), "root": str(root), "pred": str(data / "." / "test.tgt.txt")}, action)
    assert "give pred another file" in one_line_of(r)
    assert (data / "test.tgt.txt").read_text() == "w1 w2\n"


@needs_venv
def test_sigterm_to_run_sh_stops_the_command_it_runs(tmp_path):
    """run.sh died alone and left translate.py running."""
    from helpers.checkpoints import save_tiny_checkpoint
    data, root = tmp_path / "d", tmp_path / "r"
    (root / "models").mkdir(parents=True)
    data.mkdir()
    save_tiny_checkpoint(root / "models" / "model_step_1.pt", "rnn", seed=1)
    (data / "test.src.txt").write_text("w1 w2 w3 w4\n" * 200000)
    (root / "pred.txt").write_text("OLD\n")
    p = subprocess.Popen(["bash", os.path.join(ROOT, "run.sh"), "translate"], stderr=subprocess.PIPE, text=True,
                         stdout=subprocess.DEVNULL, env=dict(ENV, venv=VENV, data=str(data), root=str(root)))
    lines = []
    for line in p.stderr:
        lines.append(line)
        if "sent (" in line:
            break
    p.send_signal(signal.SIGTERM)
    lines += p.stderr.readlines()
    assert p.wait(timeout=120) == 143, "".join(lines)
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(data / "test.src.txt") not in ps
    assert [line.strip() for line in lines[-2:]] == ["translate.py: terminated (SIGTERM)",
                                                     "run.sh: stopped by a signal"]
    assert (root / "pred.txt").read_text() == "OLD\n" and sorted(os.listdir(root)) == ["models", "pred.txt"]
