"""The table and the curves of experiments/rl_vs_ml.py, from its JSON results (one per scored model).

    python experiments/rl_vs_ml_report.py [RESULTS_DIR]   # writes table.md and curves.png there
"""
import glob
import json
import os
import sys

ROWS = [("ml_best", "ML, converged (start of every arm)"),
        ("a", "(a) mixed, gamma 0.9984"), ("b", "(b) ML continued, equal CPU time"),
        ("b_steps", "(b) ML continued, equal steps"), ("c", "(c) RL only, gamma 1"),
        ("d", "(d) mixed, gamma 0.9"), ("e", "(e) mixed, gamma 0.9984, -rl_normalization tokens"),
        ("f", "(f) mixed, gamma 0.99")]
# each mixed arm's ML control (the arm of its seed trained with the ML objective alone)
CONTROL = {"a1": "b1", "a2": "b2", "a3": "b3", "c1": "b1", "d1": "b1", "e1": "b1", "f1": "b1"}


def load(results):
    out = {}
    for path in sorted(glob.glob(os.path.join(results, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name != "ml_phase":
            with open(path, encoding="utf-8") as f:
                out[name] = json.load(f)
    return out


def kind(name):
    if name == "ml_best":
        return "ml_best"
    if "_steps" in name:
        return "b_steps"
    return name[0]


def row(r, control, start_seconds):
    rouge = r["rouge"]
    cells = [r["name"], str(r["step"]), f"{r['train_seconds'] - start_seconds:.0f}",
             f"{rouge['rouge1']:.2f}", f"{rouge['rouge2']:.2f}", f"{rouge['rougeL']:.2f}"]
    paired = r.get("paired")
    if paired and control:
        cells += [f"{paired['rougeL']['delta_f']:+.2f}", f"{paired['rougeL']['p_value_f']:.3f}", control]
    else:
        cells += ["", "", ""]
    eq = r.get("paired_equal_steps")
    cells += [f"{eq['rougeL']['delta_f']:+.2f} (p {eq['rougeL']['p_value_f']:.3f})" if eq else ""]
    cells += [f"{r['length']:.2f} / {r['ref_length']:.2f}", f"{r['repeated_trigrams']:.2f}",
              f"{r['novel_bigrams']:.1f}", f"{r.get('copy_share', float('nan')):.1f}"]
    return "| " + " | ".join(cells) + " |"


def table(results):
    heads = ["model", "step", "CPU s since the ML start", "R-1", "R-2", "R-L", "ΔR-L vs control", "p (one-sided)",
             "control", "ΔR-L vs equal-step control", "length / ref", "rep. trigrams %", "novel bigrams %",
             "copy share %"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    start = results["ml_best"]["train_seconds"] if "ml_best" in results else 0.0
    for k, _ in ROWS:
        for name in sorted(n for n in results if kind(n) == k):
            lines.append(row(results[name], CONTROL.get(name), start))
    legend = [f"- {dict(ROWS)[k]}: rows {', '.join(sorted(n for n in results if kind(n) == k)) or '(not yet run)'}"
              for k, _ in ROWS]
    return "\n".join(lines) + "\n\n" + "\n".join(legend) + "\n"


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    start = _start_point(os.path.dirname(path))   # the converged ML model's own validation, at 0
    if start is not None:
        ax.plot([0], [start], marker="*", markersize=12, color="black", linestyle="none", label="ML start")
    colors = {"a": "tab:red", "b": "tab:blue", "c": "tab:purple", "d": "tab:orange", "e": "tab:green",
              "f": "tab:brown"}
    for name, r in sorted(results.items()):
        curve = [p for p in r.get("curve", []) if "rougeL" in p]
        if not curve:
            continue
        xs, ys = [p["seconds"] / 60 for p in curve], [p["rougeL"] for p in curve]
        if start is not None:
            xs, ys = [0.0] + xs, [start] + ys
        ax.plot(xs, ys, marker=".",
                color=colors.get(name[0], "gray"), label=name, alpha=0.5 + 0.5 * (name[-1] == "1"))
    ax.set_xlabel("training time since the converged ML checkpoint (CPU minutes, one thread)")
    ax.set_ylabel("validation ROUGE-L F1, greedy (first 1,000 valid pairs)")
    ax.set_title("Mixed objective vs ML continued, from a converged ML model (Gigaword)")
    ax.grid(alpha=0.3)
    ax.legend(ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _start_point(results_dir):
    """The greedy validation ROUGE-L of the ML phase's best checkpoint (ml_phase.json), or None."""
    path = os.path.join(results_dir, "ml_phase.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        phase = json.load(f)
    return next((p["rougeL"] for p in phase["curve"] if p["step"] == phase["best_step"] and "rougeL" in p), None)


def write_report(results_dir):
    results = load(results_dir)
    with open(os.path.join(results_dir, "table.md"), "w", encoding="utf-8") as f:
        f.write(table(results))
    plot(results, os.path.join(results_dir, "curves.png"))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    write_report(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results", "rl_vs_ml"))
