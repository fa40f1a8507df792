"""Hand-built inputs of the summary explorer: a source and reference file, a dump of system A (attention,
intra-decoder attention, p(copy), copy marks) and a prediction file of system B. Article 0's source holds
markup that must be shown, never run."""
import os

import numpy as np

from onmt.translate.records import write_dump

SOURCES = [
    "the cat <script>window.__xss=1</script> sat on the mat </script><img src=x onerror=window.__xss=2>",
    "police arrested ten protesters in paris on monday",
    "stocks fell sharply in tokyo as the yen rose",
    "the president visited the flooded region on sunday",
]
REFERENCES = ["cat sits on mat", "paris police arrest protesters", "tokyo stocks fall", "president tours flood zone"]
PRED_A = [["cat", "<script>window.__xss=1</script>", "sat", "sat", "on", "mat"],
          ["police", "arrest", "protesters", "in", "paris"],
          ["stocks", "fall", "in", "tokyo"],
          ["president", "visits", "flooded", "region"]]
PRED_B = ["the cat", "ten protesters arrested", "tokyo stocks fall as yen rises", "the president visits"]


def attention(line, n, s):
    """(n, s) encoder attention whose argmax for step t is source position (3 * t + line) % s."""
    rng = np.random.default_rng(line)
    a = rng.random((n, s)).astype(np.float32) * 0.1
    a[np.arange(n), (3 * np.arange(n) + line) % s] = 1.0
    return a / a.sum(1, keepdims=True)


def intra(n):
    """(n, n) intra-decoder attention, row t over steps < t, strongest on step t - 1."""
    m = np.zeros((n, n), dtype=np.float32)
    for t in range(1, n):
        m[t, :t] = 0.2 / t
        m[t, t - 1] += 0.8
    return m


def records():
    out = []
    for line, (src, pred) in enumerate(zip(SOURCES, PRED_A)):
        s, n = len(src.split()), len(pred)
        p_copy = np.linspace(0.9, 0.1, n).astype(np.float32)
        out.append({"line": line, "src": src.split(), "pred": pred, "ids": np.arange(n), "score": -1.0,
                    "attn": attention(line, n, s), "intra": intra(n), "p_copy": p_copy,
                    "copied": (p_copy >= 0.5) & np.isin(pred, src.split())})
    return out


def write_inputs(folder):
    """Write the inputs into `folder`: {"src", "ref", "a" (dump), "b" (predictions)} paths."""
    paths = {k: os.path.join(folder, name) for k, name in
             (("src", "src.txt"), ("ref", "ref.txt"), ("a", "a.npz"), ("b", "b.txt"))}
    for key, lines in (("src", SOURCES), ("ref", REFERENCES), ("b", PRED_B)):
        with open(paths[key], "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    write_dump(paths["a"], records())
    return paths
