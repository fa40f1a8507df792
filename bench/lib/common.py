"""Shared pieces of the benchmarks: random batches, the matmul peak, peak RSS, model options."""
import resource
import time

import torch

from onmt import opts
from onmt.constants import BOS, EOS, N_SPECIALS
from onmt.inputters.batch import Batch
from onmt.inputters.vocab import Vocab, Vocabs


def synthetic_vocabs(src_size, tgt_size):
    words = ["<unk>", "<blank>", "<s>", "</s>"] + [f"w{i}" for i in range(src_size - N_SPECIALS)]
    return Vocabs(Vocab(words), Vocab(words[:tgt_size]), shared=True)


def random_batch(batch_size, src_len, tgt_len, src_vocab, tgt_vocab, n_oov=20, seed=0):
    """A full-length batch: sources of src_len ids, targets <s> + tgt_len ids + </s>, some OOVs."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(N_SPECIALS, src_vocab, (batch_size, src_len), generator=g)  # (B, S)
    oov_pos = src >= tgt_vocab
    src_ex = src.clone()
    src_ex[oov_pos] = tgt_vocab + (src[oov_pos] % n_oov)  # (B, S) extended ids of source OOVs
    body = torch.randint(N_SPECIALS, tgt_vocab + n_oov, (batch_size, tgt_len), generator=g)
    tgt_ex = torch.cat([torch.full((batch_size, 1), BOS), body, torch.full((batch_size, 1), EOS)], 1)
    tgt = tgt_ex.masked_fill(tgt_ex >= tgt_vocab, 0)  # (B, T)
    return Batch(src=src, src_lengths=torch.full((batch_size,), src_len), src_ex=src_ex,
                 oovs=[[f"oov{j}" for j in range(n_oov)]] * batch_size, n_oov=n_oov,
                 indices=torch.arange(batch_size), tgt=tgt, tgt_ex=tgt_ex)


def model_opt(args):
    """Parse model + training options exactly as train.py does."""
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "unused"] + args)
    opts.update_model_opts(opt)
    opts.update_train_opts(opt)
    opts.validate_model_opts(opt)
    return opt


def sync(device):
    """Wait for the device's queued work (CUDA); nothing on the CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


# the sizes of the machine's measurements; a benchmark's -tiny (the test suite's smoke run,
# tests/e2e/test_bench_smoke.py) makes them small with `tiny_measurements`
MEASURE = {"matmul": 2048, "exp": 1 << 22}
TINY_HELP = "tiny sizes and measurements, seconds in all: the test suite's smoke run (tests/e2e/test_bench_smoke.py)"


def tiny_measurements():
    """The machine measurements of a -tiny run: small products, a short exp buffer."""
    MEASURE.update(matmul=64, exp=4096)


def matmul_peak_flops(n=None, repeats=10, device="cpu"):
    """Measured fp32 matmul FLOP/s on this machine's `device`: the best of `repeats` (n x n)(n x n)
    products (on a shared host one product can run at a fraction of the peak: the best is the peak, and
    a floor computed from it is the lowest, so a step / floor ratio is the least flattering). On the CPU
    the faster of two kernels: torch.mm (MKL's sgemm) and oneDNN's inner product, which the packed
    products of decoding and training run (on the AMD hosts ~110 GFLOP/s a core where sgemm stays ~90)."""
    n = n or MEASURE["matmul"]
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    kernels = [lambda: torch.mm(a, b)]
    onednn = getattr(torch.ops.mkldnn, "_linear_pointwise", None)
    if torch.device(device).type == "cpu" and onednn is not None and torch.backends.mkldnn.is_available():
        kernels.append(lambda: onednn(a, b, None, "none", [], ""))
    best = float("inf")
    for product in kernels:
        try:
            product()
        except RuntimeError:   # a oneDNN build that refuses the plain weight: torch.mm's peak alone
            continue
        for _ in range(repeats):
            sync(device)
            t = time.perf_counter()
            product()
            sync(device)
            best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best


def exp_seconds_per_element(n=None, repeats=5, device="cpu"):
    """Measured seconds per element of one exp pass in place (the fused softmax's, utils/fast_exp.py)
    over an n-element float32 buffer on `device` (best of `repeats`)."""
    from onmt.fused.fast_exp import exp_shifted_
    n = n or MEASURE["exp"]
    x = torch.randn(n, device=device)
    best = float("inf")
    for _ in range(repeats):
        y = x.clone()
        sync(device)
        t = time.perf_counter()
        exp_shifted_(y, 1.0)
        sync(device)
        best = min(best, time.perf_counter() - t)
    return best / n


def floor_line(seconds, flops, peak, exp_elements, exp_seconds):
    """'float32 floor F s (products at the measured peak + one exp pass over E elements): step / floor R'."""
    floor = flops / peak + exp_elements * exp_seconds
    return (f"float32 floor {floor:.3f} s (products at the measured peak, one exp pass over {exp_elements:,} "
            f"elements): step / floor {seconds / floor:.2f}")


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
