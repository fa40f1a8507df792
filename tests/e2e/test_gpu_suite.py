"""bench/gpu_suite.sh: without a CUDA device it stops at once with one clear line (exit status 2)."""
import os
import subprocess

import pytest
import torch

from helpers.paths import ROOT


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the suite would run")
def test_gpu_suite_fails_loudly_without_cuda(tmp_path):
    import sys
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_suite.sh"), str(tmp_path / "work")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "gpu_suite: no CUDA device (torch.cuda.is_available() is False): run it on a machine with a GPU"]
    assert not (tmp_path / "work").exists()   # nothing done before the check


def test_gpu_device_refuses_without_the_prepared_wheels_and_data(tmp_path):
    """bench/gpu_device.sh (the suite as one device call) needs bench/gpu_prepare.sh's folder first: one line."""
    out = tmp_path / "out"
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_device.sh")], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, env={**os.environ, "GPU_DIR": str(tmp_path / "no_gpu_dir"),
                                                   "OUT": str(out)})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"gpu_device: {tmp_path / 'no_gpu_dir'} holds no wheels or data: run bash bench/gpu_prepare.sh first, "
        f"and carry {tmp_path / 'no_gpu_dir'}"]
    assert not out.exists()


@pytest.mark.slow   # ~2 minutes: six short trainings, the three step benchmarks, translation at each precision
def test_gpu_suite_cpu_pieces_end_in_one_table_of_passes(tmp_path):
    """SUITE_DEVICE=cpu runs every piece but the CUDA tests, fp16 and torchrun: each has its row, nothing
    failed or timed out, and each family's -amp bf16 run passes loss parity against its float32 run."""
    import sys

    from onmt.hardware import compile_problem
    if compile_problem("cpu"):   # the reinforced step benchmark times -compile's step too
        pytest.skip(compile_problem("cpu"))
    work = tmp_path / "work"
    env = {**os.environ, "PYTHON": sys.executable, "SUITE_DEVICE": "cpu", "SUITE_STEPS": "100", "OMP_NUM_THREADS": "1"}
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_suite.sh"), str(work)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = (work / "table.md").read_text().splitlines()[2:]
    text = "\n".join(rows)
    assert "FAIL" not in text and "TIMED OUT" not in text and "skipped" not in text, text
    for fam in ("rnn", "copy", "reinforced"):
        for amp in ("fp32", "bf16"):
            assert any(row.startswith(f"| train {fam} {amp} (100 steps) | passed, val ppl ") for row in rows), fam
        assert any(row.startswith(f"| loss parity {fam} -amp bf16 vs fp32 ") and "| PASS: " in row for row in rows)
    for label, figure in (("| reinforced ML step", "speed-up of compiled over the optimized step"),
                          ("| See et al. step", "target tokens/s"), ("| mixed step / ML step", "mixed step / ML step:"),
                          ("| translate (reinforced)  fp32 ", "100.0%"), ("| translate (copy)  fp32 ", "100.0%"),
                          ("| translate (copy)  int8 ", "%")):
        assert any(row.startswith(label) and figure in row for row in rows), label
    assert "| upstream comparison | not run: SUITE_UPSTREAM_PYTHON unset" in text   # bench/gpu_device.sh sets it
    assert rows[-1].startswith("| suite | ")
