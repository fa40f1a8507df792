"""Speed of the built-in ROUGE scorer against rouge-score, and its agreement with ROUGE-1.5.5.

    OMP_NUM_THREADS=1 .venv/bin/python bench/rouge_bench.py                 # speed
    OMP_NUM_THREADS=1 .venv/bin/python bench/rouge_bench.py -agreement      # + the table vs -official

Speed: the CNN/DM test shape, 4,490 examples: the shared CNN/DM validation references (cycled to
-n examples) against their lead-3 (tools/lead_baseline.py -sentences 3), ROUGE-1, -2, -L and -Lsum
with stemming, scored from the text lines by onmt.evaluation.score (a fresh scorer each round, so
its stem cache starts empty) and by rouge_scorer.RougeScorer(use_stemmer=True) (sentences on their
own lines for rougeLsum). Prints each one's best time over -rounds (the two take turns), the ratio,
the machine's load, and both scorers' F1 (rouge-score's differ from ROUGE-1.5.5's: its tokenizer and
stemmer are not ROUGE-1.5.5's). Needs `pip install rouge-score` (./run.sh setup installs it).

Agreement: built-in vs ROUGE-1.5.5 (perl) F1 and recall of every metric on the whole CNN/DM
validation set (lead-3) and the Gigaword validation set (first 8 words); a few minutes.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

from onmt.evaluation import METRICS, score, summarize
from onmt.evaluation.text import split_sentences

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")


def read(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _lead_tool():
    """tools/lead_baseline.py as a module (tools/ is not a package)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "lead_baseline.py")
    spec = importlib.util.spec_from_file_location("lead_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lead3(lines):
    tool = _lead_tool()
    return [tool.baseline(line, sentences=3) for line in lines]


def cnndm(n=None):
    src = read(os.path.join(SHARED, "cnndm", "valid.src.txt.gz"))
    ref = read(os.path.join(SHARED, "cnndm", "valid.tgt.txt.gz"))
    preds = lead3(src)
    if n:
        preds, ref = [preds[i % len(preds)] for i in range(n)], [ref[i % len(ref)] for i in range(n)]
    return preds, ref


def gigaword():
    src = read(os.path.join(SHARED, "gigaword", "valid.src.txt"))
    tool = _lead_tool()
    return [tool.baseline(s, words=8) for s in src], read(os.path.join(SHARED, "gigaword", "valid.tgt.txt"))


def rouge_score_run(preds, refs):
    from rouge_score import rouge_scorer
    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    out = np.zeros((len(preds), 4))
    for i, (p, r) in enumerate(zip(preds, refs)):
        s = sc.score("\n".join(split_sentences(r)), "\n".join(split_sentences(p)))
        out[i] = [s[m].fmeasure for m in METRICS]
    return out


def speed(args):
    try:
        import rouge_score  # noqa: F401
    except ImportError:
        sys.exit("rouge_bench.py: needs rouge-score: pip install rouge-score (./run.sh setup installs it)")
    preds, refs = cnndm(args.n)
    fns = {"built-in": lambda: score(preds, refs), "rouge-score": lambda: rouge_score_run(preds, refs)}
    best, results = {k: float("inf") for k in fns}, {}
    for r in range(args.rounds):
        for name, fn in fns.items():
            if name == "rouge-score" and r >= args.reference_rounds:
                continue
            t = time.perf_counter()
            results[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t)
            print(f"round {r + 1}: {name} {time.perf_counter() - t:.2f} s", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {len(preds)} examples (CNN/DM lead-3)")
    print(f"built-in scorer  {best['built-in']:.2f} s   ({len(preds) / best['built-in']:.0f} examples/s)")
    print(f"rouge-score      {best['rouge-score']:.2f} s   ({len(preds) / best['rouge-score']:.0f} examples/s)")
    print(f"speed-up         {best['rouge-score'] / best['built-in']:.1f}x")
    ours = summarize(results["built-in"])
    theirs = results["rouge-score"].mean(0) * 100
    print("F1            " + "".join(f"{m:>11}" for m in METRICS))
    print("built-in      " + "".join(f"{ours[m]['f']:11.2f}" for m in METRICS))
    print("rouge-score   " + "".join(f"{x:11.2f}" for x in theirs))


def agreement(args):
    from onmt.evaluation import official
    official.check()
    for name, (preds, refs) in (("CNN/DM valid, lead-3", cnndm()), ("Gigaword valid, first 8 words", gigaword())):
        t = time.perf_counter()
        ours = score(preds, refs)
        t_ours = time.perf_counter() - t
        t = time.perf_counter()
        perl = score(preds, refs, official=True)
        t_perl = time.perf_counter() - t
        a, b = summarize(ours), summarize(perl)
        print(f"\n{name}: {len(preds)} examples (built-in {t_ours:.1f} s, ROUGE-1.5.5 {t_perl:.1f} s)")
        print(f"{'metric':<11}{'F1 built-in':>12}{'F1 1.5.5':>10}{'R built-in':>12}{'R 1.5.5':>10}{'max |diff|':>12}")
        for m in METRICS:
            d = max(abs(a[m][k] - b[m][k]) for k in "prf")
            print(f"{m:<11}{a[m]['f']:12.4f}{b[m]['f']:10.4f}{a[m]['r']:12.4f}{b[m]['r']:10.4f}{d:12.4f}")
        print(f"largest per-example difference: {np.abs(ours - perl).max() * 100:.4f} points")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=4490, help="examples (the CNN/DM test set has 11,490; 4,490 as asked)")
    p.add_argument("-rounds", type=int, default=3, help="rounds of the built-in scorer")
    p.add_argument("-reference_rounds", type=int, default=1, help="rounds of rouge-score (about 35 s each)")
    p.add_argument("-agreement", action="store_true", help="also the table against ROUGE-1.5.5 (needs perl)")
    args = p.parse_args()
    if not os.path.exists(os.path.join(SHARED, "cnndm", "valid.src.txt.gz")):
        sys.exit(f"rouge_bench.py: needs the shared CNN/DM data in {SHARED}")
    speed(args)
    if args.agreement:
        agreement(args)


if __name__ == "__main__":
    main()
