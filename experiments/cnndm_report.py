"""The report of experiments/cnndm.py, from its JSONs, in the layout of Paulus et al.'s Table 1.

    python experiments/cnndm_report.py [RESULTS_DIR]       # default experiments/results/cnndm

Writes table.md: the test table beside the paper's numbers (ROUGE-1.5.5 itself), the development table
(built-in scorer, the same numbers to 4 decimals), each part of the model against the system without it,
the tuning's choices, and three detokenized summaries per system on the same test articles.

Which ROUGE-L the papers report: See et al. and Paulus et al. ran ROUGE-1.5.5 (pyrouge) on files of one
sentence per line, i.e. the summary-level LCS, our R-Lsum (onmt/evaluation splits a summary at ` . `
tokens, official.py writes the same sentences for the Perl script); R-L is the LCS of the whole summary
as one sequence, lower on multi-sentence summaries. Paired tests: paired bootstrap (1,000 samples,
onmt/evaluation/bootstrap.py) of per-example R-Lsum F1, one-sided (the system above its baseline).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from experiments.cnndm_arms import ARMS, CONTROLS, LEAD3_PAPER, METRIC, PARTS, baseline, views  # noqa: E402
from experiments.rl_vs_ml_report import load  # noqa: E402
from experiments.rl_vs_ml_tuned_report import strongest_control, tuning_score  # noqa: E402
from onmt.evaluation.bootstrap import paired_test  # noqa: E402
from onmt.translate.length_grid import FLAGGED, axis_status  # noqa: E402

ORDER = views(("1", "2", "3"))
NAMES = {"lead3": "lead-3 (first three sentences)", **{v: arm.description for v, arm in ARMS.items()}}


def control_of(results):
    """seed -> the ML control of equal compute with the highest tuning ROUGE-Lsum (None until scored)."""
    return lambda s: strongest_control(results, s, CONTROLS, METRIC)


def paired(r, c, split, metric=METRIC):
    """(delta F1 in points, one-sided p of r > c) on `split`, per-example built-in scores."""
    a, b = np.array(r[split]["per_example"][metric]), np.array(c[split]["per_example"][metric])
    return 100 * float((a - b).mean()), float(paired_test(a, b, 1000, 1))


def setting(r):
    if "tuning" not in r:
        return ""
    chosen = r["tuning"]["chosen"]
    rule = f"wu {chosen['alpha']:g}" if chosen.get("length_penalty") == "wu" else chosen.get("length_penalty", "")
    return f"step {r['step']} / {rule} / min {chosen.get('min_length', 0)}"


def rouge_of(fig, official):
    if official and isinstance(fig.get("rouge_official"), dict):
        return fig["rouge_official"]
    return fig["rouge"]


def paper_of(view):
    if view == "lead3":
        return LEAD3_PAPER
    return ARMS[view].paper


def table(results, split):
    official = split == "test"
    control = control_of(results)
    heads = ["system", "paper R-1 / R-2 / R-L", "R-1", "R-2", "R-L", "R-Lsum", "length (ref)", "sentences (ref)",
             "repeated trigrams % (blocking off)", "novel 1/2/3/4-grams %", "copy %", "ΔR-Lsum vs baseline",
             "p", "baseline", "checkpoint / length rule", "CPU-min (phase / total)"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for v in sorted(results, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        r = results[v]
        fig = r[split]
        rouge = rouge_of(fig, official)
        base = baseline(v, control)
        delta = paired(r, results[base], split) if base in results and base != v else None
        paper = paper_of(v)
        rep = f"{fig['repeated_trigrams']:.1f}"
        if official and "noblock" in r:
            rep = f"{r['noblock']['repeated_trigrams']:.1f} (on: {r['noblock']['repeated_trigrams_blocked']:.1f})"
        cpu = f"{r.get('phase_seconds', 0) / 60:.1f} / {r.get('train_seconds', 0) / 60:.1f}" if "step" in r else "0"
        cells = [f"{v}: {NAMES.get(v, v)}", " / ".join(f"{x:.2f}" for x in paper) if paper else "",
                 *(f"{rouge[m]:.2f}" for m in ("rouge1", "rouge2", "rougeL", "rougeLsum")),
                 f"{fig['length']:.1f} ({fig['ref_length']:.1f})",
                 f"{fig['sentences']:.2f} ({fig['ref_sentences']:.2f})",
                 rep, " / ".join(f"{fig['novel_ngrams'][k]:.1f}" for k in ("1", "2", "3", "4")),
                 f"{fig.get('copy_share', float('nan')):.1f}", f"{delta[0]:+.2f}" if delta else "",
                 f"{delta[1]:.3f}" if delta else "", base if delta else "", setting(r), cpu]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parts(results):
    """Each part of the model against the system without it, test and development."""
    control = control_of(results)
    rows = list(PARTS) + [(f"mixed objective, seed {v[1:]}", v, control(v[1:])) for v in results if v[0] == "a"]
    rows += [("RL alone", "c1", control("1"))] if "c1" in results else []
    lines = ["| part | with | without | test ΔR-1 | test ΔR-2 | test ΔR-Lsum | p | dev ΔR-Lsum | p |",
             "|---|---|---|---|---|---|---|---|---|"]
    for what, on, off in rows:
        if on not in results or off not in results:
            continue
        test = [paired(results[on], results[off], "test", m) for m in ("rouge1", "rouge2", METRIC)]
        dev = paired(results[on], results[off], "dev")
        lines.append(f"| {what} | {on} | {off} | {test[0][0]:+.2f} | {test[1][0]:+.2f} | {test[2][0]:+.2f} | "
                     f"{test[2][1]:.3f} | {dev[0]:+.2f} | {dev[1]:.3f} |")
    return "\n".join(lines) + "\n"


def edges(t):
    """Where the chosen alpha and minimum length sit among the values the tuning rows tried (the report
    of a grid tuned before -widen has no "edges": computed here from its rows)."""
    if "edges" in t:
        return t["edges"]
    chosen = t["chosen"]
    return {axis: axis_status([row["setting"][axis] for row in t["rows"]], chosen[axis], 0, float("inf"))
            for axis in ("alpha", "min_length") if axis in chosen}


def edge_text(t):
    flagged = [f"{axis} {t['chosen'][axis]}: {where}" for axis, where in edges(t).items() if where in FLAGGED]
    return "**" + "; ".join(flagged) + "**" if flagged else "interior"


def tuning(results):
    lines = ["| view | candidates | settings | chosen | tuning R-Lsum | strongest control of its seed | edges |",
             "|---|---|---|---|---|---|---|"]
    control = control_of(results)
    for v in sorted(results, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        r = results[v]
        if "tuning" not in r:
            continue
        t = r["tuning"]
        n_models = len({row["model"] for row in t["rows"]})
        strongest = control(v[1:]) if v[0] in "abmc" and v in ARMS and ARMS[v].start == "r_ml" else ""
        lines.append(f"| {v} | {n_models} | {len(t['rows']) // max(n_models, 1)} | {setting(r)} | "
                     f"{tuning_score(r, METRIC):.2f} | {strongest or ''} | {edge_text(t)} |")
    return "\n".join(lines) + "\n"


def sample_text(results):
    any_result = next(iter(results.values()))
    out = []
    for line, ref in any_result.get("sample_refs", {}).items():
        out.append(f"### Test article {int(line) + 1}\n\n- **reference**: {ref}")
        for v in sorted(results, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
            out.append(f"- **{v}**: {results[v].get('samples', {}).get(line, '')}")
        out.append("")
    return "\n".join(out) + "\n"


def report(results):
    pairs = {split: len(next(iter(results.values()))[split]["per_example"][METRIC]) for split in ("dev", "test")}
    return ("# CNN/DailyMail at CPU scale (experiments/cnndm.py)\n\n"
            f"## Test ({pairs['test']:,} pairs; ROUGE-1.5.5 F1, scored once with what tuning chose)\n\n"
            "The paper's R-L is ROUGE-1.5.5 on sentence-split summaries: compare it with R-Lsum. Paper rows: "
            "Paulus et al. 2017 Table 1 (See et al. 2017 for pg_ml and lead-3). Repeated trigrams with blocking "
            "off: the reinforced views' test head decoded again with -block_ngram_repeat 0 (in brackets: the "
            "same pairs with blocking on).\n\n" + table(results, "test")
            + f"\n## Development ({pairs['dev']:,} validation pairs after the tuning ones; built-in scorer)\n\n"
            + table(results, "dev")
            + "\n## Each part against the system without it\n\n" + parts(results)
            + "\n## What tuning chose (validation's first pairs)\n\n" + tuning(results)
            + "\n## Samples (detokenized)\n\n" + sample_text(results))


def write_report(results):
    found = load(results)
    if not found:
        print(f"no results in {results}")
        return
    text = report(found)
    with open(os.path.join(results, "table.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    write_report(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "cnndm"))
