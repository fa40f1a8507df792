"""Keep large freed blocks inside the process (glibc),
so tensors of tens of MB are not mapped afresh.

glibc serves large allocations with mmap and returns them to the system on free, so every new
(B*K, X) score tensor of a decoding step, or (B*T, V) tensor of a training step, page-faults on
first touch: at beam 5 and batch 64 that was a third of the decoding time here. Raising the mmap and
trim thresholds makes freed blocks reusable. The peak memory is unchanged; it is just not returned
to the system before the process ends. Called by the preprocess entry point and, through
`reuse_freed_memory_for(device)` (decoding and training on the CPU only: on a GPU the large tensors
are the device's), by the train and translate entry points; the API (Summarizer.load) only when
asked (`reuse_freed_memory=True`: a library does not tune the allocator of the process it runs in).
A no-op where the C library is not glibc.
"""
import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
INT_MAX = 2 ** 31 - 1  # mallopt's value is a C int


def reuse_freed_memory(threshold=1 << 30):
    """Serve allocations below `threshold` bytes from the heap and keep freed memory (up to 2 GiB at
    the top of the heap); True if set. Both values must fit mallopt's C int: ctypes truncates a
    larger Python int silently (4 GiB became a trim threshold of 0, which gave every freed block
    straight back)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    threshold = min(int(threshold), INT_MAX)
    return (bool(mallopt(M_MMAP_THRESHOLD, threshold))
            and bool(mallopt(M_TRIM_THRESHOLD, min(4 * threshold, INT_MAX))))


def reuse_freed_memory_for(device):
    """`reuse_freed_memory()` where the large tensors live in host memory (a CPU `device`); False,
    with nothing changed, for any other device."""
    import torch
    return torch.device(device).type == "cpu" and reuse_freed_memory()


def is_out_of_memory(exc):
    """Whether `exc` is an allocation failure: MemoryError, torch.OutOfMemoryError (CUDA) or the CPU
    allocator's RuntimeError ("DefaultCPUAllocator: can't allocate memory")."""
    if isinstance(exc, MemoryError):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    text = str(exc)
    return (type(exc).__name__ == "OutOfMemoryError" or "can't allocate memory" in text
            or "out of memory" in text.lower())
