"""The tables, the breakdown and the figure of experiments/rl_vs_ml_tuned.py, from its JSONs.

    python experiments/rl_vs_ml_tuned_report.py [RESULTS_DIR] [-data ../shared/data/gigaword]

Writes table.md (test first, then development; each view against the strongest ML control of its seed),
breakdown.md (the gain of a<s> over that control by source-reference overlap, reference length, the
reference's novel bigrams and the mixed model's copy share, on development and test; the test gain that
development's buckets predict when weighted by the test set's overlap) and gain_by_overlap.png.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from onmt.evaluation.bootstrap import paired_test, pooled_difference  # noqa: E402
from onmt.evaluation.breakdown import OVERLAP_EDGES, gain_by_bucket, reference_overlap  # noqa: E402
from onmt.translate.length_grid import FLAGGED, axis_status  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "gigaword")
CONTROLS = ("b{s}", "b{s}_steps", "m{s}", "p{s}", "v{s}")
from experiments.rl_vs_ml_report import load  # noqa: E402  (one JSON per scored view, ml_phase left out)
from experiments.rl_vs_ml_tuned_kinds import KINDS  # noqa: E402

KIND = {"ml_best": "ML start (best validation perplexity)", "b_steps": "(b) ML continued at 1e-4, equal steps",
        **{k: f"({k}) {v[4]}" for k, v in KINDS.items()}}
LENGTH_EDGES = (0, 7, 10, 100)
COPY_EDGES = (0.0, 0.5, 0.9, 1.0)


def kind(view):
    return "ml_best" if view == "ml_best" else ("b_steps" if view.endswith("_steps") else view[0])


def seed(view):
    return None if view == "ml_best" else view.split("_")[0][1:]


def tuning_score(r, metric="rougeL"):
    return r["tuning"]["rows"][r["tuning"]["best"]]["rouge"][metric]


def strongest_control(results, s, controls=CONTROLS, metric="rougeL"):
    """The ML view of seed `s` (`controls`, formats of a seed) with the highest tuning ROUGE F1 `metric`
    (None until one is scored)."""
    names = [c.format(s=s) for c in controls if c.format(s=s) in results]
    return max(names, key=lambda n: tuning_score(results[n], metric)) if names else None


def paired(r, c, split):
    """(delta R-L F1 in points, one-sided p of r > c) on `split`, per-example built-in scores."""
    a, b = np.array(r[split]["rougeL_f_per_example"]), np.array(c[split]["rougeL_f_per_example"])
    return 100 * float((a - b).mean()), float(paired_test(a, b, 1000, 1))


def setting(r):
    chosen = r["tuning"]["chosen"]
    rule = f"wu {chosen['alpha']:g}" if chosen.get("length_penalty") == "wu" else chosen.get("length_penalty", "")
    return f"{r['step']} / {rule}"


# the mixed objective against ML trained on the same resampled pairs (equal data and compute)
SAME_DATA = (("o", "p"), ("q", "v"))


def same_data(results):
    """A markdown table of each o<s> / q<s> against p<s> / v<s> (its ML arm on the same pairs), test
    and development; "" until a pair is scored."""
    lines = ["| mixed | ML on the same pairs | test ΔR-L (p, one-sided) | development ΔR-L (p) |",
             "|---|---|---|---|"]
    for mixed, ml in SAME_DATA:
        for name in sorted(n for n in results if kind(n) == mixed):
            other = ml + name[1:]
            if other in results:
                t, d = paired(results[name], results[other], "test"), paired(results[name], results[other], "dev")
                lines.append(f"| {name} | {other} | {t[0]:+.2f} ({t[1]:.3f}) | {d[0]:+.2f} ({d[1]:.3f}) |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def table(results, split):
    rouge_key = "rouge_official" if split == "test" else "rouge"
    heads = ["view", "step / length rule", "tuning R-L", "R-1", "R-2", "R-L", "ΔR-L vs control", "p (one-sided)",
             "control", "length / ref", "copy share %", "novel bigrams %"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    order = {k: i for i, k in enumerate(dict.fromkeys(["ml_best", "a", "b", "b_steps", "m", *KINDS]))}
    for name in sorted(results, key=lambda n: (order[kind(n)], n)):
        r = results[name]
        fig = r[split]
        rouge = fig[rouge_key] if isinstance(fig.get(rouge_key), dict) else fig["rouge"]
        control = strongest_control(results, seed(name)) if seed(name) else None
        delta = paired(r, results[control], split) if control and control != name else None
        cells = [name, setting(r), f"{tuning_score(r):.2f}", f"{rouge['rouge1']:.2f}", f"{rouge['rouge2']:.2f}",
                 f"{rouge['rougeL']:.2f}", f"{delta[0]:+.2f}" if delta else "", f"{delta[1]:.3f}" if delta else "",
                 control if delta else ("(strongest)" if control == name else ""),
                 f"{fig['length']:.2f} / {fig['ref_length']:.2f}", f"{fig.get('copy_share', float('nan')):.1f}",
                 f"{fig['novel_bigrams']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    legend = [f"- {KIND[k]}: {', '.join(sorted(n for n in results if kind(n) == k)) or '(not yet run)'}" for k in KIND]
    return "\n".join(lines) + "\n\n" + "\n".join(legend) + "\n"


def novel_share(source, reference):
    """The share of the reference's bigrams absent from the source (0 for a reference under two words)."""
    from onmt.evaluation.diagnostics import novel_ngrams
    novel, total = novel_ngrams(reference.split(), source.split(), 2)
    return novel / total if total else 0.0


def split_texts(data, split, tune_pairs=1000):
    read = lambda p: open(p, encoding="utf-8").read().splitlines()  # noqa: E731
    if split == "dev":
        return read(f"{data}/valid.src.txt")[tune_pairs:], read(f"{data}/valid.tgt.txt")[tune_pairs:]
    return read(f"{data}/test.src.txt"), read(f"{data}/test.tgt.txt")


def breakdown(results, data):
    """(markdown, {split: {seed: rows by overlap}}) of each a<s> against its seed's strongest control."""
    lines, by_overlap = [], {}
    tune_pairs = next(iter(results.values())).get("tune_pairs", 1000)
    for split in ("dev", "test"):
        srcs, refs = split_texts(data, split, tune_pairs)
        overlap = [reference_overlap(s, r) for s, r in zip(srcs, refs)]
        ref_len = [len(r.split()) for r in refs]
        novel = [novel_share(s, r) for s, r in zip(srcs, refs)]
        share = np.histogram(overlap, bins=OVERLAP_EDGES)[0] / len(overlap)
        lines.append(f"\n### {split}: {len(refs)} pairs, mean overlap {100 * np.mean(overlap):.1f} %, "
                     f"pairs per overlap bucket {', '.join(f'{100 * x:.0f} %' for x in share)}\n")
        for s in sorted({seed(n) for n in results if kind(n) == "a"}):
            a, c = f"a{s}", strongest_control(results, s)
            if c is None:
                continue
            ra, rc = (np.array(results[n][split]["rougeL_f_per_example"]) * 100 for n in (a, c))
            rows = gain_by_bucket(ra, rc, overlap, OVERLAP_EDGES)
            by_overlap.setdefault(split, {})[s] = rows
            lines.append(f"{a} against {c}, ROUGE-L F1 by what the reader is split by:\n")
            lines.append("| split by | bucket | pairs | a | control | Δ | p (a > control) |\n"
                         "|---|---|---|---|---|---|---|")
            splits_by = [("overlap", overlap, OVERLAP_EDGES), ("reference length", ref_len, LENGTH_EDGES),
                         ("reference bigrams not in the source", novel, OVERLAP_EDGES)]
            if "copy_share_per_example" in results[a][split]:
                splits_by.append((f"{a}'s copy share", results[a][split]["copy_share_per_example"], COPY_EDGES))
            for what, values, edges in splits_by:
                for row in gain_by_bucket(ra, rc, values, edges):
                    lines.append(f"| {what} | {row['bucket']} | {row['n']} | {row['a']:.2f} | {row['b']:.2f} | "
                                 f"{row['delta']:+.2f} | {row['p']:.3f} |")
            lines.append("")
    if "dev" in by_overlap and "test" in by_overlap:
        srcs, refs = split_texts(data, "test")
        share = np.histogram([reference_overlap(s, r) for s, r in zip(srcs, refs)], bins=OVERLAP_EDGES)[0]
        share = share / share.sum()
        lines.append("### Does overlap explain the test set? Development's gain per bucket, weighted by the test "
                     "set's share of pairs per bucket, against the gain measured on test\n")
        lines.append("| seed | dev gain | dev gain reweighted to test's overlap | test gain |\n|---|---|---|---|")
        for s in sorted(set(by_overlap["dev"]) & set(by_overlap["test"])):
            dev, test = by_overlap["dev"][s], by_overlap["test"][s]
            dev_all = sum(r["delta"] * r["n"] for r in dev) / sum(r["n"] for r in dev)
            test_all = sum(r["delta"] * r["n"] for r in test) / sum(r["n"] for r in test)
            lines.append(f"| {s} | {dev_all:+.2f} | {sum(w * r['delta'] for w, r in zip(share, dev)):+.2f} | "
                         f"{test_all:+.2f} |")
    return "\n".join(lines) + "\n", by_overlap


def plot(by_overlap, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for split, marker, color in (("dev", "o", "tab:blue"), ("test", "s", "tab:red")):
        for i, (s, rows) in enumerate(sorted(by_overlap.get(split, {}).items())):
            xs = np.arange(len(rows)) + (0.1 if split == "test" else -0.1)
            ax.plot(xs, [r["delta"] for r in rows], marker=marker, color=color, alpha=0.8, linestyle="-",
                    label=f"{split}" if i == 0 else None)
        labels = [r["bucket"] for r in next(iter(by_overlap.get(split, {}).values()), [])]
        if labels:
            ax.set_xticks(range(len(labels)), labels)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("share of reference words found in the source")
    ax.set_ylabel("ROUGE-L F1 gain of (a) over the strongest ML control")
    ax.set_title("(a) over the strongest ML control, each tuned on validation 1-1,000; a line per seed", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def edge(r):
    """Where the chosen alpha sits among the alphas the view's tuning tried ("top edge" flagged)."""
    t = r["tuning"]
    chosen = t["chosen"].get("alpha")
    if chosen is None:
        return ""
    where = axis_status([row["setting"]["alpha"] for row in t["rows"]], chosen, 0.0, float("inf"))
    return f"**alpha {chosen:g}: {where}**" if where in FLAGGED else ""


def pooled(results):
    """The mixed objective (a<s>) against each seed's strongest ML control, pooled over the seeds with a
    two-level bootstrap 95 % interval (onmt/evaluation/bootstrap.py pooled_difference), test and development;
    views chosen at a grid's edge named."""
    seeds = sorted(v[1:] for v in results if v[0] == "a" and v[1:].isdigit())
    pairs = [(f"a{s}", strongest_control(results, s)) for s in seeds]
    pairs = [(x, c) for x, c in pairs if c]
    if not pairs:
        return ""
    lines = ["| split | seeds (a − strongest control) | pooled ΔR-L (95 % CI) | p (one-sided) | per seed |",
             "|---|---|---|---|---|"]
    for split in ("test", "dev"):
        d = pooled_difference([100 * (np.array(results[x][split]["rougeL_f_per_example"])
                                      - np.array(results[c][split]["rougeL_f_per_example"])) for x, c in pairs])
        lines.append(f"| {split} | {', '.join(f'{x} − {c}' for x, c in pairs)} | {d['mean']:+.2f} "
                     f"({d['low']:+.2f} … {d['high']:+.2f}) | {d['p']:.3f} | "
                     f"{', '.join(f'{v:+.2f}' for v in d['per_seed'])} |")
    edges = [f"{v} ({edge(results[v])})" for x_c in pairs for v in x_c if edge(results[v])]
    note = ("\nChosen at the alpha grid's top edge (0 ... 2; tuned before -widen): " + ", ".join(edges) + ".\n"
            if edges else "")
    return "\n".join(lines) + "\n" + note


def write_report(results, data=SHARED):
    found = load(results)
    if not found:
        print(f"no results in {results}")
        return
    tables = ("## Test (Rush et al.'s 1,951 pairs; ROUGE-1.5.5 F1, scored once with what tuning chose)\n\n"
              + table(found, "test")
              + "\n## Development (validation pairs 1,001-4,000; built-in scorer)\n\n" + table(found, "dev"))
    if same_data(found):
        tables += "\n## The mixed objective against ML on the same resampled pairs\n\n" + same_data(found)
    if pooled(found):
        tables += ("\n## The mixed objective pooled over seeds (each seed against its strongest ML control)\n\n"
                   + pooled(found))
    with open(os.path.join(results, "table.md"), "w", encoding="utf-8") as f:
        f.write(tables)
    if os.path.exists(os.path.join(data, "test.src.txt")):
        text, by_overlap = breakdown(found, data)
        with open(os.path.join(results, "breakdown.md"), "w", encoding="utf-8") as f:
            f.write("# The gain of the mixed objective by example\n" + text)
        if by_overlap:
            plot(by_overlap, os.path.join(results, "gain_by_overlap.png"))
    print(tables)


if __name__ == "__main__":
    args = [x for x in sys.argv[1:]]
    data = args[args.index("-data") + 1] if "-data" in args else SHARED
    rest = [x for i, x in enumerate(args) if x != "-data" and (i == 0 or args[i - 1] != "-data")]
    write_report(rest[0] if rest else os.path.join(HERE, "results", "rl_vs_ml_tuned"), data)
