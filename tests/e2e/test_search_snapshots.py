"""The searches' outputs pinned: translate.py on a tiny trained model of each family (reinforced, copy
with coverage, plain rnn) under many search settings (greedy and beam 1 with -dump_beam, beam 3 with
n_best 2, length penalties wu and avg, coverage penalties, n-gram blocking, min_length, max_length
reached, -dump_beam) gives the exact words, and the scores (to 1e-6 on a CPU like the recorder's, to
OTHER_CPU_TOL on another), recorded in tests/data/search_snapshots.json by the code before the search was
restructured (issue 40).

To record again (only where a change of the outputs is meant): ONMT_RECORD_SNAPSHOTS=1 pytest this file.
"""
import json
import os

import pytest
import torch

from helpers.checkpoints import VOCABS, build_tiny
from helpers.e2e import read_lines, torch_threads
from helpers.paths import ROOT
from helpers.snapshots import environment
from helpers.toy_models import toy_batches

SNAPSHOTS = os.path.join(ROOT, "tests", "data", "search_snapshots.json")
RECORD = os.environ.get("ONMT_RECORD_SNAPSHOTS") == "1"
FAMILIES = ("reinforced", "copy", "rnn")
# the scores' tolerance where the environment (helpers/snapshots.py) is not the recorder's: the tiny models
# are trained here, and a CPU with other vector units (AVX2 against the recorder's AVX-512) rounds their
# weights differently, moving scores by up to 1e-3; the words are exact on every CPU
OTHER_CPU_TOL = 1e-2

# w6..w13 are outside the target vocabulary (copied by the copy models, <unk> for the rnn)
LINES = ["w1 w2 w9 w3 w11 w4 w5 w12 w1", "w7 w7 w3", "", "w13 w0 w2 w6 w8 w10 w3 w1 w2 w9", "w5",
         "w2 w9 w9 w4 w13 w0 w1", "w4 w4 w4 w4 w4 w4", "w0 w1 w2 w3 w4 w5 w0 w1 w2 w3 w4 w5 w8"]

SETTINGS = {
    "greedy": "-beam_size 1",
    "greedy_rules": "-beam_size 1 -min_length 3 -length_penalty wu -alpha 0.9 -block_ngram_repeat 2",
    "greedy_coverage_avg": "-beam_size 1 -coverage_penalty summary -beta 0.4 -length_penalty avg",
    "greedy_stepwise": "-beam_size 1 -coverage_penalty wu -beta 0.2 -stepwise_penalty -replace_unk",
    "greedy_short": "-beam_size 1 -max_length 3 -batch_size 3",
    "beam1_dump": "-beam_size 1 -dump_beam",
    "beam3": "-beam_size 3 -n_best 2",
    "beam3_wu": "-beam_size 3 -n_best 2 -length_penalty wu -alpha 0.9",
    "beam3_avg": "-beam_size 3 -n_best 2 -length_penalty avg",
    "beam3_coverage_wu": "-beam_size 3 -n_best 2 -coverage_penalty wu -beta 0.3",
    "beam3_coverage_stepwise": "-beam_size 3 -n_best 2 -coverage_penalty summary -beta 0.4 -stepwise_penalty "
                               "-length_penalty wu -alpha 0.5",
    "beam3_block": "-beam_size 3 -n_best 2 -block_ngram_repeat 2 -ignore_when_blocking w4",
    "beam3_no_block": "-beam_size 3 -n_best 2 -block_ngram_repeat 0",
    "beam3_min_length": "-beam_size 3 -n_best 2 -min_length 4 -batch_size 2",
    "beam3_dump": "-beam_size 3 -n_best 2 -dump_beam -length_penalty wu -alpha 0.6 -replace_unk",
    "beam5_short": "-beam_size 5 -n_best 5 -max_length 3",
}


def _train(model, steps=120, seed=0):
    """A few Adam steps of the toy task: the target is the source's words at even positions (copied
    OOVs included), so predictions end at different lengths."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    model.train()
    for _ in range(steps):
        srcs = [[f"w{int(i)}" for i in torch.randint(0, 14, (int(torch.randint(2, 10, (1,), generator=g)),),
                                                     generator=g)] for _ in range(16)]
        tgts = [" ".join(s[::2]) for s in srcs]
        batch = next(toy_batches([" ".join(s) for s in srcs], tgts, VOCABS, 16))
        ll, _, _ = model.gold_log_likelihood(batch)
        opt.zero_grad()
        (-ll.sum() / 16).backward()
        opt.step()
    model.eval()
    return model


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from onmt.opts import saved_options
    d = tmp_path_factory.mktemp("snapshots")
    (d / "src.txt").write_text("\n".join(LINES) + "\n")
    out = {}
    with torch_threads(1):
        for family in FAMILIES:
            model, opt = build_tiny(family, seed=1)
            torch.manual_seed(1)
            _train(model)
            path = d / f"{family}.pt"
            torch.save({"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(),
                        "step": 120}, str(path))
            out[family] = str(path)
    return d, out


def _run(d, ckpt, name, args):
    from onmt.bin.translate import main
    argv = ["-model", ckpt, "-src", str(d / "src.txt"), "-output", str(d / f"{name}.out"), "-max_length", "12",
            *args.split()]
    if "-dump_beam" in argv:
        argv.insert(argv.index("-dump_beam") + 1, str(d / f"{name}.beam.json"))
    with torch_threads(1):
        results = main(argv)
    snap = {"output": read_lines(d / f"{name}.out"),
            "scores": [[[t.score, t.log_prob] for t in nbest] for nbest in results]}
    if "-dump_beam" in argv:
        with open(d / f"{name}.beam.json", encoding="utf-8") as f:
            snap["dump"] = json.load(f)
    return snap


def _close(recorded, now, where, tol):
    """Equal structures, floats to `tol` (None and -inf exactly)."""
    if isinstance(recorded, float) or isinstance(now, float):
        assert isinstance(now, (int, float)) and isinstance(recorded, (int, float)), where
        assert now == pytest.approx(recorded, abs=tol, rel=0) or now == recorded, where
    elif isinstance(recorded, dict):
        assert isinstance(now, dict) and sorted(now) == sorted(recorded), where
        for k in recorded:
            _close(recorded[k], now[k], f"{where}.{k}", tol)
    elif isinstance(recorded, list):
        assert isinstance(now, list) and len(now) == len(recorded), where
        for i, (a, b) in enumerate(zip(recorded, now)):
            _close(a, b, f"{where}[{i}]", tol)
    else:
        assert now == recorded, where


def test_search_outputs_are_the_recorded_ones(checkpoints):
    d, ckpts = checkpoints
    now = {family: {name: _run(d, ckpt, f"{family}_{name}", args) for name, args in SETTINGS.items()}
           for family, ckpt in ckpts.items()}
    if RECORD:
        with open(SNAPSHOTS, "w", encoding="utf-8") as f:
            json.dump({"environment": environment(), **now}, f, indent=0, sort_keys=True)
            f.write("\n")
        pytest.skip(f"recorded {SNAPSHOTS}")
    with open(SNAPSHOTS, encoding="utf-8") as f:
        recorded = json.load(f)
    tol = 1e-6 if recorded.pop("environment") == environment() else OTHER_CPU_TOL
    assert sorted(recorded) == sorted(now)
    for family in FAMILIES:
        assert sorted(recorded[family]) == sorted(SETTINGS), family
        for name in SETTINGS:
            assert now[family][name]["output"] == recorded[family][name]["output"], (family, name)
            _close(recorded[family][name], now[family][name], f"{family}.{name}", tol)
