"""What this machine runs fast: native bfloat16 on the CPU,
and which decoding precision a device takes.

translate.py's and the API's `-precision` (fp32 | bf16 | fp16 | int8) and training's `-amp` ask here
before any work. A precision the device would run no faster than float32 (or not at all) is refused
in one line saying why, rather than run slowly: fp16 on the CPU (no fast float16 products there),
int8 on CUDA (PyTorch's dynamic quantization is a CPU kernel), bf16 on a CPU without AVX-512 BF16 or
AMX (oneDNN would emulate it, slower than float32). Training's `-compile` asks here whether
torch.compile can build kernels (a C++ compiler on the CPU, Triton on CUDA).
"""
import os
import shutil

import torch

PRECISIONS = ("fp32", "bf16", "fp16", "int8")
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags():
    """The CPU's feature flags (/proc/cpuinfo; an empty set where there is no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")


def cpu_description():
    """'<model name>, <n> cores, flags <those of SPEED_FLAGS it has>': the host line of a benchmark
    or an experiment's figures (the precisions' speed depends on these flags)."""
    name = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            name = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), "?")
    except OSError:
        pass
    flags = [f for f in SPEED_FLAGS if f in cpu_flags()]
    return (f"{name}, {os.cpu_count()} cores, "
            f"flags {' '.join(flags) or 'none of ' + ' '.join(SPEED_FLAGS)}")


def native_bf16_cpu():
    """True where the CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX) and oneDNN takes it."""
    if not (torch.backends.mkldnn.is_available()
            and any(f in cpu_flags() for f in NATIVE_BF16_FLAGS)):
        return False
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check()) if check is not None else True


# an int8 dot product into int32 in one instruction
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def int8_engine(linear=False):
    """The quantized engine for int8 products on this CPU ('x86', 'fbgemm' or 'onednn'),
    None if none.
    linear: for a dynamic int8 linear product (the vocabulary's, the decoder's gates). On a CPU with
    VNNI or AMX int8, oneDNN's kernel multiplies [150 x 768] by [768 x 10k] 1.2x faster than the x86
    engine's (fbgemm; the same values up to float32 rounding, bench/precision_quality.py); for the
    recurrent layers (quantize_dynamic's LSTM / GRU) fbgemm's is the faster one."""
    engines = torch.backends.quantized.supported_engines
    order = ("x86", "fbgemm", "onednn")
    if linear and "onednn" in engines and any(f in cpu_flags() for f in INT8_DOT_FLAGS):
        order = ("onednn",) + order
    return next((e for e in order if e in engines), None)


def precision_problem(precision, device_type):
    """None if `precision` runs fast on a device of `device_type` ("cpu", "cuda"), else why not (a
    sentence without the option's name)."""
    if precision == "fp32":
        return None
    if precision not in PRECISIONS:
        return f"unknown precision (choose from {', '.join(PRECISIONS)})"
    if device_type == "cuda":
        if precision == "int8":
            return "int8 is PyTorch's dynamic quantization, a CPU kernel; on CUDA use fp16 or bf16"
        if precision == "bf16" and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
            return "this GPU has no native bfloat16; use fp16"
        return None
    if device_type != "cpu":
        return f"only fp32 is supported on {device_type}"
    if precision == "fp16":
        return "float16 products are fast on CUDA only; on the CPU use bf16 (where native) or int8"
    if precision == "bf16" and not native_bf16_cpu():
        return ("this CPU has no native bfloat16 (neither avx512_bf16 nor amx_bf16 in its flags): "
                "bf16 would run slower than fp32; use int8 or fp32")
    if precision == "int8" and int8_engine() is None:
        return "this PyTorch build has no quantized CPU engine (x86, fbgemm or onednn)"
    return None


def compile_problem(device_type):
    """None if torch.compile can build kernels for a device of `device_type` here, else why not (a
    sentence without the option's name): inductor compiles C++ on the CPU and Triton kernels on
    CUDA."""
    if device_type == "cuda":
        try:
            import triton  # noqa: F401
        except ImportError:
            return "torch.compile needs the triton package on CUDA (pip install triton)"
        return None
    if not (os.environ.get("CXX") or any(shutil.which(c) for c in ("g++", "c++", "clang++"))):
        return "torch.compile needs a C++ compiler on the CPU (g++, c++ or clang++ on PATH, or CXX)"
    return None

