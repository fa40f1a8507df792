"""run.sh works with folders whose names hold spaces (root, data, the checkpoint found by `translate`)."""
import os
import shutil
import subprocess

import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, ".venv", "bin", "python")) or not shutil.which("bash"),
                    reason="run.sh needs its .venv (./run.sh setup)")
def test_translate_and_evaluate_under_paths_with_spaces(tmp_path):
    root, data = tmp_path / "my runs", tmp_path / "my data"
    (root / "models").mkdir(parents=True)
    data.mkdir()
    save_tiny_checkpoint(root / "models" / "model_step_12.pt", "copy", seed=1)
    (root / "models" / "model_step_3.pt").write_text("not a checkpoint")   # the newest is 12 by number
    (data / "valid.src.txt").write_text("w1 w2 w3\nw4 w5\n")
    (data / "valid.tgt.txt").write_text("w1 w2\nw4\n")
    env = dict(os.environ, root=str(root), data=str(data), attn_plot=str(root / "my plots"), max_length="4")
    r = subprocess.run(["bash", os.path.join(ROOT, "run.sh"), "translate", "evaluate"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "unbound variable" not in r.stderr
    # it says what it used: the newest checkpoint, and the validation split (there is no test split)
    assert f"run.sh translate: {root / 'models' / 'model_step_12.pt'} on {data / 'valid.src.txt'}" in r.stderr
    assert f"against {data / 'valid.tgt.txt'}" in r.stderr
    assert len((root / "pred.txt").read_text().splitlines()) == 2 and (root / "rouge.json").exists()
    assert list((root / "my plots").glob("*.png"))


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, ".venv", "bin", "python")) or not shutil.which("bash"),
                    reason="run.sh needs its .venv (./run.sh setup)")
def test_rl_over_a_damaged_best_checkpoint_is_one_line(tmp_path):
    root = tmp_path / "r"
    (root / "models").mkdir(parents=True)
    (root / "models" / "model_best.pt").write_bytes(b"truncated")
    r = subprocess.run(["bash", os.path.join(ROOT, "run.sh"), "rl"], env=dict(os.environ, root=str(root)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"run.sh: rl: {root / 'models' / 'model_best.pt'} is damaged or no "
                                             "checkpoint (its step cannot be read): remove it to start from the newest "
                                             "step checkpoint"]
