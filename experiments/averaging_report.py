"""The table of experiments/averaging.py, from its JSONs.

    python experiments/averaging_report.py [RESULTS_DIR] [-seeds 1,2]

Writes table.md: each view's tuned length rule and scores (test, development), then each variant's
difference from the best single checkpoint of its seed in ROUGE-L F1 points, per seed (paired bootstrap)
and pooled over the seeds (two-level bootstrap), with the 95 % interval.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from onmt.evaluation.bootstrap import pooled_difference  # noqa: E402
from onmt.translate.length_grid import FLAGGED  # noqa: E402

NAMES = {"best": "best single checkpoint (lowest validation perplexity)",
         "avg": "average of the run's last checkpoints", "avgb": "average of the checkpoints ending at the best",
         "ens": "ensemble of the two seeds' best checkpoints"}


def load(results):
    out = {}
    for name in sorted(os.listdir(results)) if os.path.isdir(results) else []:
        if name.endswith(".json"):
            with open(os.path.join(results, name), encoding="utf-8") as f:
                out[name[:-5]] = json.load(f)
    return out


def differences(results, variant, seeds, split):
    """pooled_difference of variant - best<s> on `split` in ROUGE-L F1 points over the seeds whose both
    views are scored (the ensemble against each member), or None."""
    rows = []
    for s in seeds:
        v = results.get(variant if variant == "ens" else f"{variant}{s}")
        b = results.get(f"best{s}")
        if v and b:
            rows.append(100 * (np.array(v[split]["rougeL_f_per_example"]) - np.array(b[split]["rougeL_f_per_example"])))
    return pooled_difference(np.stack(rows)) if rows else None


def rule(r):
    c = r["chosen"]
    flagged = [f"{k} {w}" for k, w in r.get("edges", {}).items() if w in FLAGGED]
    return f"alpha {c['alpha']:g}, min {c['min_length']}" + (f" ({'; '.join(flagged)})" if flagged else "")


def write_report(results, seeds=("1", "2")):
    res = load(results)
    if not res:
        return None
    lines = ["# Checkpoint averaging and ensembling against the best single checkpoint (Gigaword)", "",
             "From `python experiments/averaging.py` (protocol in its docstring). ROUGE F1, built-in scorer; "
             "test also by the official ROUGE-1.5.5 where present. Tuning: validation 1-1,000; development: "
             "validation 1,001-4,000; test: Rush et al.'s 1,951 pairs.", "",
             "| view | what | steps | length rule (tuned) | tuning R-L | dev R-1 / R-2 / R-L | dev length "
             "| test R-1 / R-2 / R-L | test length |", "|---|---|---|---|---|---|---|---|---|"]
    for v, r in res.items():
        kind = v.rstrip("0123456789")
        f = lambda s: " / ".join(f"{r[s]['rouge'][m]:.2f}" for m in ("rouge1", "rouge2", "rougeL"))  # noqa: E731
        lines.append(f"| {v} | {NAMES.get(kind, kind)} | {', '.join(map(str, r['steps']))} | {rule(r)} | "
                     f"{r['tuning_rougeL']:.2f} | {f('dev')} | {r['dev']['length']:.2f} | {f('test')} | "
                     f"{r['test']['length']:.2f} |")
    lines += ["", "## Differences from the best single checkpoint of the same seed (ROUGE-L F1 points)", "",
              "| variant | split | per seed | pooled mean | 95 % CI | p (> 0) |", "|---|---|---|---|---|---|"]
    for variant in ("avg", "avgb", "ens"):
        for split in ("dev", "test"):
            d = differences(res, variant, seeds, split)
            if d:
                lines.append(f"| {variant} | {split} | {', '.join(f'{x:+.2f}' for x in d['per_seed'])} | "
                             f"{d['mean']:+.2f} | [{d['low']:+.2f}, {d['high']:+.2f}] | {d['p']:.3f} |")
    text = "\n".join(lines) + "\n"
    path = os.path.join(results, "table.md")
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(path + ".tmp", path)
    print(text)
    return text


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="?", default=os.path.join(HERE, "results", "averaging"))
    p.add_argument("-seeds", default="1,2")
    a = p.parse_args()
    write_report(a.results, [s for s in a.seeds.split(",") if s])
