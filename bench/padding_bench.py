"""The padding cost of -length_buckets (issue 56): padded tokens per real token, and the batch shapes a
run sees, at CNN/DM lengths.

    python -m bench.padding_bench [-data_dir ../shared/data/cnndm] [-split valid] [-buckets 0,4,8,16]

Reads the lengths of {split}.src.txt(.gz) / {split}.tgt.txt(.gz) (whitespace tokens; the target with
<s> and </s>), truncated as preprocessing would (-src_seq_length_trunc 400 -tgt_seq_length_trunc 100:
See et al.'s), plans one epoch of batches exactly as training does (onmt/inputters/dataset.py: pools
of -pool_factor batches, length-sorted; -batch_size sentences) and pads each batch as collate does
(inputters/collate.py bucket_length, capped at the longest source and target), for each K of
-buckets (0: no buckets, each batch as long as its longest example).
Prints per K: padded tokens per real token (source, target, both), the share the buckets add to K 0's
padded batches, and the distinct source lengths, target lengths and (S, T) shapes of the epoch.
Target: the buckets' cost at most 10 % of the tokens. Without the data (and with -tiny) it runs on
made-up lengths and says so.
"""
import argparse
import gzip
import os

import numpy as np
import torch

from onmt.inputters.collate import bucket_length
from onmt.inputters.dataset import ShardedDataset

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _lengths(path):
    """(N,) whitespace-token counts of the lines of `path` (.gz or plain)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return np.fromiter((len(line.split()) for line in f), dtype=np.int64)


def _find(data_dir, name):
    for path in (os.path.join(data_dir, name), os.path.join(data_dir, name + ".gz")):
        if os.path.exists(path):
            return path
    return None


def epoch_batches(src_len, tgt_len, batch_size, pool_factor, seed=1):
    """Training's plan of one epoch (ShardedDataset._plan) over examples of these lengths: a list of
    index arrays."""
    plan = ShardedDataset(["unused"], batch_size, pool_factor=pool_factor, seed=seed, tgt_vocab_size=1)
    offsets = {"src_offsets": torch.from_numpy(np.concatenate([[0], np.cumsum(src_len)])),
               "tgt_offsets": torch.from_numpy(np.concatenate([[0], np.cumsum(tgt_len)]))}
    return plan._plan(offsets, 0, 0)


def padding_costs(src_len, tgt_len, batches, K):
    """{figure: value} of one epoch's batches padded with K buckets per octave (capped at the longest
    example, as ShardedDataset.caps)."""
    real = {"src": 0, "tgt": 0}
    padded = {"src": 0, "tgt": 0}
    shapes = set()
    for idx in batches:   # per batch (a few thousand), not per example
        widths = {}
        for side, lengths in (("src", src_len), ("tgt", tgt_len)):
            rows = lengths[idx]
            widths[side] = bucket_length(int(rows.max()), K, int(lengths.max()))
            real[side] += int(rows.sum())
            padded[side] += widths[side] * len(idx)
        shapes.add((len(idx), widths["src"], widths["tgt"]))
    out = {f"{side} pad/real": (padded[side] - real[side]) / real[side] for side in real}
    out["both pad/real"] = (sum(padded.values()) - sum(real.values())) / sum(real.values())
    out["tokens"] = sum(padded.values())
    out["S"] = len({s for _, s, _ in shapes})
    out["T"] = len({t for _, _, t in shapes})
    out["shapes"] = len(shapes)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-data_dir", default=os.path.join(HERE, "..", "shared", "data", "cnndm"))
    p.add_argument("-split", default="valid")
    p.add_argument("-src_seq_length_trunc", type=int, default=400)
    p.add_argument("-tgt_seq_length_trunc", type=int, default=100)
    p.add_argument("-batch_size", type=int, default=16)
    p.add_argument("-pool_factor", type=int, default=100)
    p.add_argument("-buckets", default="0,4,8,16")
    p.add_argument("-tiny", action="store_true", help="made-up lengths of 300 examples: the smoke run")
    a = p.parse_args(argv)
    src_path = None if a.tiny else _find(a.data_dir, f"{a.split}.src.txt")
    tgt_path = None if a.tiny else _find(a.data_dir, f"{a.split}.tgt.txt")
    if src_path and tgt_path:
        src_len, tgt_len = _lengths(src_path), _lengths(tgt_path)
        where = f"{src_path} ({len(src_len)} examples)"
    else:
        rng = np.random.default_rng(0)
        n = 300 if a.tiny else 13368
        src_len, tgt_len = rng.integers(50, 1500, n), rng.integers(20, 120, n)
        where = f"made-up lengths ({n} examples; no {a.split}.src.txt(.gz) in {a.data_dir})"
    src_len = np.clip(src_len, 1, a.src_seq_length_trunc if a.src_seq_length_trunc > 0 else None)
    tgt_len = np.clip(tgt_len, 0, a.tgt_seq_length_trunc if a.tgt_seq_length_trunc > 0 else None) + 2  # <s> </s>
    batches = epoch_batches(src_len, tgt_len, a.batch_size, a.pool_factor)
    print(f"data: {where}; -src_seq_length_trunc {a.src_seq_length_trunc} -tgt_seq_length_trunc "
          f"{a.tgt_seq_length_trunc} -batch_size {a.batch_size} -pool_factor {a.pool_factor}: "
          f"{len(batches)} batches")
    print("| -length_buckets | src pad/real | tgt pad/real | both pad/real | added by the buckets "
          "| source lengths | target lengths | (B, S, T) shapes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    base = None
    for K in (int(k) for k in a.buckets.split(",")):
        c = padding_costs(src_len, tgt_len, batches, K)
        base = base or c["tokens"]
        print(f"| {K} | {c['src pad/real']:.1%} | {c['tgt pad/real']:.1%} | {c['both pad/real']:.1%} "
              f"| {c['tokens'] / base - 1:.1%} | {c['S']} | {c['T']} | {c['shapes']} |")


if __name__ == "__main__":
    main()
