"""experiments/cnndm_conv.py (issue 52's converged regime): the splits, the gate on planted curves, and a
tiny run of every stage (ML, gates, the start, the mixed objective and its controls, tuning with -widen,
scoring at the tuned and the matched length, the report), then what a fresh machine would run again."""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))
from test_experiment_cnndm import toy_data  # noqa: E402

from experiments import cnndm_conv as exp  # noqa: E402
from experiments import cnndm_conv_arms as P  # noqa: E402
from experiments import cnndm_conv_stages as st  # noqa: E402


def test_every_third_validation_pair_tunes_and_the_rest_are_development():
    lines = [f"l{i}" for i in range(10)]
    tune, dev = exp.split_lines(lines, span=7, every=3)
    assert tune == ["l0", "l3", "l6"] and dev == ["l1", "l2", "l4", "l5"]


@pytest.mark.parametrize("ml, gates, want", [
    (30.0, [30.2], {"passed": True, "gates": 1, "converged": 0}),            # +0.2 < 0.3: converged at the start
    (30.0, [29.0], {"passed": True, "gates": 1, "converged": 0}),            # a loss passes too
    (30.0, [30.5, 30.6], {"passed": True, "gates": 2, "converged": 1}),      # still learning, then a plateau
    (30.0, [30.5, 31.0, 31.5], {"passed": False, "gates": 3, "converged": 3}),   # never: the bound
    (30.0, [30.5], {"passed": None, "gates": 1, "converged": None}),         # gate 2 needed
    (30.0, [], {"passed": None, "gates": 0, "converged": None}),
    (30.0, [30.3], {"passed": None, "gates": 1, "converged": None}),         # exactly 0.3 is not below it
])
def test_gate_on_planted_curves(ml, gates, want):
    assert st.gate_decision(ml, gates, gate_max=3) == want


def plant(results, name, obj):
    path = results / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def trained_here(a, arm, steps):
    os.makedirs(st.arm_folder(a, arm), exist_ok=True)
    open(os.path.join(st.arm_folder(a, arm), "done"), "w").close()
    for s in steps:
        open(st.checkpoint(a, arm, s), "w").close()


def train_json(arm, steps, best, start=None):
    return {"arm": arm, "steps": steps, "step": steps[-1], "best_step": best, "start": start, "spent": 10.0,
            "budget": 10.0, "progress": {str(s): float(i) for i, s in enumerate(steps)}}


def test_the_gate_decides_which_jobs_come_next(tmp_path):
    """Planted figures: the ML phase of 0.25 trained and tuned; gate 1 gains 0.5 (ML goes on: gate 2 from
    gate 1's end), then gate 2 gains 0.1 (passed: converged at gate 1's end, no gate 3)."""
    res = tmp_path / "results"
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-results", str(res)])
    assert "train:ml0" in exp.pending(a)[0] and "train:g25_1" not in exp.wanted(a)
    plant(res, "train/ml25", train_json("ml25", [400, 800, 1200], 800))
    trained_here(a, "ml25", [400, 800, 1200])
    jobs = exp.wanted(a)
    assert jobs["train:g25_1"] == ["ckpt:ml25@800"] and "tune:ml25@800" in jobs and "train:g25_2" not in jobs
    plant(res, "tuning/ml25@800", {"rouge": {"rougeLsum": 30.0}})
    plant(res, "train/g25_1", train_json("g25_1", [900, 1000], 1000, ["ml25", 800]))
    trained_here(a, "g25_1", [900, 1000])
    assert "train:g25_2" not in exp.wanted(a)              # waits for gate 1's end to be tuned
    plant(res, "tuning/g25_1@1000", {"rouge": {"rougeLsum": 30.5}})
    assert exp.wanted(a)["train:g25_2"] == ["ckpt:g25_1@1000"] and st.gate(a, "25")["passed"] is None
    plant(res, "train/g25_2", train_json("g25_2", [1100], 1100, ["g25_1", 1000]))
    trained_here(a, "g25_2", [1100])
    plant(res, "tuning/g25_2@1100", {"rouge": {"rougeLsum": 30.6}})
    g = st.gate(a, "25")
    assert g["passed"] is True and g["gates"] == 2 and g["checkpoint"] == ["g25_1", 1000]
    assert json.loads((res / "gate_25.json").read_text())["scores"] == [30.5, 30.6]
    jobs = exp.wanted(a)
    assert "train:g25_3" not in jobs and "train:g25_2" in jobs     # gate 2 ran; gate 3 never will
    assert st.view_candidates(a, "ml25") == [("ml25", 800), ("ml25", 1200), ("g25_2", 1100)]
    assert st.start(a) is None                              # the other setting is not decided yet
    assert "train:a1" not in jobs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv")
    data = toy_data(tmp, valid=9)
    argv = ["-workdir", str(tmp / "work"), "-data", str(data), "-results", str(tmp / "results"), "-tiny",
            "-poll", "0.2"]
    exp.main(argv)
    return tmp, argv, exp.parse_args(argv)


def read(tmp, name):
    return json.loads((tmp / "results" / f"{name}.json").read_text())


@pytest.mark.slow
def test_tiny_run_every_stage(tiny):
    tmp, _, a = tiny
    for v in P.VIEWS:
        r = read(tmp, v)
        assert r["view"] == v and len(r["test"]["per_example"]["rougeLsum"]) == 4
        assert len(r["dev_matched"]["per_example"]["rougeLsum"]) == 6
        # no edge left unwidened; the matched rule aims at the tuning references' mean length
        assert not {"top edge", "bottom edge"} & set(r["tuning"]["edges"].values())
        refs = (tmp / "work" / "data" / "tune.tgt.txt").read_text().splitlines()
        assert r["matched"]["target"] == pytest.approx(sum(len(x.split()) for x in refs) / len(refs))
        assert 1 <= len(r["candidates"]) <= P.CANDIDATES
        best = max(range(len(r["scores"])), key=lambda i: (r["scores"][i], -i))
        assert r["candidates"][best] == [r["arm"], r["step"]]
    start = read(tmp, "start_decision")
    assert start["ss"] == max(("25", "0"), key=lambda k: start["scores"][k])
    s_arm, s_step = start["checkpoint"]
    for s in P.SEEDS:
        mixed = read(tmp, f"train/a{s}")
        assert mixed["start"] == [s_arm, s_step] and mixed["step"] == s_step + a.cfg.rl_updates
        for c in ("b", "m"):          # the controls: the mixed arm's CPU seconds, from the same start
            control = read(tmp, f"train/{c}{s}")
            assert control["start"] == [s_arm, s_step] and control["budget"] == pytest.approx(mixed["spent"])
            assert control["spent"] >= mixed["spent"]
    table = (tmp / "results" / "table.md").read_text()
    assert "## Comparisons" in table and "the mixed objective against the strongest ML control" in table
    assert "scheduled sampling 0.25 against none" in table


@pytest.mark.slow
def test_tiny_run_resume_runs_nothing_and_a_fresh_machine_retrains_only_what_is_needed(tiny):
    tmp, argv, a = tiny
    assert exp.pending(a) == ([], [])
    shutil.rmtree(tmp / "work" / "arms")           # a fresh machine: the figures committed, no checkpoint
    assert exp.pending(a) == ([], [])
    os.remove(tmp / "results" / "a1.json")         # a1 to score again: a1 retrained, and what it starts from
    ready, todo = exp.pending(a)
    s_arm = read(tmp, "start_decision")["checkpoint"][0]
    assert set(todo) == {"score:a1", "train:a1", f"train:{s_arm}"} | ({"train:ml" + s_arm[1:].split("_")[0]}
                                                                      if s_arm.startswith("g") else set())
    assert ready == [f"train:{s_arm}"] if not s_arm.startswith("g") else ready == ["train:ml" + s_arm[1:].split("_")[0]]
