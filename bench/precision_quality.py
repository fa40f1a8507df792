"""Translation speed and ROUGE of each -precision against fp32, on the same lines, one process.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.precision_quality \\
        -model runs/rl_vs_ml/ml/model_best.pt -src /work/shared/data/gigaword/valid.src.txt \\
        -tgt /work/shared/data/gigaword/valid.tgt.txt -n 1000

Translates the first -n lines (read in place) with translate.py's defaults for the checkpoint (beam 5,
its length and n-gram rules) at each precision this host runs fast (onmt/hardware.py; -precisions to
choose; -translate_opts adds translate.py options), fp32 first and again last (the two fp32 timings show
the machine's drift). Prints, per precision: sentences/s (the translation call alone, after one warm-up
batch), its speed over fp32's (the mean time of the two fp32 runs), ROUGE-1/2/L F1 against -tgt, the
difference from fp32 and the paired bootstrap's two-sided p-value of that difference
(onmt/evaluation/bootstrap.py, 1000 samples), and the share of predictions identical to fp32's. Then the
fp32 translation against its float32 floor: every product it makes (counted in one more, untimed, fp32
translation: FlopCounterMode's mm / addmm / bmm and oneDNN's packed products) at the measured matmul
peak, plus one exp pass over each step's (rows x V) logits.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.lib.common import TINY_HELP, exp_seconds_per_element, matmul_peak_flops, tiny_measurements
from onmt import opts
from onmt.evaluation import METRICS, score
from onmt.evaluation.bootstrap import paired_test
from onmt.hardware import PRECISIONS, cpu_description, precision_problem
from onmt.translate.session import load_session, translate_lines
from onmt.utils.memory import reuse_freed_memory

SHOWN = ("rouge1", "rouge2", "rougeL")


def run(model, precision, src, batch_size, device, more=()):
    """(the first predictions, seconds of the timed translation)."""
    session, opt = _session(model, precision, batch_size, device, more)
    translate_lines(opt, session, src[:batch_size], show_progress=False)   # warm-up (and the weights' preparation)
    t = time.perf_counter()
    results = translate_lines(opt, session, src, show_progress=False)
    return [" ".join(r[0].tokens) for r in results], time.perf_counter() - t


def _session(model, precision, batch_size, device, more):
    session = load_session(model, torch.device(device), precision)
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", model, "-src", "-", "-precision", precision,
                                                          "-batch_size", str(batch_size), *more])
    opts.update_translate_opts(opt)
    return session, opt


def _packed_flops(x_shape, *args, out_shape=None, **kwargs):
    """oneDNN's packed product x (M, K) -> (M, N): 2 M K N (FlopCounterMode does not know the op)."""
    return 2 * math.prod(out_shape) * x_shape[-1]


def counted_run(model, src, batch_size, device, more=()):
    """One fp32 translation of `src` as `run` makes it, untimed, counting: (the rows of each decoding step,
    {op: FLOPs} of every product: mm, addmm and bmm as FlopCounterMode sees them (the encoder's LSTM, the
    attention keys and scores, the switch) and oneDNN's packed products (the vocabulary, the decoder's
    gates))."""
    session, opt = _session(model, "fp32", batch_size, device, more)
    translate_lines(opt, session, src[:batch_size], show_progress=False)
    rows = []   # whichever step the search calls
    step = session.model.decode_step_scores
    session.model.decode_step_scores = lambda inputs, state: rows.append(inputs.size(0)) or step(inputs, state)
    packed = getattr(torch.ops.mkldnn, "_linear_pointwise", None)   # absent from a build without oneDNN
    counter = FlopCounterMode(display=False, custom_mapping={packed: _packed_flops} if packed is not None else {})
    with counter:
        translate_lines(opt, session, src, show_progress=False)
    flops = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    return rows, flops, session.model.tgt_vocab_size


def product_ratios(model, precisions, rows, device, repeats=20):
    """ms per call of the model's vocabulary product alone, (rows x D)(D x V), at each precision, prepared
    as decoding prepares it (low_precision.prepared_linear): where everything else in a step stayed as
    it is, a precision's whole-translation speed-up is below this product's."""
    from onmt.fused.low_precision import prepared_linear
    from onmt.translate.session import model_from_checkpoint
    from onmt.utils.checkpoint import load_checkpoint
    net, _, _ = model_from_checkpoint(load_checkpoint(model, device="cpu"), device)
    gen = net.generator
    # the product's width: the copy generator's (and the plain one's) linear layer; the reinforced
    # model's W_out = tanh(E W_proj) is (V x D) with D its projection's width (the switch's input once
    # took its place for every model: See et al.'s switch reads 2H + E = 640, its vocabulary product H = 256)
    D = gen.linear.in_features if hasattr(gen, "linear") else gen.proj.size(1)
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(net.tgt_vocab_size, D, generator=g) * 0.05, torch.randn(net.tgt_vocab_size, generator=g)
    x = torch.randn(rows, D, generator=g)
    out = {}
    for q in precisions:
        f = prepared_linear(w.to(device), b.to(device), q, rows)
        for _ in range(3):
            f(x.to(device))
        t = time.perf_counter()
        for _ in range(repeats):
            f(x.to(device))
        if device != "cpu":
            torch.cuda.synchronize()
        out[q] = 1e3 * (time.perf_counter() - t) / repeats
    return out, (rows, D, net.tgt_vocab_size)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-model", required=True)
    p.add_argument("-src", required=True)
    p.add_argument("-tgt", required=True)
    p.add_argument("-n", type=int, default=1000, help="the first N lines (0: all)")
    p.add_argument("-batch_size", type=int, default=30)
    p.add_argument("-precisions", default="", help="comma-separated (default: every precision this host runs fast)")
    p.add_argument("-threads", type=int, default=1)
    p.add_argument("-device", default="cpu", help="cpu or cuda (bench/gpu_suite.sh)")
    p.add_argument("-translate_opts", default="",
                   help="more translate.py options, one string (e.g. '-min_length 20 -max_length 20')")
    p.add_argument("-tiny", action="store_true", help=TINY_HELP)
    a = p.parse_args(argv)
    if a.tiny:
        tiny_measurements()
    torch.set_num_threads(a.threads)
    reuse_freed_memory()   # as translate.py does: each step's (rows x X) scores reuse freed memory, no page faults
    src = [line.rstrip("\n") for line in open(a.src, encoding="utf-8")]
    ref = [line.rstrip("\n") for line in open(a.tgt, encoding="utf-8")]
    if a.n:
        src, ref = src[:a.n], ref[:a.n]
    wanted = a.precisions.split(",") if a.precisions else [q for q in PRECISIONS
                                                            if not precision_problem(q, torch.device(a.device).type)]
    order = ["fp32"] + [q for q in wanted if q != "fp32"] + ["fp32"]
    idx = [METRICS.index(m) for m in SHOWN]
    rows, base = [], None
    # the fp32 peak before and after each translation, the largest kept: on a shared host one measurement
    # can be slowed down, and the largest gives the lowest floor (the least flattering time / floor)
    peaks = [matmul_peak_flops(device=a.device)]
    for i, precision in enumerate(order):
        preds, secs = run(a.model, precision, src, a.batch_size, a.device, a.translate_opts.split())
        f = score(preds, ref)[:, idx, 2] * 100   # (n, 3) F1
        if base is None:
            base = (preds, f, secs)
        p_low, p_high = paired_test(f, base[1]), paired_test(base[1], f)
        two_sided = np.minimum(1.0, 2 * np.minimum(p_low, p_high))
        same = sum(x == y for x, y in zip(preds, base[0])) / len(preds)
        name = precision + (" (again)" if i == len(order) - 1 else "")
        rows.append((name, secs, f.mean(0), f.mean(0) - base[1].mean(0), two_sided, same))
        print(f"done {name}: {len(src) / secs:.1f} sent/s", flush=True)
        peaks.append(matmul_peak_flops(device=a.device))
    ms, shape = product_ratios(a.model, list(dict.fromkeys(order)), a.batch_size * 5, a.device)
    print(f"\n{len(src)} lines of {a.src}, {a.model}, {torch.get_num_threads()} thread(s)"
          + (f", {a.translate_opts}" if a.translate_opts else "") + f"\nhost: {cpu_description()}")
    print(f"the vocabulary product alone, ({shape[0]} x {shape[1]})(x {shape[2]}), ms per call: "
          + ", ".join(f"{q} {t:.2f} ({ms['fp32'] / t:.2f}x fp32)" for q, t in ms.items())
          + ": a precision's whole speed-up stays below its product's")
    # fp32's time: the mean of its two runs (the first and the last translation of the process; on this
    # kind of host either can be the slower by 10 %), the baseline of every "x fp32" and of the floor ratio
    fp32_secs = (rows[0][1] + rows[-1][1]) / 2
    step_rows, flops, V = counted_run(a.model, src, a.batch_size, a.device, a.translate_opts.split())
    peak, exp_s = max(peaks), exp_seconds_per_element(device=a.device)
    floor = sum(flops.values()) / peak + sum(step_rows) * V * exp_s
    print(f"fp32 matmul peak measured {len(peaks)} times: {min(peaks) / 1e9:.1f}-{max(peaks) / 1e9:.1f} GFLOP/s "
          "(the largest for the floor)")
    print("products of the fp32 translation (counted in a separate run): "
          + ", ".join(f"{op} {n / 1e9:.1f}" for op, n in sorted(flops.items(), key=lambda kv: -kv[1])) + " GFLOP")
    print(f"fp32: {fp32_secs:.2f} s (the mean of its two runs) over {len(step_rows)} decoding steps "
          f"({sum(step_rows):,} rows); its float32 floor {floor:.2f} s (every product at the measured peak, one exp "
          f"pass over the rows' {V:,} logits): {fp32_secs / floor:.2f}x")
    print("| precision | sent/s | x fp32 | " + " | ".join(f"{m} F1 (diff, p)" for m in SHOWN) + " | same as fp32 |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in SHOWN) + " | --- |")
    for name, secs, mean, diff, pv, same in rows:
        cells = " | ".join(f"{m:.2f} ({d:+.2f}, {q:.2f})" for m, d, q in zip(mean, diff, pv))
        print(f"| {name} | {len(src) / secs:.1f} | {fp32_secs / secs:.2f} | {cells} | {same:.1%} |")


if __name__ == "__main__":
    main()
