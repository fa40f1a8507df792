"""experiments/copy_sanity.py's report: table.md with the exact McNemar tests of PAIRED, and curves.png,
from the runs' JSONs (commit them)."""
import json
import os
import statistics


def _refs(rs, key, fmt):
    values = [r["reference"][key] for r in rs if key in (r.get("reference") or {})]
    return " / ".join(format(v, fmt) for v in values) if values else "-"


def collapses(curve, after=0):
    """10-step training reports under 90 % accuracy after the first one at 95 % or more (and after
    step `after`): the task was learnt, then lost for a while."""
    accs = [acc for _, acc, _, _ in curve]
    first = next((i for i, acc in enumerate(accs) if acc >= 95), len(accs))
    return sum(acc < 90 for step, acc, _, _ in curve[first:] if step > after)


def _p99(values):
    return sorted(values)[int(0.99 * (len(values) - 1))] if values else 0.0


# (arm, its control): exact McNemar tests over the test pairs of every seed both have
PAIRED = [("r_sqrt_d0", "r_none_d0"), ("r_sqrt_d3", "r_none_d3"), ("r_sqrt_d3", "see_d3"),
          ("r_sqrt_d0_decay", "r_sqrt_d0"), ("r_sqrt_d0_decay", "see_d3_decay"), ("see_d3_decay", "see_d3"),
          ("sort_r_sqrt_d0", "sort_r_none_d0"), ("sort_r_sqrt_d0", "sort_see_d3")] + [
    (f"{arm}_{name}", arm) for arm in ("sort_r_sqrt_d0", "r_sqrt_d0_decay") for name in ("ss", "ss_late", "ss_ramp")]


def mcnemar(a, b):
    """(pairs only a gets right, pairs only b gets right, two-sided exact p) for 0/1 lists a, b."""
    from math import comb
    only_a = sum(x > y for x, y in zip(a, b))
    only_b = sum(y > x for x, y in zip(a, b))
    n, k = only_a + only_b, min(only_a, only_b)
    p = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    return only_a, only_b, p


def paired_lines(rows):
    lines = ["", "| arm | control | seeds | test pairs only the arm gets right | only the control | "
             "p (exact McNemar) |", "| --- | --- | --- | --- | --- | --- |"]
    for arm, control in PAIRED:
        got = {r["seed"]: r for r in rows.get(arm, []) if "correct" in r}
        ctl = {r["seed"]: r for r in rows.get(control, []) if "correct" in r}
        seeds = sorted(set(got) & set(ctl))
        if not seeds:
            continue
        a = [x for s in seeds for x in got[s]["correct"]]
        b = [x for s in seeds for x in ctl[s]["correct"]]
        only_a, only_b, p = mcnemar(a, b)
        lines.append(f"| {arm} | {control} | {', '.join(map(str, seeds))} | {only_a} | {only_b} | {p:.2g} |")
    return lines


def write_table(a, arms):
    """table.md (one row per arm of `arms`, in its order, and the paired tests) and curves.png from the
    JSONs of -results."""
    rows = {}
    for name in sorted(os.listdir(a.results)):
        if name.endswith(".json"):
            r = json.load(open(os.path.join(a.results, name)))
            rows.setdefault(r["arm"], []).append(r)
    lines = ["| arm | task | options | exact match % (seeds 1 / 2 / 3) | mean | final valid acc % | "
             "collapsed reports (after step 1,000) | grad norm p99 / max | failures: ends early / skips; "
             "first wrong word (median) | ‖s W^e‖ | max Δ log p; Δ grad (relative) vs reference |", "|" + " --- |" * 11]
    for arm in [x for x in arms if x in rows]:
        rs = sorted(rows[arm], key=lambda r: r["seed"])
        ems = [100 * r["exact_match"] for r in rs]
        accs = [r["valid_accuracy"][-1] for r in rs]
        falls = [f"{collapses(r['curve'])} ({collapses(r['curve'], 1000)})" for r in rs]
        failed = [f for r in rs for f in r["failures"]]
        kinds = [f[3] for f in failed]
        where = f"{statistics.median(f[0] for f in failed):.0f}" if failed else "-"
        lines.append(f"| {arm} | {rs[0]['task']} | `{' '.join(rs[0]['options'])}` | "
                     f"{' / '.join(f'{e:.1f}' for e in ems)} | {statistics.mean(ems):.1f} | "
                     f"{' / '.join(f'{x:.1f}' for x in accs)} | "
                     f"{' / '.join(falls)} | "
                     f"{statistics.mean(_p99(r['grad_norms']) for r in rs):.1f} / "
                     f"{max(r['norm_max'] for r in rs):.0f} | "
                     f"{kinds.count('ends early')} / {kinds.count('skips/repeats')}; {where} | "
                     f"{_refs(rs, 'enc_attn_norm', '.1f')} | {_refs(rs, 'max_logp_difference', '.1e')}; "
                     f"{_refs(rs, 'max_grad_relative_difference', '.1e')} |")
    lines += paired_lines(rows)
    table = os.path.join(a.results, "table.md")
    with open(table + f".{os.getpid()}", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(table + f".{os.getpid()}", table)
    plot(a, rows, arms)


def plot(a, rows, arms):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    arms = [x for x in arms if x in rows and arms[x][0] == "copy_oov"]
    if not arms:
        return
    fig, axes = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    for i, arm in enumerate(arms):
        r = min(rows[arm], key=lambda r: r["seed"])
        steps, _, xent, pc = zip(*r["curve"])
        axes[0].plot(steps, xent, label=arm, color=f"C{i}", lw=0.8)
        axes[1].plot(range(1, len(r["grad_norms"]) + 1), r["grad_norms"], color=f"C{i}", lw=0.5)
        if any(v is not None for v in pc):
            axes[2].plot(steps, [v or 0 for v in pc], color=f"C{i}", lw=0.8)
    axes[0].set_ylabel("training xent (10 steps)")
    axes[0].set_yscale("log")
    axes[1].set_ylabel("gradient norm before clipping")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("p(copy)")
    axes[2].set_xlabel("step (seed 1)")
    axes[0].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(a.results, "curves.png"), dpi=80)
