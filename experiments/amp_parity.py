"""-amp on the CPU against float32 training: the same reinforced model, data, seed and steps, trained
twice on one thread each, with and without -amp (bfloat16 autocast: the vocabulary products, LSTMs and
attention in bfloat16, the softmax, log-sum-exp, mixture and losses in float32; onmt/modules/precision.py).

    python experiments/amp_parity.py [-seeds 1 2] [-steps 2000] [-workdir runs/amp_parity]

Data: shared Gigaword preprocessed as experiments/rl_vs_ml.py does (runs/rl_vs_ml/prep, built there if
absent; its validation set is the first 1,000 pairs of valid). Each arm is resumable (a rerun resumes
from its last checkpoint, and skips an arm whose figures are written). Per arm and seed it writes
experiments/results/amp_parity/<arm>_s<seed>.json: the validation curve as train.py logged it (under -amp
that validation itself runs under autocast), the seconds of training, and the final model's validation
perplexity recomputed in float32 with no autocast (the same model judged the same way for both arms);
then table.md with the float32 perplexities side by side (amp / fp32 - 1 per seed) and the training speed
ratio (each arm's target tokens per second of training, from its checkpoint's train_seconds; the arms
run two at a time, so the ratio is from runs side by side on a shared machine: bench/reinforced_step_bench.py
-variants optimized amp gives the one-process ratio). Needs a CPU with native bfloat16 (onmt/hardware.py).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from experiments.common import ROOT, run  # noqa: E402
from experiments.rl_vs_ml import MODEL, latest_checkpoint, prepare_data, read_curve, write_json  # noqa: E402
from onmt.hardware import cpu_description  # noqa: E402

RESULTS = os.path.join(ROOT, "experiments", "results", "amp_parity")
ARMS = {"fp32": [], "amp": ["-amp"]}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "amp_parity"))
    p.add_argument("-prep_workdir", default=os.path.join(ROOT, "runs", "rl_vs_ml"),
                   help="where experiments/rl_vs_ml.py keeps (or here builds) the preprocessed Gigaword")
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "gigaword"))
    p.add_argument("-seeds", type=int, nargs="+", default=[1, 2])
    p.add_argument("-steps", type=int, default=2000)
    p.add_argument("-results", default=RESULTS)
    return p.parse_args(argv)


def arm_command(a, prep, arm, seed):
    prefix = os.path.join(a.workdir, f"{arm}_s{seed}", "model")
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *MODEL, "-seed", str(seed),
           "-train_steps", str(a.steps), "-valid_steps", str(a.steps // 4),
           "-save_checkpoint_steps", str(a.steps // 4), "-keep_checkpoint", "1", *ARMS[arm]]
    last = latest_checkpoint(prefix)
    return cmd + (["-train_from", last] if last else []), prefix


@torch.no_grad()
def float32_validation(checkpoint, prep):
    """(validation perplexity, target tokens) of `checkpoint` over the preprocessed validation set, in
    float32 without autocast: the model's gold log-likelihood (interface.py), exp of the mean NLL."""
    from onmt.inputters.dataset import ShardedDataset
    from onmt.interface import gold_targets
    from onmt.translate.session import model_from_checkpoint
    from onmt.utils.checkpoint import load_checkpoint
    model, _, _ = model_from_checkpoint(load_checkpoint(checkpoint, device="cpu"), "cpu", name=checkpoint)
    nll, tokens = 0.0, 0
    for batch in ShardedDataset.from_data(prep, "valid", 100, shuffle=False).iter_epoch(0):
        ll, _, _ = model.gold_log_likelihood(batch)  # (B, T-1), 0 at padding
        _, mask = gold_targets(batch, model.tgt_vocab_size + batch.n_oov)
        nll -= float(ll.double().sum())
        tokens += int(mask.sum())
    return math.exp(nll / tokens), tokens


def finish(a, prep, arm, seed, prefix):
    """The arm's figures, from its train.log and its final checkpoint."""
    last = latest_checkpoint(prefix)
    ckpt = torch.load(last, map_location="cpu", weights_only=True)
    ppl, tokens = float32_validation(last, prep)
    figures = {"arm": arm, "seed": seed, "step": int(ckpt["step"]), "train_seconds": float(ckpt["train_seconds"]),
               "valid_ppl_fp32": round(ppl, 4), "valid_tokens": tokens,
               "curve": read_curve(os.path.join(os.path.dirname(prefix), "train.log")),
               "host": cpu_description()}
    write_json(os.path.join(a.results, f"{arm}_s{seed}.json"), figures)
    print(f"{arm} seed {seed}: step {figures['step']}, float32 validation ppl {ppl:.3f}, "
          f"{figures['train_seconds']:.0f} s of training", flush=True)


def table(a):
    rows, by = [], {}
    for name in sorted(os.listdir(a.results)) if os.path.isdir(a.results) else []:
        if name.endswith(".json"):
            with open(os.path.join(a.results, name), encoding="utf-8") as f:
                r = json.load(f)
            by[(r["arm"], r["seed"])] = r
    lines = ["| seed | steps | fp32: valid ppl (float32) | amp: valid ppl (float32) | amp / fp32 - 1 | "
             "amp's own validation ppl (autocast) | training time fp32 / amp |", "|---|---|---|---|---|---|---|"]
    for seed in sorted({s for _, s in by}):
        f, m = by.get(("fp32", seed)), by.get(("amp", seed))
        if not (f and m):
            continue
        own = m["curve"][-1]["ppl"] if m["curve"] else float("nan")
        rows.append(m["valid_ppl_fp32"] / f["valid_ppl_fp32"] - 1)
        lines.append(f"| {seed} | {f['step']} | {f['valid_ppl_fp32']:.3f} | {m['valid_ppl_fp32']:.3f} | "
                     f"{100 * rows[-1]:+.2f} % | {own:.3f} | {f['train_seconds'] / m['train_seconds']:.2f}x |")
    if rows:
        lines.append(f"\nMean amp / fp32 - 1: {100 * sum(rows) / len(rows):+.2f} % over {len(rows)} seeds. "
                     f"Host: {next(iter(by.values()))['host']}.")
    text = "\n".join(lines) + "\n"
    os.makedirs(a.results, exist_ok=True)
    with open(os.path.join(a.results, "table.md"), "w", encoding="utf-8") as out:
        out.write(text)
    print(text)


def main(argv=None):
    a = parse_args(argv)
    prep = prepare_data(argparse.Namespace(workdir=a.prep_workdir, data=a.data))
    jobs = []
    for seed in a.seeds:
        for arm in ARMS:
            if os.path.exists(os.path.join(a.results, f"{arm}_s{seed}.json")):
                continue
            cmd, prefix = arm_command(a, prep, arm, seed)
            os.makedirs(os.path.dirname(prefix), exist_ok=True)
            jobs.append((arm, seed, prefix, cmd))
    for i in range(0, len(jobs), 2):   # two one-thread runs side by side use both cores
        running = [(arm, seed, prefix, run(cmd, log=os.path.join(os.path.dirname(prefix), "train.log"), wait=False))
                   for arm, seed, prefix, cmd in jobs[i:i + 2]]
        for arm, seed, prefix, proc in running:
            if proc.wait() != 0:
                raise SystemExit(f"{arm} seed {seed} failed: see {os.path.dirname(prefix)}/train.log")
            finish(a, prep, arm, seed, prefix)
    table(a)


if __name__ == "__main__":
    main()
