"""The report of experiments/cnndm_conv.py: R/table.md from the JSONs of R (nothing decoded here).

Every comparison is a difference of per-example ROUGE-Lsum F1 on the same articles: per seed, and pooled
over seeds with its 95 % interval (a two-level bootstrap: seeds, then examples; onmt/evaluation/
bootstrap.py pooled_difference), at each system's tuned rule and at the length-matched rule (every system
decoded to the tuning references' mean length), per reference-overlap bucket and per reference-length
third. A chosen rule at its grid's edge is flagged. The test part is the first 3,000 articles of See et
al.'s test set (36 % CNN, the full set 9.5 %): the paper's numbers, which are the full test set's, are
shown beside ours only as a label, never compared.
"""
import glob
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from experiments import cnndm_conv_arms as P  # noqa: E402
from experiments.rl_vs_ml import read_json  # noqa: E402
from onmt.evaluation.bootstrap import pooled_difference  # noqa: E402
from onmt.translate.length_grid import FLAGGED  # noqa: E402

MEASURES = (("rouge1", "R-1"), ("rouge2", "R-2"), ("rougeLsum", "R-Lsum"))


def load(results):
    return {os.path.basename(p)[:-5]: read_json(p) for p in sorted(glob.glob(os.path.join(results, "*.json")))}


def per_example(view, split, metric=P.METRIC):
    """(n,) per-example F1 in points."""
    return 100.0 * np.asarray(view[split]["per_example"][metric])


def strongest_control(r, seed):
    """The ML control of `seed` of higher tuned tuning R-Lsum (None until both are scored)."""
    names = [c.format(s=seed) for c in P.CONTROLS]
    if any(n not in r for n in names):
        return None
    return max(names, key=lambda n: (r[n]["tuning"]["rouge"][P.METRIC], -names.index(n)))


def pooled(r, pairs, split):
    """pooled_difference of the (system, baseline) `pairs` on `split` ('test', 'dev', 'test_matched'...)."""
    return pooled_difference([per_example(r[x], split) - per_example(r[y], split) for x, y in pairs])


def fmt_diff(d):
    return f"{d['mean']:+.2f} ({d['low']:+.2f} … {d['high']:+.2f}), p {d['p']:.3f}"


def edge_note(view):
    flagged = [f"{k} {view['tuning']['config'].get(k)} {v}" for k, v in view["tuning"]["edges"].items() if v in FLAGGED]
    return "; ".join(flagged) if flagged else "interior"


def views_table(r, split):
    rows = [f"| view | what | {' | '.join(m for _, m in MEASURES)} | length | matched {MEASURES[-1][1]} | "
            "matched length | rule (edges) |", "|---" * 9 + "|"]
    for v in P.VIEWS:
        if v not in r:
            continue
        x = r[v]
        cfg = x["tuning"]["config"]
        rule = f"alpha {cfg.get('alpha')}, min {cfg.get('min_length')}"
        rows.append(f"| {v} | {x['description']} | "
                    + " | ".join(f"{100 * float(np.mean(x[split]['per_example'][k])):.2f}" for k, _ in MEASURES)
                    + f" | {x[split]['length']:.1f} | {x[split + '_matched']['rouge'][P.METRIC]:.2f} | "
                    f"{x[split + '_matched']['length']:.1f} | {rule} ({edge_note(x)}) |")
    return "\n".join(rows)


def comparisons(r):
    """[(what, [(system, baseline)] per seed)] of the comparisons whose views are scored."""
    out = []
    if "ml25" in r and "ml0" in r:
        out.append(("scheduled sampling 0.25 against none (ML to its plateau, one run each)", [("ml25", "ml0")]))
    for kind, what in (("a", "the mixed objective"), ("c", "RL alone")):
        pairs = []
        for s in P.SEEDS:
            c = strongest_control(r, s)
            if f"{kind}{s}" in r and c:
                pairs.append((f"{kind}{s}", c))
        if pairs:
            out.append((f"{what} against the strongest ML control of equal CPU", pairs))
        if "start" in r and any(f"{kind}{s}" in r for s in P.SEEDS):
            out.append((f"{what} against its start", [(f"{kind}{s}", "start") for s in P.SEEDS if f"{kind}{s}" in r]))
    return out


def comparison_rows(r, splits=("dev", "test")):
    rows = ["| comparison | seeds | split | at tuned length: pooled Δ R-Lsum (95 % CI), p | per seed | "
            "at matched length: pooled Δ (95 % CI), p | per seed |", "|---" * 7 + "|"]
    for what, pairs in comparisons(r):
        for split in splits:
            tuned, matched = pooled(r, pairs, split), pooled(r, pairs, split + "_matched")
            seeds = ", ".join(f"{x} − {y}" for x, y in pairs)
            rows.append(f"| {what} | {seeds} | {split} | {fmt_diff(tuned)} | "
                        f"{', '.join(f'{v:+.2f}' for v in tuned['per_seed'])} | {fmt_diff(matched)} | "
                        f"{', '.join(f'{v:+.2f}' for v in matched['per_seed'])} |")
    return "\n".join(rows)


def breakdown_rows(r, split="test"):
    """Each comparison's pooled difference per reference-overlap bucket and per reference-length third."""
    from onmt.evaluation.breakdown import OVERLAP_EDGES, bucket_of, quantile_edges
    rows = ["| comparison | split | bucket | articles | pooled Δ R-Lsum at tuned length (95 % CI) "
            "| at matched length |", "|---|---|---|---|---|---|"]
    for what, pairs in comparisons(r):
        art = r[pairs[0][0]].get(split + "_articles")
        if not art:
            continue
        for name, values, edges in (("overlap", art["overlap"], OVERLAP_EDGES),
                                    ("reference length", art["ref_length"], quantile_edges(art["ref_length"], 3))):
            buckets = bucket_of(values, edges)
            for b in range(len(edges) - 1):
                keep = buckets == b
                if not keep.any():
                    continue
                cells = [pooled_difference([(per_example(r[x], sp) - per_example(r[y], sp))[keep]
                                            for x, y in pairs]) for sp in (split, split + "_matched")]
                rows.append(f"| {what} | {split} | {name} {edges[b]:.2f}–{edges[b + 1]:.2f} | {int(keep.sum())} | "
                            f"{fmt_diff(cells[0])} | {fmt_diff(cells[1])} |")
    return "\n".join(rows) if len(rows) > 2 else ""


def gates(r):
    rows = ["| setting | ML best step | tuned R-Lsum of ML best | gates: end R-Lsum | passed | converged at |",
            "|---|---|---|---|---|---|"]
    for ss in P.SS:
        g = r.get(f"gate_{ss}")
        t = r.get(f"train/ml{ss}") or {}
        if g:
            at = "@".join(map(str, g["checkpoint"]))
            rows.append(f"| scheduled sampling {P.SS[ss]} | {t.get('best_step', '?')} | {g['ml']:.2f} | "
                        f"{', '.join(f'{x:.2f}' for x in g['scores'])} | {g['passed']} | {at} |")
    return "\n".join(rows)


def report(r):
    lines = ["# CNN/DM, the converged regime (experiments/cnndm_conv.py)", "",
             "Pre-registered in experiments/cnndm_conv_arms.py before any arm trained. Per-example ROUGE-Lsum F1 "
             "differences on the same articles; pooled over seeds with a 95 % two-level bootstrap interval; "
             "every rule tuned on the 500 tuning pairs (edges flagged), test decoded once. Test: the first 3,000 "
             "articles of See et al.'s test set (36 % CNN; the full set is 9.5 % CNN), so the paper's figures "
             "(the full set's) are not comparable with these.", ""]
    if any(k.startswith("gate_") for k in r):
        lines += ["## ML to its plateau and the gate", "", gates(r), ""]
    if "start_decision" in r:
        s = r["start_decision"]
        other = max(v for k, v in s["scores"].items() if k != s["ss"])
        lines += [f"The start: scheduled sampling {P.SS[s['ss']]} ({'@'.join(map(str, s['checkpoint']))}), tuning "
                  f"R-Lsum {s['scores'][s['ss']]:.2f} against {other:.2f}.", ""]
    for split in ("dev", "test"):
        if any(v in r for v in P.VIEWS):
            lines += [f"## Views, {split}", "", views_table(r, split), ""]
    if comparisons(r):
        lines += ["## Comparisons", "", comparison_rows(r), ""]
        if breakdown_rows(r):
            lines += ["## Comparisons by article (test)", "", breakdown_rows(r), ""]
    if len(lines) == 7:
        lines += ["Nothing scored yet."]
    return "\n".join(lines) + "\n"


def write_report(results):
    r = load(results)
    r.update({f"train/{k}": v for k, v in load(os.path.join(results, "train")).items()})
    text = report(r)
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "table.md.tmp"), "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(os.path.join(results, "table.md.tmp"), os.path.join(results, "table.md"))
    print(text)
    return text


if __name__ == "__main__":
    write_report(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "cnndm_conv"))
