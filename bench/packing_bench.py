"""When does packing the generator's weight for oneDNN pay? x (N, D) W^T + b against a (V, D) W.

    python bench/packing_bench.py [-threads 1] [-repeats 10]

Per shape (D, V: See et al.'s 256 x 17k (the comparison's 17,326 words, and 17,328, a multiple of 16)
and 256 x 50k, Paulus et al.'s 1200 x 30k) and row count N,
prints the milliseconds of: packing W and one product (what a one-off product pays), one product on a
weight packed beforehand (what each of many products on the same weight pays), `torch.addmm`, and
addmm in blocks of 1024 columns (gold_softmax.linear_in_column_blocks).
The models pack once where one weight serves many products (decoding steps, scheduled-sampling rows);
for a one-off product (the teacher-forced logits of a training step) they use the column blocks below
1024 rows and pack from 1024 rows on (gold_softmax.training_logits: "pack + product" wins there).
"""
import argparse
import time

import torch

from onmt.fused.gold_softmax import linear_in_column_blocks
from onmt.fused.packed_linear import PackedLinear

SHAPES = [(256, 17326), (256, 17328), (256, 50000), (1200, 30000)]
ROWS = [32, 160, 360, 1600]


def _ms(fn, repeats):
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e3


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-threads", type=int, default=1)
    p.add_argument("-repeats", type=int, default=10)
    p.add_argument("-tiny", action="store_true",
                   help="one 16 x 64 weight, 4 rows, one repeat: the test suite's smoke run")
    a = p.parse_args(argv)
    shapes, rows = ([(16, 64)], [4]) if a.tiny else (SHAPES, ROWS)
    a.repeats = 1 if a.tiny else a.repeats
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print(f"{a.threads} thread(s); milliseconds per product (mean of {a.repeats})")
    print("| D | V | N | pack + product | prepacked product | addmm | addmm / (pack + product) | column blocks "
          "| addmm / column blocks |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for D, V in shapes:
        w, b = torch.randn(V, D), torch.randn(V)  # (V, D), (V,)
        prepacked = PackedLinear(w, b)
        for N in rows:
            x = torch.randn(N, D)  # (N, D)
            once = _ms(lambda: PackedLinear(w, b, rows_hint=N)(x), a.repeats)
            packed = _ms(lambda: prepacked(x), a.repeats)
            plain = _ms(lambda: torch.addmm(b, x, w.t()), a.repeats)
            blocks = _ms(lambda: linear_in_column_blocks(x, w, b), a.repeats)
            print(f"| {D} | {V} | {N} | {once:.2f} | {packed:.2f} | {plain:.2f} | {plain / once:.2f} | {blocks:.2f} "
                  f"| {plain / blocks:.2f} |", flush=True)


if __name__ == "__main__":
    main()
