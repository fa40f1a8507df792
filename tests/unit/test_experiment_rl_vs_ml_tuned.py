"""experiments/rl_vs_ml_tuned.py and its report: the splits, the candidates, the job order, the choice of
the control, and the tune -> score -> report stages on a tiny run (tiny checkpoints, a few pairs)."""
import json
import os
import sys

import numpy as np
import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from experiments import rl_vs_ml_tuned as exp  # noqa: E402
from experiments import rl_vs_ml_tuned_report as report  # noqa: E402


def test_candidates_are_the_last_checkpoints_within_each_third():
    points = [(100, "p100"), (240, "p240"), (250, "p250"), (470, "p470"), (719, "p719"), (730, "p730")]
    assert exp.at_fractions(points, 720) == ["p240", "p470", "p719"]
    assert exp.at_fractions([(700, "late")], 720) == ["late"]          # one checkpoint: once
    assert exp.at_fractions([(800, "over")], 720) == []


def test_splits_are_validation_head_and_tail(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for side in ("src", "tgt"):
        (data / f"valid.{side}.txt").write_text("".join(f"{side}{i}\n" for i in range(5)))
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-data", str(data), "-tune_pairs", "2"])
    s = exp.splits(a)
    assert open(s["tune"][0]).read() == "src0\nsrc1\n" and open(s["dev"][1]).read() == "tgt2\ntgt3\ntgt4\n"
    assert s["test"] == (str(data / "test.src.txt"), str(data / "test.tgt.txt"))


def test_jobs_follow_seeds_and_what_they_need(tmp_path):
    a = exp.parse_args(["-workdir", str(tmp_path), "-results", str(tmp_path / "results")])
    jobs = exp.job_list(a, ["1", "2"], ["r", "l"], ["1"])
    names = [n for n, _, _ in jobs]
    needs = {n: set(d) for n, d, _ in jobs}
    assert names[:2] == ["tune:ml_best", "score:ml_best"]
    assert names.index("score:m1") < names.index("train:a2")            # seed 1 complete before seed 2
    assert names.index("score:b2_steps") < names.index("train:m2")      # later seeds' m controls last
    assert needs["tune:b1_steps"] == {"train:b1", "train:a1"} and needs["score:a2"] == {"tune:a2"}
    assert all(cmd is not None for _, _, cmd in jobs)                   # nothing done yet
    assert names.index("score:m2") < names.index("train:r1") and names[-1] == "score:l1"   # variants last
    assert names.index("score:r1") < names.index("train:l1")            # variant by variant


def test_a_fresh_machine_retrains_nothing_whose_figures_are_committed(tmp_path):
    """Scored views (their results JSON committed) need neither tuning nor their arms' training, even with
    no checkpoint or chosen.yaml on this machine; an arm with one view left to score still trains."""
    results = tmp_path / "results"
    results.mkdir()
    for view in ("ml_best", "a1", "b1", "m1"):
        (results / f"{view}.json").write_text("{}")
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-results", str(results)])
    cmds = {n: cmd for n, _, cmd in exp.job_list(a, ["1"], ["r"], ["1"])}
    assert cmds["train:m1"] is None and cmds["tune:m1"] is None and cmds["score:a1"] is None
    assert cmds["train:a1"] == "train" and cmds["train:b1"] == "train"    # b1_steps is not scored yet
    assert cmds["tune:b1_steps"] is not None and cmds["train:r1"] == "train" and cmds["tune:r1"] is not None


def _result(view, tuning_rl, per_example, split_len=2.0):
    fig = {"rouge": {"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0}, "rougeL_f_per_example": per_example,
           "length": split_len, "ref_length": 3.0, "copy_share": 50.0, "novel_bigrams": 10.0, "repeated_trigrams": 0.0}
    return {"view": view, "step": 10, "train_seconds": 1.0, "dev": fig, "test": fig,
            "tuning": {"best": 0, "rows": [{"rouge": {"rougeL": tuning_rl}}],
                       "chosen": {"length_penalty": "wu", "alpha": 1.5}}}


def test_the_strongest_control_is_chosen_on_tuning_not_on_test():
    results = {"b1": _result("b1", 30.0, [0.9, 0.9]), "m1": _result("m1", 31.0, [0.1, 0.1]),
               "b1_steps": _result("b1_steps", 29.0, [1.0, 1.0]), "b2": _result("b2", 20.0, [0.0, 0.0])}
    assert report.strongest_control(results, "1") == "m1"
    assert report.strongest_control(results, "2") == "b2" and report.strongest_control(results, "3") is None


def test_resampled_mixed_arms_are_also_set_against_ml_on_the_same_pairs():
    results = {"q1": _result("q1", 30.0, [0.6, 0.4, 0.5]), "v1": _result("v1", 29.0, [0.5, 0.3, 0.4]),
               "o1": _result("o1", 30.0, [0.5, 0.5, 0.5]), "b1": _result("b1", 31.0, [0.9, 0.9, 0.9])}
    lines = report.same_data(results).splitlines()
    assert len(lines) == 3 and lines[2].startswith("| q1 | v1 | +10.00 (")   # o1 has no p1: no row
    assert report.same_data({"q1": results["q1"]}) == ""


@pytest.fixture()
def tiny_run(tmp_path):
    """A workdir with an ML start and arms a1, b1, m1 of tiny checkpoints, and tiny data."""
    data = tmp_path / "data"
    data.mkdir()
    src = ["w1 w2 w3 w4", "w3 w9 w1", "w5 w4 w3 w2", "w2 w7 w1", "w6 w1 w2", "w4 w4 w5"]
    tgt = ["w1 w2", "w3 w9", "w5 w4", "w2", "w6", "w4 w5"]
    for split, rows in (("valid", slice(0, 5)), ("test", slice(2, 6))):
        (data / f"{split}.src.txt").write_text("\n".join(src[rows]) + "\n")
        (data / f"{split}.tgt.txt").write_text("\n".join(tgt[rows]) + "\n")
    work = tmp_path / "work"
    (work / "ml").mkdir(parents=True)
    base = save_tiny_checkpoint(work / "ml" / "model_best.pt", "reinforced", seed=0)
    for i, arm in enumerate(("a1", "b1", "m1")):
        folder = work / "arms" / arm
        folder.mkdir(parents=True)
        for step, secs in ((50, 10.0), (100, 20.0), (150, 30.0)):
            p = save_tiny_checkpoint(folder / f"model_step_{step}.pt", "reinforced", seed=10 * i + step)
            ck = torch.load(p, weights_only=True)
            ck.update(step=step, train_seconds=secs)
            torch.save(ck, p)
        (folder / "done").write_text("")
    a = exp.parse_args(["-workdir", str(work), "-data", str(data), "-tune_pairs", "2", "-arm_seconds", "30",
                        "-results", str(tmp_path / "results"), "-seeds", "1"])
    return a, base, data


def test_tiny_run_tunes_scores_and_reports(tiny_run):
    a, base, data = tiny_run
    assert exp.view_candidates(a, "a1", base) == [os.path.join(a.workdir, "arms", "a1", f"model_step_{s}.pt")
                                                  for s in (50, 100, 150)]
    # equal steps: b1's checkpoints at 1/3, 2/3 and all of a1's steps since the ML start (step 0 here)
    assert [p.rsplit("_", 1)[-1] for p in exp.view_candidates(a, "b1_steps", base)] == ["50.pt", "100.pt", "150.pt"]
    for view in ("a1", "b1", "m1"):
        exp.tune_view(a, view, base)
        exp.score_view(a, view)
    res = {v: json.load(open(os.path.join(a.results, f"{v}.json"))) for v in ("a1", "b1", "m1")}
    grid = res["a1"]["tuning"]
    assert len(grid["rows"]) >= 3 * len(exp.ALPHAS) * len(exp.MIN_LENGTHS) and grid["src"].endswith("tune.src.txt")
    assert res["a1"]["step"] == int(grid["chosen"]["model"].split("_")[-1][:-3])
    assert len(res["a1"]["dev"]["rougeL_f_per_example"]) == 3 and len(res["a1"]["test"]["rougeL_f_per_example"]) == 4
    assert res["a1"]["dev"]["rouge"]["rougeL"] == pytest.approx(100 * np.mean(res["a1"]["dev"]["rougeL_f_per_example"]),
                                                               abs=1e-3)
    report.write_report(a.results, str(data))
    table = open(os.path.join(a.results, "table.md")).read()
    control = report.strongest_control(res, "1")
    (a_row,) = [line for line in table.split("## Development")[0].splitlines() if line.startswith("| a1 ")]
    delta = 100 * np.mean(np.array(res["a1"]["test"]["rougeL_f_per_example"]) -
                          np.array(res[control]["test"]["rougeL_f_per_example"]))
    assert f"| {delta:+.2f} |" in a_row and f"| {control} |" in a_row
    assert "overlap" in open(os.path.join(a.results, "breakdown.md")).read()
    assert os.path.getsize(os.path.join(a.results, "gain_by_overlap.png")) > 0


def test_arm_commands_differ_only_where_the_arms_do(tiny_run):
    a, base, _ = tiny_run
    cmd = {}
    for arm in ("a2", "b2", "m2", "r2"):
        c = exp.arm_command(a, "PREP", base, arm)
        cmd[arm] = c
        assert c[c.index("-train_from") + 1] == base and c[c.index("-seed") + 1] == "2"
    assert cmd["a2"][cmd["a2"].index("-rl_gamma") + 1] == "0.9984" and "-rl_gamma" not in cmd["b2"]
    assert "-reset_optim" in cmd["a2"] and "-reset_optim" in cmd["b2"] and "-reset_optim" not in cmd["m2"]
    assert cmd["m2"][cmd["m2"].index("-learning_rate") + 1] == "0.001"
    assert cmd["r2"][cmd["r2"].index("-rl_reward") + 1] == "rougeL_recall"
    assert exp.arm_command(a, "PREP", base, "a1") is None                # done


def test_matched_weights_give_the_test_histogram_keeping_the_scarce_bin_whole():
    rng = np.random.default_rng(0)
    train = np.concatenate([rng.uniform(0.0, 0.1, 100), rng.uniform(0.9, 1.0, 900)])   # 10 % low, 90 % high
    test = np.concatenate([np.full(50, 0.05), np.full(50, 0.95)])                         # half and half
    w = exp.matched_weights(train, test)
    assert np.all(w[:100] == 1.0)                               # the scarce bin kept whole
    assert np.allclose(w[100:], 100 / 900)                      # the other down to as many: 50 % / 50 %


def test_oversampled_draws_give_the_test_histogram_keeping_every_pair_in_play():
    """-variants q / v: as many draws as training pairs, with replacement, so that their overlap histogram
    is the test set's; the scarce bin's pairs are repeated, not the plentiful ones thrown away (the
    subsampled o / p kept 1,086 of 33,083 pairs)."""
    rng = np.random.default_rng(0)
    train = np.concatenate([rng.uniform(0.0, 0.1, 100), rng.uniform(0.9, 1.0, 900)])   # 10 % low, 90 % high
    test = np.concatenate([np.full(50, 0.05), np.full(50, 0.95)])                         # half and half
    draws = exp.oversample_draws(train, test, len(train), seed=3)
    assert len(draws) == 1000 and draws.min() >= 0 and draws.max() < 1000
    low = np.mean(draws < 100)                                       # drawn from the low-overlap bin
    assert abs(low - 0.5) < 0.05                                     # the test set's half, not training's 10 %
    assert len(np.unique(draws[draws >= 100])) > 350 and len(np.unique(draws[draws < 100])) > 90


def test_equal_steps_candidates_count_the_steps_since_the_ml_start(tmp_path):
    work = tmp_path / "w"
    (work / "ml").mkdir(parents=True)
    base = save_tiny_checkpoint(work / "ml" / "model_best.pt", "rnn")
    ck = torch.load(base, weights_only=True)
    ck["step"] = 60
    torch.save(ck, base)
    for arm, steps in (("a1", (90, 120, 150)), ("b1", (90, 120, 150, 180, 210))):
        (work / "arms" / arm).mkdir(parents=True)
        for s in steps:
            (work / "arms" / arm / f"model_step_{s}.pt").write_bytes(b"")
    a = exp.parse_args(["-workdir", str(work)])
    # a1 went 90 steps from step 60: b1's last checkpoints at 60 + 30, 60 + 60, 60 + 90
    assert [p.rsplit("_", 1)[-1] for p in exp.view_candidates(a, "b1_steps", base)] == ["90.pt", "120.pt", "150.pt"]
