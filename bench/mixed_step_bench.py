"""One mixed-objective training step (gamma L_rl + (1 - gamma) L_ml) against one ML step of the
reinforced model, at the paper's CNN/DM sizes by default (see reinforced_step_bench.py for the batch).

The mixed step runs the ML loss (teacher forcing with scheduled sampling), a sampled rollout with
gradient and a greedy rollout without, both of at most -tgt_len tokens from one encoding, the ROUGE-L
rewards and one backward pass. A dropout-free model (the paper's) encodes the batch once for both terms
and derives W_out once (onmt/losses/rl.py `dropout_free`); the arm "mixed x2" is the mixed step as it was
before, each term encoding for itself (the same terms and gradients: tests/unit/test_rl_shared_encoding.py).
The steps alternate (ML, mixed, mixed x2, ML, ...) so that a change of the machine's load hits every arm;
the ratios of their mean times are printed, with the rollouts' mean lengths (an untrained model rarely
ends a sequence early, so the rollouts usually run the full length).

    .venv/bin/python bench/mixed_step_bench.py                      # paper sizes, ~2 min per round on CPU
    .venv/bin/python bench/mixed_step_bench.py -batch_size 8 -src_len 100 -tgt_len 25 -steps 2
"""
import argparse
import contextlib
import os
import resource
import time

import torch

from bench.reinforced_step_bench import add_size_args, apply_tiny, build_model, make_batch, sync
from onmt.losses import rl
from onmt.losses.ml import MLLoss
from onmt.losses.rl import MixedLoss
from onmt.utils.memory import reuse_freed_memory
from onmt.utils.optim import build_optimizer


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(p)
    p.add_argument("-gamma", type=float, default=0.9984)
    return p.parse_args()


@contextlib.contextmanager
def encoding_per_term():
    """The mixed step before the shared encoding: every model counts as having dropout."""
    shared = rl.dropout_free
    rl.dropout_free = lambda model: False
    try:
        yield
    finally:
        rl.dropout_free = shared


def step(model, optim, batch, loss_fn, apart=False):
    """One optimizer step; the loss's parts backpropagated one after the other, as the trainer does."""
    optim.zero_grad(set_to_none=True)
    with encoding_per_term() if apart else contextlib.nullcontext():
        if hasattr(loss_fn, "parts"):
            parts, stats = loss_fn.parts(model, batch)
        else:
            loss, stats = loss_fn(model, batch)
            parts = {"loss": loss}
    names = list(parts)
    for i, name in enumerate(names):
        (parts[name] / stats.n_words).backward(retain_graph=i < len(names) - 1)
    optim.step()
    return stats


def main():
    a = apply_tiny(parse_args())
    reuse_freed_memory()  # as train.py does
    model = build_model(a)
    optim = build_optimizer(model.parameters(), "adam", 1e-4)  # as train.py builds it (fused Adam)
    batch = make_batch(a, a.device)
    mixed = MixedLoss(MLLoss(), gamma=a.gamma, max_length=a.tgt_len)
    losses = {"ML": MLLoss(), "mixed": mixed, "mixed x2": mixed}
    print(f"device {a.device}, threads {torch.get_num_threads()}, batch {a.batch_size}, src {a.src_len}, "
          f"tgt {a.tgt_len}, vocab {a.src_vocab}/{a.tgt_vocab}, emb {a.word_vec_size}, rnn {a.rnn_size}, "
          f"scheduled sampling {a.scheduled_sampling}, gamma {a.gamma}")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + f" on {os.cpu_count()} CPUs")
    print(f"dropout-free (one encoding per mixed step): {rl.dropout_free(model)}")
    for name, fn in losses.items():  # warm-up
        step(model, optim, batch, fn, apart=name == "mixed x2")
    times = {name: [] for name in losses}
    sampled = 0
    for _ in range(a.steps):
        for name, fn in losses.items():
            sync(a.device)
            start = time.perf_counter()
            stats = step(model, optim, batch, fn, apart=name == "mixed x2")
            sync(a.device)
            times[name].append(time.perf_counter() - start)
            if name == "mixed":
                sampled += stats.extra["sampled_tokens"]
    for name, ts in times.items():
        mean = sum(ts) / len(ts)
        print(f"{name:8s}: {mean:.3f} s/step (steps: {', '.join(f'{t:.2f}' for t in ts)}), "
              f"{batch.n_tgt_tokens / mean:,.0f} reference tokens/s")
    print(f"sampled rollouts: mean {sampled / (a.steps * a.batch_size):.1f} tokens per sequence "
          f"(limit {a.tgt_len})")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"mixed step / ML step: {sum(times['mixed']) / sum(times['ML']):.2f}x "
          f"(encoding per term: {sum(times['mixed x2']) / sum(times['ML']):.2f}x)")
    print(f"one encoding / one per term: {sum(times['mixed']) / sum(times['mixed x2']):.3f}")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
