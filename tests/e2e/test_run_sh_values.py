"""run.sh is safe with any value of its variables (issue 53, item 3): a numeric variable is checked as a
number before any use (bash arithmetic ran the commands inside `rl_steps='x[$(touch marker)]'`);
`translate_args` that redirect the predictions make the next `evaluate` score them (it scored the stale
pred.txt); an option run.sh sets itself, given again in translate_args, is refused naming the variable."""
import json
import os
import shutil
import subprocess

import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, ".venv", "bin", "python"))
                                or not shutil.which("bash"), reason="run.sh needs its .venv (./run.sh setup)")


def run_sh(tmp_path, *actions, **variables):
    env = dict(os.environ, root=str(tmp_path / "r"), data=str(tmp_path / "d"), **variables)
    return subprocess.run(["bash", os.path.join(ROOT, "run.sh"), *actions], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def one_line(r):
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("action,variable", [("rl", "rl_steps"), ("train", "gpu"), ("translate", "beam_size"),
                                             ("translate", "max_length"), ("cnndm_small", "cnndm_small_jobs")])
def test_a_numeric_variable_holding_a_command_is_refused_unrun(tmp_path, action, variable):
    value = f"here[$(touch {tmp_path / 'marker'})]"
    line = one_line(run_sh(tmp_path, action, **{variable: value}))
    assert line == f"run.sh: {variable}='{value}' is not a whole number"
    assert not (tmp_path / "marker").exists()


@pytest.fixture
def checkpoint_and_data(tmp_path):
    (tmp_path / "r" / "models").mkdir(parents=True)
    (tmp_path / "d").mkdir()
    save_tiny_checkpoint(tmp_path / "r" / "models" / "model_step_12.pt", "copy", seed=1)
    (tmp_path / "d" / "test.src.txt").write_text("w1 w2 w3\nw4 w5\n")
    (tmp_path / "d" / "test.tgt.txt").write_text("w1 w2\nw4\n")
    (tmp_path / "r" / "pred.txt").write_text("stale\nstale\n")        # an earlier run's predictions
    return tmp_path


def test_translate_args_output_is_what_evaluate_scores(checkpoint_and_data):
    d = checkpoint_and_data
    out = d / "elsewhere.txt"
    r = run_sh(d, "translate", "evaluate", translate_args=f"-replace_unk -output {out}", max_length="4")
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"scoring {out} against" in r.stderr
    assert len(out.read_text().splitlines()) == 2 and (d / "r" / "pred.txt").read_text() == "stale\nstale\n"
    assert json.loads((d / "r" / "rouge.json").read_text())["rouge1"]["f"] > 0


@pytest.mark.parametrize("args,variable", [("-beam_size 2", "beam_size"), ("-max_length=3", "max_length"),
                                           ("-model other.pt", "model"), ("--src x.txt", "data")])
def test_translate_args_giving_an_option_run_sh_sets_is_refused(checkpoint_and_data, args, variable):
    line = one_line(run_sh(checkpoint_and_data, "translate", translate_args=args))
    assert line.startswith(f"run.sh: translate_args gives {args.split()[0].split('=')[0]}")
    assert line.endswith(f"set the variable {variable}=... instead")


def test_translate_args_output_and_pred_disagreeing_is_refused(checkpoint_and_data):
    d = checkpoint_and_data
    line = one_line(run_sh(d, "translate", translate_args=f"-output {d / 'a.txt'}", pred=str(d / "b.txt")))
    assert "give the predictions' file once" in line and not (d / "a.txt").exists()
