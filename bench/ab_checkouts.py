"""A against B: the same training step and beam search timed in two checkouts of the toolkit, alternately,
in one run (a refactor's "speed within noise": the ratio B / A per measure, its median and range over rounds).

    python bench/ab_checkouts.py -a /path/to/checkout_before -b . [-rounds 5] [-steps 20]
    git worktree add -f /tmp/before <commit> --detach      # a checkout of the commit before

Each round runs one subprocess per checkout (the order alternating between rounds, one thread each) that
imports the toolkit from that checkout only and, for each family (rnn with mlp attention, copy with coverage,
reinforced), builds the model through onmt.model_builder.build_model at the default execution (fused kernels),
times -steps ML training steps (forward, backward, Adam) on one batch and a beam search (beam 4, 20 tokens)
of the batch without autograd, after one warm-up of each. Built from public entry points only (options,
build_model, build_loss, beam_search, bench/reinforced_step_bench.py's make_batch), so any two commits that
have them can be compared. Prints one line per family and measure: seconds of A and B (medians) and B / A.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

SNIPPET = r'''
import json, sys, time
from types import SimpleNamespace
import configargparse, torch
torch.set_num_threads(1)
from onmt import opts
from onmt.losses import build_loss
from onmt.model_builder import build_model
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings
from onmt.constants import N_SPECIALS, SPECIALS
from onmt.inputters.vocab import Vocab, Vocabs
from bench.reinforced_step_bench import make_batch

FAMILIES = {"rnn": ["-global_attention", "mlp"], "copy": ["-copy_attn", "-coverage_attn", "-global_attention", "mlp"],
            "reinforced": ["-reinforced", "-scheduled_sampling", "0.25"]}
steps, families, sizes = json.loads(sys.argv[1])
size = SimpleNamespace(seed=0, src_vocab=3000, tgt_vocab=2000,
                       **{k: sizes[k] for k in ("batch_size", "src_len", "tgt_len")})
words = SPECIALS + [f"w{i}" for i in range(size.src_vocab - N_SPECIALS)]
vocabs = Vocabs(Vocab(words), Vocab(words[:size.tgt_vocab]), shared=True)
out = {}
for family in families:
    args = FAMILIES[family]
    parser = configargparse.ArgumentParser()
    opts.model_opts(parser)
    opts.train_opts(parser)
    opt = opts.parse_with_given(parser, ["-data", "x", "-rnn_size", str(sizes["rnn_size"]), "-word_vec_size",
                                         str(sizes["rnn_size"] // 2), "-brnn", "-dropout", "0"] + args)
    opts.update_model_opts(opt)
    opts.validate_model_opts(opt)
    torch.manual_seed(0)
    model = build_model(opt, vocabs).train()
    loss_fn = build_loss(opt)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = make_batch(size, "cpu")

    def train_step():
        optim.zero_grad()
        loss, stats = loss_fn(model, batch)
        loss.backward()
        optim.step()

    def translate():
        with torch.no_grad():
            beam_search(model, batch, SearchSettings(beam_size=4, max_length=20))

    train_step()
    start = time.perf_counter()
    for _ in range(steps):
        train_step()
    out[f"{family} train step"] = (time.perf_counter() - start) / steps
    model.eval()
    translate()
    start = time.perf_counter()
    for _ in range(3):
        translate()
    out[f"{family} beam search"] = (time.perf_counter() - start) / 3
print("RESULT " + json.dumps(out))
'''


def run_once(checkout, a):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=os.path.abspath(checkout))
    sizes = {k: getattr(a, k) for k in ("batch_size", "src_len", "tgt_len", "rnn_size")}
    proc = subprocess.run([sys.executable, "-c", SNIPPET, json.dumps([a.steps, a.families, sizes])], cwd=checkout,
                          env=env, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{checkout}: the timing run failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-a", required=True, help="checkout A (the reference, e.g. the commit before)")
    p.add_argument("-b", default=".", help="checkout B")
    p.add_argument("-rounds", type=int, default=5)
    p.add_argument("-steps", type=int, default=20, help="timed training steps per family and round")
    p.add_argument("-families", nargs="+", default=["rnn", "copy", "reinforced"], choices=["rnn", "copy", "reinforced"])
    p.add_argument("-batch_size", type=int, default=16)
    p.add_argument("-src_len", type=int, default=60)
    p.add_argument("-tgt_len", type=int, default=16)
    p.add_argument("-rnn_size", type=int, default=128, help="the embeddings get half")
    a = p.parse_args()
    times = {"A": [], "B": []}
    for r in range(a.rounds):
        for side in (("A", "B") if r % 2 == 0 else ("B", "A")):
            times[side].append(run_once(a.a if side == "A" else a.b, a))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"A = {a.a}\nB = {a.b}\n{a.rounds} rounds, alternating; one thread per run")
    print(f"{'measure':<28}{'A s':>10}{'B s':>10}{'B/A median':>12}{'B/A range':>18}")
    for key in times["A"][0]:
        ratios = [b[key] / x[key] for x, b in zip(times["A"], times["B"])]
        print(f"{key:<28}{statistics.median(t[key] for t in times['A']):>10.4f}"
              f"{statistics.median(t[key] for t in times['B']):>10.4f}{statistics.median(ratios):>12.3f}"
              f"{f'{min(ratios):.3f}-{max(ratios):.3f}':>18}")


if __name__ == "__main__":
    main()
