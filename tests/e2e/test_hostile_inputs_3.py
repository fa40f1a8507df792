"""Hostile and careless inputs, round two, second sweep (issue 38; docs/hostile-inputs.md "Round two, second
sweep"): the tools, run.sh's actions, the Python API's arguments, SIGTERM to every command, resumes. Each was
a loss, a silent wrong result, a traceback or an orphaned process before its fix.
"""
import gzip
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers.paths import ROOT

PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
VENV = os.environ.get("venv") or os.path.join(ROOT, ".venv")
needs_venv = pytest.mark.skipif(not os.path.exists(os.path.join(VENV, "bin", "python")),
                                reason="run.sh needs its .venv (./run.sh setup, or venv=...)")


def _one_line(r):
    assert r.returncode not in (0, None) and "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("[20")]
    assert len(lines) == 1, r.stderr
    return lines[0]


# --------------------------------------------------------------------------- the Python API
@pytest.mark.parametrize("device", ["meta", "mps", "xla", "vulkan"])
def test_api_device_other_than_cpu_or_cuda_is_an_option_error_naming_it(device):
    """mps / xla: a bare RuntimeError from deep inside torch; meta: loaded, then NotImplementedError."""
    from onmt.api import Summarizer
    from onmt.errors import OptionError
    with pytest.raises(OptionError, match=rf"device='{device}': this toolkit runs on 'cpu' or 'cuda'"):
        Summarizer.load("any.pt", device=device)


@pytest.mark.parametrize("text, message", [("w1\x00w2", r"texts\[1\]: a NUL character at position 2"),
                                           ("w1 \ud800 w2", r"texts\[1\]: a lone surrogate '\\ud800' at position 3")])
def test_api_text_that_is_no_text_is_a_value_error_naming_it(text, message):
    """A NUL: summarized as one odd token (the file readers refuse it); a lone surrogate: a UnicodeEncodeError
    from onmt/inputters/numericalize.py."""
    from onmt.api import check_texts
    with pytest.raises(ValueError, match=message):
        list(check_texts(["fine", text]))


def test_checkpoint_that_is_a_fifo_or_no_checkpoint(tmp_path):
    from onmt.errors import UserError
    from onmt.utils.checkpoint import load_checkpoint
    os.mkfifo(tmp_path / "f.pt")
    with pytest.raises(UserError, match="is not a regular file"):      # was "does not exist"
        load_checkpoint(str(tmp_path / "f.pt"))
    (tmp_path / "meta.json").write_text('{"a": 1}')
    with pytest.raises(UserError) as e:     # torch's advice to load it unsafely is not repeated
        load_checkpoint(str(tmp_path / "meta.json"))
    assert "weights_only" not in str(e.value) and "not a checkpoint or a damaged one" in str(e.value)


# --------------------------------------------------------------------------- SIGTERM
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


# --------------------------------------------------------------------------- the tools
def test_prepare_output_that_is_a_link_into_the_input_is_refused(capsys, tmp_path):
    """The link's target, a file of the corpus, was replaced by the prepared text."""
    from onmt.prepare.cnndm import main
    from onmt.utils.cli import run_main
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir(), out.mkdir()
    for split in ("train", "valid", "test"):
        (src / f"{split}.src.txt").write_text("Hello World . </s> more .\n")
        (src / f"{split}.tgt.txt").write_text("Hi .\n")
    os.symlink(src / "test.tgt.txt", out / "test.tgt.txt")
    with pytest.raises(SystemExit):
        run_main(main, ["-input", str(src), "-output", str(out)])
    err = capsys.readouterr().err
    assert "is a link to" in err and "inside -input" in err and "Traceback" not in err
    assert (src / "test.tgt.txt").read_text() == "Hi .\n" and os.listdir(out) == ["test.tgt.txt"]


def test_remove_eos_on_a_damaged_gzip_is_one_line(tmp_path):
    path = tmp_path / "p.txt.gz"
    path.write_bytes(gzip.compress(b"a b </s> c\n" * 100)[:30])
    r = subprocess.run([PY, os.path.join(ROOT, "tools", "remove_eos.py"), str(path)], capture_output=True,
                       text=True, env=ENV, timeout=60)
    assert _one_line(r).startswith(f"remove_eos.py: error: {path}: damaged or truncated")


def test_make_toy_data_dir_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("keep")
    r = subprocess.run([PY, os.path.join(ROOT, "tools", "make_toy_data.py"), "-task", "copy", "-dir",
                        str(tmp_path / "f")], capture_output=True, text=True, env=ENV, timeout=60)
    assert _one_line(r) == f"make_toy_data.py: error: -dir {tmp_path / 'f'} exists and is not a folder"


# --------------------------------------------------------------------------- run.sh
def _run_sh(env, *actions, timeout=300):
    return subprocess.run(["bash", os.path.join(ROOT, "run.sh"), *actions], env=dict(ENV, venv=VENV, **env),
                          capture_output=True, text=True, timeout=timeout)


@needs_venv
@pytest.mark.parametrize("action", ["preprocess", "translate", "evaluate"])
def test_run_sh_without_data_says_run_prepare_first(tmp_path, action):
    (tmp_path / "root" / "models").mkdir(parents=True)
    (tmp_path / "root" / "models" / "model_step_1.pt").write_text("x")
    r = _run_sh({"data": str(tmp_path / "no data"), "root": str(tmp_path / "root")}, action)
    assert "run ./run.sh prepare first" in _one_line(r)
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
    assert "give pred another file" in _one_line(r)
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
