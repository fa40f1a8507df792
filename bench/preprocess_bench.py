#!/usr/bin/env python
"""Preprocessing throughput and memory on a synthetic corpus shaped like CNN/DM.

Generates (time not measured) 287,000 * scale pairs of 400 source / 60 target tokens over a Zipfian
vocabulary of ~500k types (half of each target is copied from its source), then runs preprocess.py
as a subprocess, once on the whole corpus and once on its first fifth, and prints source tokens/s,
the peak RSS of the largest process (ru_maxrss of the children) and the peak total RSS of the
process tree (sampled from /proc), and the full / fifth ratio of the peaks.

    .venv/bin/python bench/preprocess_bench.py                 # full size (a few minutes)
    .venv/bin/python bench/preprocess_bench.py -scale 0.1      # quick run
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARGS = ["-dynamic_dict", "-share_vocab", "-src_vocab_size", "150000", "-tgt_vocab_size", "50000",
        "-shard_size", "50000", "-src_seq_length", "1000", "-tgt_seq_length", "1000"]


def word_list(n_types):
    """Made-up words, shorter for frequent ranks (like real text)."""
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    out = []
    for r in range(n_types):
        w = ""
        r += 1
        while r:
            r, m = divmod(r - 1, 26)
            w += letters[m]
        out.append(w)
    return out


def generate(folder, pairs, src_len, tgt_len, n_types, seed, chunk=2000):
    rng = np.random.default_rng(seed)
    words = word_list(n_types)
    cdf = np.cumsum(1.0 / np.arange(1, n_types + 1) ** 1.0)
    cdf /= cdf[-1]
    paths = {}
    for side in ("src", "tgt"):
        paths[side] = os.path.join(folder, f"train.{side}.txt")
    with open(paths["src"], "w") as fs, open(paths["tgt"], "w") as ft:
        for a in range(0, pairs, chunk):
            n = min(chunk, pairs - a)
            src = np.searchsorted(cdf, rng.random((n, src_len)))               # (n, 400)
            tgt = np.searchsorted(cdf, rng.random((n, tgt_len)))               # (n, 60)
            copy = rng.random((n, tgt_len)) < 0.5
            pick = rng.integers(0, src_len, (n, tgt_len))
            tgt = np.where(copy, np.take_along_axis(src, pick, 1), tgt)
            fs.write("\n".join(" ".join([words[i] for i in row]) for row in src.tolist()) + "\n")
            ft.write("\n".join(" ".join([words[i] for i in row]) for row in tgt.tolist()) + "\n")
    return paths


def head(path, out, n):
    with open(path) as f, open(out, "w") as g:
        for i, line in enumerate(f):
            if i >= n:
                break
            g.write(line)


def _tree_rss(pid):
    """Total RSS (bytes) of pid and its descendants, from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
        stack.extend(children.get(p, []))
    return total


def run_preprocess(src, tgt, save, threads):
    """-> (wall s, CPU s of the tree, ru_maxrss of the largest process in bytes, sampled peak tree RSS)."""
    cmd = [sys.executable, os.path.join(ROOT, "preprocess.py"), "-train_src", src, "-train_tgt", tgt,
           "-save_data", save, "-num_threads", str(threads), *ARGS]
    # a fresh intermediate process so that ru_maxrss covers this run only
    wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
               "print(u.ru_utime + u.ru_stime, u.ru_maxrss); sys.exit(r.returncode)")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", wrapper, *cmd], stdout=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    if proc.returncode:
        sys.exit(f"preprocess failed with exit code {proc.returncode}")
    cpu, maxrss = out.split()[-2:]
    return wall, float(cpu), int(maxrss) * 1024, peak[0]


def main():
    p = argparse.ArgumentParser(description="preprocess throughput / memory benchmark")
    p.add_argument("-scale", type=float, default=1.0, help="fraction of the 287,000 pairs")
    p.add_argument("-types", type=int, default=500000, help="Zipfian vocabulary size")
    p.add_argument("-num_threads", type=int, default=2, help="preprocess -num_threads")
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-dir", default=None, help="work folder (default: a temporary one)")
    p.add_argument("-tiny", action="store_true",
                   help="10 pairs of 20 / 5 tokens, 100 types, one run (no fifth): the test suite's smoke run")
    opt = p.parse_args()
    pairs = 10 if opt.tiny else max(10, int(287000 * opt.scale))
    src_len, tgt_len, types = (20, 5, 100) if opt.tiny else (400, 60, opt.types)
    with tempfile.TemporaryDirectory(dir=opt.dir) as tmp:
        t0 = time.perf_counter()
        paths = generate(tmp, pairs, src_len, tgt_len, types, opt.seed)
        fifth = pairs // 5
        head(paths["src"], os.path.join(tmp, "fifth.src.txt"), fifth)
        head(paths["tgt"], os.path.join(tmp, "fifth.tgt.txt"), fifth)
        print(f"generated {pairs} pairs in {time.perf_counter() - t0:.1f}s (not measured)", flush=True)
        res = {}
        runs = [("fifth", fifth, "fifth.src.txt", "fifth.tgt.txt"), ("full", pairs, "train.src.txt", "train.tgt.txt")]
        for name, n, s, t in runs[1:] if opt.tiny else runs:
            wall, cpu, maxrss, tree = run_preprocess(os.path.join(tmp, s), os.path.join(tmp, t),
                                                os.path.join(tmp, "out", name), opt.num_threads)
            res[name] = (maxrss, tree)
            print(f"{name:>5}: {n} pairs, {n * src_len / 1e6:.1f}M source tokens in {wall:.1f}s = "
                  f"{n * src_len / wall / 1e6:.2f}M source tokens/s (CPU {cpu:.0f}s: "
                  f"{n * src_len / cpu / 1e6:.2f}M tokens per CPU-second); peak RSS largest process "
                  f"{maxrss / 2**20:.0f} MiB, process tree {tree / 2**20:.0f} MiB", flush=True)
        print(f"load average during the runs: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")
        if opt.tiny:
            return
        print(f"peak RSS ratio full / fifth: largest process {res['full'][0] / res['fifth'][0]:.2f}, "
              f"process tree {res['full'][1] / max(1, res['fifth'][1]):.2f}")


if __name__ == "__main__":
    main()
