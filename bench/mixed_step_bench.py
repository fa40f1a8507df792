"""One mixed-objective training step (gamma L_rl + (1 - gamma) L_ml) against one ML step of the
reinforced model, at the paper's CNN/DM sizes by default (see reinforced_step_bench.py for the batch).

The mixed step runs the ML loss (teacher forcing with scheduled sampling), a sampled rollout with
gradient and a greedy rollout without, both of at most -tgt_len tokens from one encoding, the ROUGE-L
rewards and one backward pass. The steps alternate (ML, mixed, ML, mixed, ...) so that a change of the
machine's load hits both; the ratio of their mean times is printed, with the rollouts' mean lengths
(an untrained model rarely ends a sequence early, so the rollouts usually run the full length).

    .venv/bin/python bench/mixed_step_bench.py                      # paper sizes, ~2 min per round on CPU
    .venv/bin/python bench/mixed_step_bench.py -batch_size 8 -src_len 100 -tgt_len 25 -steps 2
"""
import argparse
import os
import resource
import time

import torch

from bench.reinforced_step_bench import add_size_args, build_model, make_batch, sync
from onmt.losses.ml import MLLoss
from onmt.losses.rl import MixedLoss
from onmt.utils.memory import reuse_freed_memory
from onmt.utils.optim import build_optimizer


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(p)
    p.add_argument("-gamma", type=float, default=0.9984)
    return p.parse_args()


def step(model, optim, batch, loss_fn):
    optim.zero_grad(set_to_none=True)
    loss, stats = loss_fn(model, batch)
    (loss / stats.n_words).backward()
    optim.step()
    return stats


def main():
    a = parse_args()
    reuse_freed_memory()  # as train.py does
    model = build_model(a)
    optim = build_optimizer(model.parameters(), "adam", 1e-4)  # as train.py builds it (fused Adam)
    batch = make_batch(a, a.device)
    losses = {"ML": MLLoss(), "mixed": MixedLoss(MLLoss(), gamma=a.gamma, max_length=a.tgt_len)}
    print(f"device {a.device}, threads {torch.get_num_threads()}, batch {a.batch_size}, src {a.src_len}, "
          f"tgt {a.tgt_len}, vocab {a.src_vocab}/{a.tgt_vocab}, emb {a.word_vec_size}, rnn {a.rnn_size}, "
          f"scheduled sampling {a.scheduled_sampling}, gamma {a.gamma}")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + f" on {os.cpu_count()} CPUs")
    for name, fn in losses.items():  # warm-up
        step(model, optim, batch, fn)
    times = {name: [] for name in losses}
    sampled = 0
    for _ in range(a.steps):
        for name, fn in losses.items():
            sync(a.device)
            start = time.perf_counter()
            stats = step(model, optim, batch, fn)
            sync(a.device)
            times[name].append(time.perf_counter() - start)
            if name == "mixed":
                sampled += stats.extra["sampled_tokens"]
    for name, ts in times.items():
        mean = sum(ts) / len(ts)
        print(f"{name:6s}: {mean:.3f} s/step (steps: {', '.join(f'{t:.2f}' for t in ts)}), "
              f"{batch.n_tgt_tokens / mean:,.0f} reference tokens/s")
    print(f"sampled rollouts: mean {sampled / (a.steps * a.batch_size):.1f} tokens per sequence "
          f"(limit {a.tgt_len})")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"mixed step / ML step: {sum(times['mixed']) / sum(times['ML']):.2f}x")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
