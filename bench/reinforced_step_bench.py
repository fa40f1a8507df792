"""One ML training step of the reinforced model (forward + NLL over tgt_ex + backward + Adam step).

Defaults are the paper's CNN/DM sizes (embedding 100, encoder 2x200 bidirectional, decoder 400,
vocabularies 150k/50k, source 400, target 100, batch 32) with scheduled sampling 0.25. Prints the
machine load, target tokens/s, peak RSS, the analytic matmul FLOPs per target token and the model
FLOPs utilization against a torch.mm peak measured in the same run, for each variant:
  optimized  the training path: MLLoss (model.gold_log_likelihood, no (B*T, X) distribution)
  full       forward(batch) (full log-probs after the loop, as the translator's gold scoring) + gather
  hoisted    generator at every step on every row, W_out once per pass (`per_step_forward(hoisted=True)`)
  naive      the same, recomputing W_out at every step (`per_step_forward()`; keeps one (V, 3H)
             W_out per step for backward: ~48 GB at full size, so not in the default list)
  compiled   the optimized step with the decoder's step through torch.compile (train.py -compile); its
             first step (the compilation) is timed apart and printed
  amp        the optimized step under bfloat16 autocast, as train.py -amp runs it (on the CPU where
             bfloat16 is native: onmt/hardware.py)
and the speed ratio of the optimized step over each. A variant named twice (`-variants optimized compiled
optimized compiled`) is timed each time and its mean used: A B A B. Peak RSS is the process's, so run the optimized
variant first (the default order).

    .venv/bin/python bench/reinforced_step_bench.py -batch_size 8 -src_len 100 -tgt_len 25 -steps 2
"""
import argparse
import os
import resource
import time
from types import SimpleNamespace

import torch

from bench.lib.common import (
    TINY_HELP,
    exp_seconds_per_element,
    floor_line,
    matmul_peak_flops,
    sync,
    tiny_measurements,
)
from bench.lib.per_step import per_step_forward  # the tests' reference is this benchmark's baseline
from onmt.constants import BOS, EOS, N_SPECIALS, PAD, SPECIALS
from onmt.execution import Execution, compile_step
from onmt.inputters.batch import Batch
from onmt.inputters.vocab import Vocab, Vocabs
from onmt.losses.ml import MLLoss
from onmt.model_builder import MODEL_REGISTRY, init_parameters
from onmt.opts import fill_defaults, model_opts
from onmt.utils.memory import reuse_freed_memory
from onmt.utils.optim import build_optimizer


def add_size_args(p):
    """The step benchmarks' sizes (the paper's CNN/DM sizes by default) and device."""
    p.add_argument("-batch_size", type=int, default=32)
    p.add_argument("-src_len", type=int, default=400)
    p.add_argument("-tgt_len", type=int, default=100, help="target tokens predicted per example")
    p.add_argument("-steps", type=int, default=3, help="timed steps per variant (after the warm-up steps)")
    p.add_argument("-src_vocab", type=int, default=150000)
    p.add_argument("-tgt_vocab", type=int, default=50000)
    p.add_argument("-word_vec_size", type=int, default=100)
    p.add_argument("-rnn_size", type=int, default=400)
    p.add_argument("-scheduled_sampling", type=float, default=0.25)
    p.add_argument("-device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-tiny", action="store_true", help=TINY_HELP)


TINY = {"batch_size": 2, "src_len": 8, "tgt_len": 5, "steps": 1, "src_vocab": 50, "tgt_vocab": 30,
        "word_vec_size": 8, "rnn_size": 8, "warmup": 1}


def apply_tiny(a):
    """-tiny: the sizes of TINY (those `a` has) and small machine measurements."""
    if a.tiny:
        for name, value in TINY.items():
            if name in vars(a):
                setattr(a, name, value)
        tiny_measurements()
    return a


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(p)
    p.add_argument("-warmup", type=int, default=3,
                   help="untimed steps before each variant's timed ones (the allocator's heap and the caches "
                        "settle before the timing)")
    p.add_argument("-variants", nargs="+", default=["optimized", "full", "hoisted"],
                   choices=["optimized", "full", "hoisted", "naive", "compiled", "amp"],
                   help="naive keeps one W_out (V x 3H) per decoder step for backward: ~48 GB at full size")
    return p.parse_args()


def build_model(a, execution=Execution()):
    """The reinforced model at the sizes of `a` (shared vocabulary of made-up words), in train mode:
    the registry's class for `execution` (FusedReinforcedModel by default)."""
    torch.manual_seed(a.seed)
    words = SPECIALS + [f"w{i}" for i in range(a.src_vocab - N_SPECIALS)]
    vocabs = Vocabs(Vocab(words), Vocab(words[: a.tgt_vocab]), shared=True)
    opt = SimpleNamespace(enc_layers=1, dec_layers=1, word_vec_size=a.word_vec_size, rnn_size=a.rnn_size,
                          brnn=True, dropout=0.0, no_temporal_attn=False, no_intra_decoder_attn=False,
                          no_tied_output=False, scheduled_sampling=a.scheduled_sampling,
                          scheduled_sampling_mode="argmax", param_init=0.1, intra_attn_scale="sqrt")
    # the model options added since (scheduled_sampling_start, ...) at their defaults: an option the
    # model gains no longer breaks the benchmark (it did, unseen: tests/e2e/test_bench_smoke.py)
    fill_defaults(opt, model_opts)
    model = MODEL_REGISTRY["reinforced"].model_class(execution).from_opt(opt, vocabs, execution=execution)
    init_parameters(model, opt.param_init)  # as onmt.model_builder.build_model does
    return model.to(a.device).train()


def make_batch(a, device):
    """Zipf-distributed words (so that OOVs are rare, as in news text), every sequence full length."""
    g = torch.Generator().manual_seed(a.seed)
    weights = 1.0 / torch.arange(1, a.src_vocab - N_SPECIALS + 1, dtype=torch.float64)
    draw = lambda n: torch.multinomial(weights, n, replacement=True, generator=g) + N_SPECIALS  # noqa: E731
    B, S, T = a.batch_size, a.src_len, a.tgt_len
    src = draw(B * S).view(B, S)  # (B, S)
    src_ex, oovs = src.clone(), []
    for b in range(B):  # setup only, not timed
        words = [w for w in dict.fromkeys(src[b].tolist()) if w >= a.tgt_vocab]
        slot = {w: a.tgt_vocab + j for j, w in enumerate(words)}
        src_ex[b] = torch.tensor([slot.get(w, w) for w in src[b].tolist()])
        oovs.append([str(w) for w in words])
    body = draw(B * (T - 1)).view(B, T - 1)  # (B, T-1)
    body = torch.where(body < a.tgt_vocab, body, torch.zeros_like(body))  # <unk> for out-of-vocabulary
    tgt = torch.cat([torch.full((B, 1), BOS), body, torch.full((B, 1), EOS)], 1)  # (B, T+1)
    batch = Batch(src=src, src_lengths=torch.full((B,), S), src_ex=src_ex, oovs=oovs,
                  n_oov=max(len(o) for o in oovs), indices=torch.arange(B), tgt=tgt, tgt_ex=tgt.clone())
    return batch.to(device)


def flops_per_step(a, n_oov):
    """Analytic matmul FLOPs (2 per multiply-add) of one training step; backward = 2x forward."""
    B, S, T, E, H, V = a.batch_size, a.src_len, a.tgt_len, a.word_vec_size, a.rnn_size, a.tgt_vocab
    h = H // 2
    enc = 2 * (2 * B * S * 4 * h * (E + h))                  # 2 directions, one layer
    dec = 2 * B * T * 4 * H * (E + H)
    keys = 2 * B * S * H * H                                 # W^e h^e, once per sequence
    temporal = 2 * 2 * B * T * S * H                         # scores + context
    intra = 2 * B * T * H * H + 2 * 2 * B * H * T * (T - 1) // 2
    tied = 2 * V * E * 3 * H                                 # W_out = tanh(E_tgt W_proj), once per pass
    proj = 2 * B * T * 3 * H * V                             # generator over V (OOV slots are constants)
    fwd = enc + dec + keys + temporal + intra + tied + proj
    sampled = a.scheduled_sampling * (2 * B * (T - 1) * 3 * H * V)  # forward only, for the sampled rows
    parts = dict(encoder=3 * enc, decoder_lstm=3 * dec, attention=3 * (keys + temporal + intra),
                 tied_W_out=3 * tied, generator=3 * proj, in_loop_sampling=sampled)
    return 3 * fwd + sampled, parts


def train_step(model, optim, batch, variant):
    optim.zero_grad(set_to_none=True)
    if variant == "amp":   # train.py -amp: the forward pass under bfloat16 autocast (no loss scaling)
        with torch.autocast(device_type=torch.device(batch.src.device).type, dtype=torch.bfloat16):
            loss, _ = MLLoss()(model, batch)
        loss = loss / batch.n_tgt_tokens
    elif variant == "optimized":  # the real training loss
        loss, _ = MLLoss()(model, batch)
        loss = loss / batch.n_tgt_tokens
    else:
        logp, _ = model(batch) if variant == "full" else per_step_forward(model, batch, hoisted=variant == "hoisted")
        gold = batch.tgt_ex[:, 1:]
        nll = -logp.gather(2, gold.unsqueeze(2)).squeeze(2)  # (B, T)
        loss = nll.masked_fill(gold == PAD, 0.0).sum() / batch.n_tgt_tokens
    loss.backward()
    optim.step()
    return loss.item()


def time_variant(model, optim, batch, a, variant):
    compiled = variant == "compiled"
    if compiled:   # train.py -compile's step, on the decoder only while this variant runs
        if "compiled_step" not in vars(a):
            compile_step(model.decoder)   # what a model built with Execution(compile="decoder-step") does
            a.compiled_step = model.decoder.step
        model.decoder.step = a.compiled_step
        variant = "optimized"
    sync(a.device)
    start = time.perf_counter()
    train_step(model, optim, batch, variant)  # warm-up (the first compiled one compiles)
    sync(a.device)
    if compiled and "compile_seconds" not in vars(a):
        a.compile_seconds = time.perf_counter() - start
        print(f"compiled: first step (compilation included) {a.compile_seconds:.1f} s")
    for _ in range(a.warmup - 1):
        train_step(model, optim, batch, variant)
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = train_step(model, optim, batch, variant)
    sync(a.device)
    if compiled:
        del model.decoder.step   # the class's eager step again
    return (time.perf_counter() - start) / a.steps, loss


def main():
    a = apply_tiny(parse_args())
    reuse_freed_memory()  # as train.py does
    model = build_model(a)
    optim = build_optimizer(model.parameters(), "adam", 1e-3)  # as train.py builds it (fused Adam)
    batch = make_batch(a, a.device)
    peak = matmul_peak_flops(device=a.device)
    exp_s = exp_seconds_per_element(device=a.device)
    exp_elements = a.batch_size * a.tgt_len * a.tgt_vocab   # the gold softmax's one exp over (B*T, V)
    flops, parts = flops_per_step(a, batch.n_oov)
    tokens = batch.n_tgt_tokens
    print(f"device {a.device}, threads {torch.get_num_threads()}, batch {a.batch_size}, src {a.src_len}, "
          f"tgt {a.tgt_len}, vocab {a.src_vocab}/{a.tgt_vocab} (+{batch.n_oov} OOV slots), "
          f"emb {a.word_vec_size}, rnn {a.rnn_size}, scheduled sampling {a.scheduled_sampling}")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + f" on {os.cpu_count()} CPUs")
    print(f"assumed FLOPs per target token: {flops / tokens / 1e6:.1f} MFLOP (step {flops / 1e9:.1f} GFLOP; "
          + ", ".join(f"{k} {v / flops:.0%}" for k, v in parts.items()) + ")")
    runs, done = {}, []
    for name in a.variants:
        seconds, loss = time_variant(model, optim, batch, a, name)
        runs.setdefault(name, []).append(seconds)
        done.append((name, seconds, loss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        print(f"done {name}: {seconds:.3f} s/step", flush=True)
    # the peak again after the steps: on a shared host one measurement can be slowed down; the larger
    # is the peak (the lower floor, the less flattering step / floor)
    again = matmul_peak_flops(device=a.device)
    print(f"measured fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s before the steps, {again / 1e9:.1f} after")
    peak = max(peak, again)
    for name, seconds, loss, rss in done:
        print(f"{name:9s}: {seconds:.3f} s/step, {tokens / seconds:,.0f} tgt tokens/s, "
              f"MFU {flops / seconds / peak:.1%}, loss {loss:.3f}, "
              f"peak RSS {rss:.0f} MiB"
              + (f", peak GPU {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
                 if str(a.device).startswith("cuda") else "")
              + ("; " + floor_line(seconds, flops, peak, exp_elements, exp_s) if name in ("optimized", "compiled")
                 else ""))
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    results = {name: sum(times) / len(times) for name, times in runs.items()}   # s/step, mean of the runs
    for name in ("full", "hoisted", "naive", "compiled", "amp"):
        if name in results and "optimized" in results:
            times = (f"(s/step: optimized {' / '.join(f'{t:.3f}' for t in runs['optimized'])}, "
                     f"{name} {' / '.join(f'{t:.3f}' for t in runs[name])})")
            if name in ("compiled", "amp"):   # the optimized float32 step is the baseline these speed up
                ratio = results["optimized"] / results[name]
                print(f"speed-up of {name} over the optimized step: {ratio:.2f}x {times}")
            else:                             # the baselines the optimized step speeds up
                ratio = results[name] / results["optimized"]
                print(f"speed-up of the optimized step over {name}: {ratio:.2f}x {times}")


if __name__ == "__main__":
    main()
