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
