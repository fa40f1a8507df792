"""bench/compare_upstream.py's -precision rows: ours against upstream at the same precision, our bf16
against upstream's int8 (upstream has no bf16), and the default precisions of the host."""
import os
import shutil
import sys

import pytest

import onmt.hardware as hardware
from helpers.paths import load_module

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "compare_upstream.py")


def _module():
    return load_module(_PATH, "compare_upstream")


def test_precision_rows_compare_at_the_same_precision():
    mod = _module()
    a = mod.parse(["-precisions", "fp32,int8,bf16"])
    res = {"ours": [{"tr_sents_s_fp32": 40.0, "tr_sents_s_int8": 80.0, "tr_sents_s_bf16": 60.0}] * 2,
           "upstream": [{"tr_sents_s_fp32": 20.0, "tr_sents_s_int8": 32.0}] * 2}
    rows = mod.precision_rows(a, res)
    assert len(rows) == 3
    assert "-precision fp32 |" in rows[0] and rows[0].endswith("| 2.00× |")
    assert "-precision int8 |" in rows[1] and rows[1].endswith("| 2.50× |")
    assert "upstream: none; ratio to its int8" in rows[2] and "| - / - |" in rows[2] and rows[2].endswith("| 1.88× |")


def test_default_precisions_follow_the_host(monkeypatch):
    mod = _module()
    monkeypatch.setattr(hardware, "native_bf16_cpu", lambda: False)
    assert mod.parse([]).precisions == ["fp32", "int8"]
    monkeypatch.setattr(hardware, "native_bf16_cpu", lambda: True)
    assert mod.parse([]).precisions == ["fp32", "int8", "bf16"]


def test_on_cuda_our_bf16_is_set_against_upstreams_fp16(monkeypatch):
    mod = _module()
    monkeypatch.setattr(hardware, "precision_problem", lambda precision, device: None)
    a = mod.parse(["-device", "cuda"])
    assert a.precisions == ["fp32", "fp16", "bf16"]
    res = {"ours": [{"tr_sents_s_fp32": 300.0, "tr_sents_s_fp16": 500.0, "tr_sents_s_bf16": 450.0}],
           "upstream": [{"tr_sents_s_fp32": 100.0, "tr_sents_s_fp16": 150.0}]}
    rows = mod.precision_rows(a, res)
    assert rows[1].endswith("| 3.33× |")
    assert "upstream: none; ratio to its fp16" in rows[2] and rows[2].endswith("| 3.00× |")


def test_upstream_runs_with_its_own_pythonpath_and_ours_with_the_callers(tmp_path, monkeypatch):
    mod = _module()
    monkeypatch.setenv("PYTHONPATH", "/ours/site")
    script = "import os; print(os.environ.get('PYTHONPATH', '<none>'))"
    for pythonpath, seen in ((None, "/ours/site"), ("/upstream/site", "/upstream/site"), ("", "<none>")):
        rc, _, _, text = mod.run(["python3", "-c", script], str(tmp_path / "log"), pythonpath=pythonpath)
        assert rc == 0 and text.splitlines()[-1] == seen
    a = mod.parse(["-upstream_python", "python3", "-upstream_pythonpath", "/upstream/site"])
    assert mod.upstream_python(a, str(tmp_path)) == (shutil.which("python3"), "/upstream/site")   # nothing installed
    assert not (tmp_path / "venv_upstream").exists()
    assert "PYTHONPATH" not in mod._env("") and mod._env("/u")["PYTHONPATH"] == "/u"
    assert mod._env()["PYTHONPATH"] == "/ours/site"


def test_upstream_config_names_the_data_by_absolute_path(tmp_path, monkeypatch):
    """Upstream runs in the work folder: a relative -data (bench/gpu_device.sh gives .gpu/data) must reach
    its YAML as an absolute path."""
    mod = _module()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").mkdir()
    a = mod.parse(["-data", "rel/data", "-workdir", "w"])
    for kind in ("vocab", "train"):
        with open(mod.upstream_config(a, str(tmp_path / "w"), a.data, kind)) as f:
            paths = [ln.split(": ", 1)[1] for ln in f if ln.strip().startswith("path_")]
        assert len(paths) == 4 and all(p.startswith(str(tmp_path / "rel" / "data") + "/") for p in paths)


def test_an_upstream_failure_at_one_precision_is_a_row_not_the_end(tmp_path, monkeypatch):
    """Upstream 3.5.1 fails at -precision fp16 with a copy model on CUDA ("expected scalar type Half but
    found Float"): its translation at that precision is recorded as failed and the comparison goes on;
    the table's row says failed, with upstream's message."""
    mod = _module()
    monkeypatch.setattr(hardware, "precision_problem", lambda precision, device: None)
    a = mod.parse(["-device", "cuda", "-translate_n", "2"])
    calls = []

    def run(cmd, log_path, cwd=None, pythonpath=None):
        precision = cmd[cmd.index("-precision") + 1]
        calls.append(precision)
        if precision == "fp16":
            return 1, 1.0, 10.0, "Traceback ...\nRuntimeError: expected scalar type Half but found Float\n"
        with open(cmd[cmd.index("-output") + 1], "w") as f:
            f.write("a b\nc\n")
        return 0, 2.0, 10.0, "COMPARE_TRANSLATE_SECONDS=0.5\n"
    monkeypatch.setattr(mod, "run", run)
    fig = {}
    mod.translate_side("upstream", ["x"], str(tmp_path / "pred.txt"), fig, a, "r1", str(tmp_path), None, None)
    assert calls == ["fp32", "fp16"] and fig["tr_sents_s_fp32"] == 4.0 and "tr_sents_s_fp16" not in fig
    assert fig["tr_failed_fp16"] == "RuntimeError: expected scalar type Half but found Float"
    res = {"ours": [{"tr_sents_s_fp32": 8.0, "tr_sents_s_fp16": 10.0, "tr_sents_s_bf16": 9.0}], "upstream": [fig]}
    rows = mod.precision_rows(a, res)
    fp16 = [r for r in rows if "-precision fp16" in r][0]
    assert "upstream: failed, RuntimeError: expected scalar type Half" in fp16 and "| failed |" in fp16
    with pytest.raises(SystemExit):   # ours failing is still the end
        mod.translate_side("ours", ["x"], str(tmp_path / "pred.txt"), {}, a, "r1", str(tmp_path), None, None)


def test_train_figures_read_upstreams_step_lines_and_ours():
    """Upstream writes "N sec", this project names its clocks ("wall N s; training CPU N s")."""
    mod = _module()
    upstream = ("[i] Step 10/40; acc: 5.0; ppl: 90.0; xent: 4.5; lr: 0.15; 300/100 tok/s; 2 sec\n"
                "[i] Step 20/40; acc: 6.0; ppl: 80.0; xent: 4.4; lr: 0.15; 320/120 tok/s; 4 sec\n")
    ours = ("[i] Step 10/40; acc: 5.0; ppl: 90.0; xent: 4.5; lr: 1.50e-01; 300/100 tok/s; wall 2 s; "
            "training CPU 1 s; epoch 0\n[i] Step 20/40; acc: 6.0; ppl: 80.0; xent: 4.4; lr: 1.50e-01; "
            "320/120 tok/s; wall 4 s; training CPU 3 s; epoch 0\n")
    for text in (upstream, ours):
        fig = mod.train_figures(text, "ours")
        assert fig["tgt_tok_s"] == 120 and fig["sents_s"] == 32 * 10 / 2


def test_trunc_and_valid_n_give_both_sides_the_same_cut_copies(tmp_path):
    """-trunc 3,2 -valid_n 1: sources cut to 3 tokens, targets to 2, validation to its first pair, read from
    .txt.gz as from .txt; written once under -workdir/data."""
    import gzip
    data = tmp_path / "d"
    data.mkdir()
    (data / "train.src.txt").write_text("a b c d e\nf g\n")
    (data / "train.tgt.txt").write_text("x y z\nw\n")
    with gzip.open(data / "valid.src.txt.gz", "wt") as f:
        f.write("p q r s\nt u v w\n")
    (data / "valid.tgt.txt").write_text("m n o\nk\n")
    mod = _module()
    a = mod.parse(["-data", str(data), "-trunc", "3,2", "-valid_n", "1"])
    out = mod.cut_data(a, str(tmp_path / "w"))
    read = lambda name: open(os.path.join(out, name)).read()  # noqa: E731
    assert read("train.src.txt") == "a b c\nf g\n" and read("train.tgt.txt") == "x y\nw\n"
    assert read("valid.src.txt") == "p q r\n" and read("valid.tgt.txt") == "m n\n"
    assert sorted(os.listdir(out)) == ["train.src.txt", "train.tgt.txt", "valid.src.txt", "valid.tgt.txt"]


def test_a_small_process_is_not_charged_the_harness_memory(tmp_path):
    """A child's ru_maxrss counts the pages it shared with the harness when forked: a 20 MiB python
    started from a process holding 300 MiB is measured by polling, not by that."""
    from bench.lib.measured_run import run
    held = bytearray(300 * 2 ** 20)
    held[::4096] = b"\x01" * len(held[::4096])   # touched: resident
    rc, _, peak, _ = run([sys.executable, "-c", "import time; time.sleep(0.6)"], str(tmp_path / "log"))
    assert rc == 0 and 1 < peak < 150, peak
    del held
