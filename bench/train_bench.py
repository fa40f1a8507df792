"""Training throughput of See et al.'s pointer-generator with coverage at their sizes.

    python bench/train_bench.py            # -word_vec_size 128 -rnn_size 256 -brnn -copy_attn -coverage_attn,
                                           # V_tgt 50k, source 400, target 100, batch 16
Prints target tokens/s, the analytic model FLOPs per target token it assumes (forward x 3 for
forward + backward), the measured fp32 matmul peak, model FLOPs utilization, and the step against its
float32 floor (those FLOPs at the measured peak plus one exp pass over the (B*T, V) logits).
"""
import argparse
import time

import torch

from bench.lib.common import (
    TINY_HELP,
    exp_seconds_per_element,
    floor_line,
    matmul_peak_flops,
    model_opt,
    peak_rss_mib,
    random_batch,
    sync,
    synthetic_vocabs,
    tiny_measurements,
)
from onmt.losses import build_loss
from onmt.model_builder import build_model
from onmt.utils.memory import reuse_freed_memory
from onmt.utils.optim import build_optimizer


def flops_per_target_token(E, H, V, S, T, brnn=True, coverage=True):
    """Forward matmul FLOPs per target token of the 1-layer copy+coverage model (x3 for training)."""
    h = H // 2 if brnn else H
    dirs = 2 if brnn else 1
    encoder = dirs * 2 * 4 * h * (E + h) * S / T          # LSTM gates per source token, per target token
    decoder = 2 * 4 * H * (E + H + H)                     # input feeding: [emb; attn_out] + hidden
    attention = 2 * H * H * S / T + 2 * H * H             # mlp keys once per source token, query per step
    attention += 4 * S * H + (2 * S * H if coverage else 0)  # scores (tanh(k + q [+ cov]) . v) + context
    attn_out = 2 * (2 * H) * H                            # W_out [c; h]
    generator = 2 * H * V                                 # vocabulary projection
    switch = 2 * (2 * H + E)
    return 3 * (encoder + decoder + attention + attn_out + generator + switch)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-batch_size", type=int, default=16)
    p.add_argument("-src_len", type=int, default=400)
    p.add_argument("-tgt_len", type=int, default=100)
    p.add_argument("-tgt_vocab", type=int, default=50000)
    p.add_argument("-steps", type=int, default=3)
    p.add_argument("-threads", type=int, default=0, help="torch threads (0: default)")
    p.add_argument("-device", default="cpu", help="cpu or cuda (bench/gpu_suite.sh)")
    p.add_argument("-tiny", action="store_true", help=TINY_HELP)
    a = p.parse_args()
    E, H = 128, 256
    if a.tiny:
        a.batch_size, a.src_len, a.tgt_len, a.tgt_vocab, a.steps, E, H = 2, 8, 5, 50, 1, 8, 16
        tiny_measurements()
    reuse_freed_memory()  # as train.py does
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    opt = model_opt(["-word_vec_size", str(E), "-rnn_size", str(H), "-brnn", "-layers", "1", "-copy_attn",
                     "-coverage_attn", "-global_attention", "mlp", "-dropout", "0", "-optim", "adam"])
    vocabs = synthetic_vocabs(a.tgt_vocab, a.tgt_vocab)
    model = build_model(opt, vocabs).to(a.device)
    loss_fn = build_loss(opt)
    optim = build_optimizer(model.parameters(), "adam", 1e-3)
    batch = random_batch(a.batch_size, a.src_len, a.tgt_len, a.tgt_vocab, a.tgt_vocab).to(a.device)

    def step():
        optim.zero_grad(set_to_none=True)
        loss, stats = loss_fn(model, batch)
        (loss / stats.n_words).backward()
        optim.step()
        return stats.n_words

    step()  # warm-up
    sync(a.device)
    t = time.perf_counter()
    tokens = sum(step() for _ in range(a.steps))
    sync(a.device)
    dt = time.perf_counter() - t
    tok_s = tokens / dt
    fpt = flops_per_target_token(E, H, a.tgt_vocab, a.src_len, a.tgt_len + 1)
    peak = matmul_peak_flops(device=a.device)
    print(f"config: emb {E}, rnn {H} (brnn), copy+coverage, V_tgt {a.tgt_vocab}, src {a.src_len}, "
          f"tgt {a.tgt_len}, batch {a.batch_size}, device {a.device}, threads {torch.get_num_threads()}")
    print(f"train: {tok_s:.0f} target tokens/s ({dt / a.steps:.2f} s/step)")
    print(f"model FLOPs per target token (fwd+bwd, analytic): {fpt / 1e6:.1f} MFLOP")
    print(f"fp32 matmul peak (2048^3, the faster of torch.mm and oneDNN): {peak / 1e9:.1f} GFLOP/s")
    print(f"model FLOPs utilization: {100 * tok_s * fpt / peak:.1f}%")
    exp_elements = a.batch_size * (a.tgt_len + 1) * a.tgt_vocab   # the gold softmax's one exp over (B*T, V)
    print(floor_line(dt / a.steps, fpt * tokens / a.steps, peak, exp_elements,
                     exp_seconds_per_element(device=a.device)))
    print(f"peak RSS: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
