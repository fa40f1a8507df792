import sys

import pytest
import torch

from onmt.utils.memory import reuse_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc tuning is Linux-only")
def test_reuse_freed_memory_is_accepted_by_glibc():
    import platform
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert reuse_freed_memory() is True



FAULTS_SCRIPT = """
import ctypes, resource, sys
from onmt.utils.memory import reuse_freed_memory

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "1":
    assert reuse_freed_memory()
faults = []
for _ in range(3):  # a 64 MiB block allocated, touched and freed, as a decoding step's scores are
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    p = libc.malloc(64 << 20)
    ctypes.memset(p, 1, 64 << 20)
    libc.free(p)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(*faults)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc tuning is Linux-only")
def test_a_freed_block_is_reused_without_page_faults(tmp_path):
    """After reuse_freed_memory a freed 64 MiB block stays in the process: allocating it again faults no
    page in (16k faults per round without the tuning). A trim threshold that overflowed mallopt's C int
    to 0 failed this: glibc gave the block back at every free."""
    import os
    import platform
    import subprocess
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "faults.py"
    script.write_text(FAULTS_SCRIPT)

    def rounds(mode):
        out = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, cwd=root,
                             env={**os.environ, "PYTHONPATH": root}, check=True).stdout
        return [int(x) for x in out.split()]  # minor page faults of each round

    tuned, plain = rounds("1"), rounds("0")
    page_count = (64 << 20) // 4096
    assert all(f > page_count // 2 for f in plain)       # the control: every round maps the block afresh
    assert tuned[0] > page_count // 2 and max(tuned[1:]) < page_count // 16


def test_host_allocator_tuning_is_for_the_cpu_only(monkeypatch):
    import torch

    from onmt.utils import memory
    calls = []
    monkeypatch.setattr(memory, "reuse_freed_memory", lambda: calls.append(1) or True)
    assert memory.reuse_freed_memory_for(torch.device("cpu")) is True and calls == [1]
    assert memory.reuse_freed_memory_for("cuda:0") is False and memory.reuse_freed_memory_for("meta") is False
    assert calls == [1]


def test_allocation_failures_are_recognised():
    from onmt.utils.memory import is_out_of_memory
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 bytes"))
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_out_of_memory(RuntimeError("size mismatch")) and not is_out_of_memory(ValueError("memory"))


def test_a_training_steps_memory_grows_with_the_padded_batch():
    from onmt.utils.memory import memory_size, training_step_bytes
    small = training_step_bytes(8, 400, 100, 256, 128, 1, 20000)
    assert training_step_bytes(16, 400, 100, 256, 128, 1, 20000) == 2 * small
    assert training_step_bytes(8, 800, 100, 256, 128, 1, 20000) > 1.5 * small
    assert small < 2 ** 30                                          # CNN/DM-sized batches fit a laptop
    assert training_step_bytes(64, 200_000, 100, 500, 500, 1, 50000) > 2 ** 40   # the 200,000-token article
    assert memory_size(torch.device("cpu")) > 2 ** 28
