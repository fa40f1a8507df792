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
import os
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
    # this module imports no torch at its top (start-up time): only these calls need it
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


def training_step_bytes(rows, src_len, tgt_len, hidden, emb, layers, vocab):
    """A rough size in bytes (float32) of what one training step keeps for its backward pass, for a
    batch of `rows` examples padded to `src_len` source and `tgt_len` target tokens (decoded
    sequences included), a model of `hidden` units, `emb`-dimensional embeddings, `layers` layers
    and a `vocab`-word output: per source token the encoder's gates and states and, per target
    step, the attention's tensors over it; per target token the output distribution. Meant to
    catch what cannot fit at all (one 200,000-token article in a batch of 64: terabytes), not to
    predict a peak: it is within a few times of the measured one."""
    per_source_token = 16 * hidden * layers + emb + tgt_len * (8 + hidden)
    per_row = src_len * per_source_token + tgt_len * (vocab + 16 * hidden)
    return 4 * rows * per_row


def memory_size(device):
    """The bytes of memory of `device` (a torch.device): the machine's for the CPU, the GPU's own
    for CUDA; None when unknown."""
    if device.type == "cuda":
        # this module imports no torch at its top (start-up time): only these calls need it
        import torch
        return int(torch.cuda.get_device_properties(device).total_memory)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
