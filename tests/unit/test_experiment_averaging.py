"""experiments/averaging.py and its report: which checkpoints a view averages, the job graph, the pooled
differences of the table."""
import argparse
import json

import numpy as np
import pytest

from experiments import averaging as av
from experiments.averaging_report import differences, write_report


def test_averaged_steps_end_at_the_run_end_or_at_the_best_step():
    steps = {s: f"m_step_{s}.pt" for s in range(250, 4001, 250)}
    assert av.averaged_steps(steps, 5, 2500, "avg") == [3000, 3250, 3500, 3750, 4000]
    assert av.averaged_steps(steps, 5, 2500, "avgb") == [1500, 1750, 2000, 2250, 2500]
    with pytest.raises(SystemExit, match="only 2 checkpoints up to step 500"):
        av.averaged_steps(steps, 5, 500, "avgb")


def test_views_and_what_each_needs():
    assert av.views(["1", "2"]) == ["best1", "avg1", "avgb1", "best2", "avg2", "avgb2", "ens"]
    assert av.kind_seed("avgb12") == ("avgb", "12") and av.kind_seed("ens") == ("ens", "")
    assert av.view_needs("avgb2", ["1", "2"]) == ["train:2"]
    assert av.view_needs("ens", ["1", "2"]) == ["train:1", "train:2"]


def test_job_list_skips_what_is_scored_and_trains_only_for_unscored_views(tmp_path):
    a = argparse.Namespace(workdir=str(tmp_path / "w"), data="d", last=5, results=str(tmp_path / "r"),
                           tune_pairs=1000)
    (tmp_path / "r").mkdir()
    for v in ("best1", "avg1", "avgb1"):
        (tmp_path / "r" / f"{v}.json").write_text("{}")
    jobs = {name: (needs, cmd) for name, needs, cmd in av.job_list(a, ["1", "2"])}
    assert jobs["train:1"][1] is not None          # the ensemble still needs seed 1's run
    assert jobs["tune:best1"][1] is None and jobs["score:best1"][1] is None
    assert jobs["tune:ens"][0] == ["train:1", "train:2"] and jobs["tune:ens"][1][-1] == "tune:ens"
    (tmp_path / "r" / "ens.json").write_text("{}")
    jobs = {name: (needs, cmd) for name, needs, cmd in av.job_list(a, ["1", "2"])}
    assert jobs["train:1"][1] is None and jobs["train:2"][1] == "train"


def view(rl, length=8.0):
    scores = {"rouge": {"rouge1": 30.0, "rouge2": 12.0, "rougeL": 28.0}, "rougeL_f_per_example": rl,
              "length": length}
    return {"steps": [2500], "chosen": {"alpha": 1.5, "min_length": 4}, "tuning_rougeL": 29.0,
            "edges": {"alpha": "inside", "min_length": "top edge"}, "dev": scores, "test": scores}


def test_differences_pool_the_seeds_and_the_table_names_an_edge(tmp_path):
    res = {"best1": view([0.2, 0.4, 0.6]), "best2": view([0.3, 0.3, 0.3]),
           "avg1": view([0.3, 0.5, 0.7]), "avg2": view([0.3, 0.3, 0.6]), "ens": view([0.5, 0.5, 0.5])}
    d = differences(res, "avg", ["1", "2"], "dev")
    assert d["per_seed"] == pytest.approx([10.0, 10.0]) and d["mean"] == pytest.approx(10.0)
    assert d["low"] <= d["mean"] <= d["high"]
    e = differences(res, "ens", ["1", "2"], "test")
    assert e["per_seed"] == pytest.approx([100 * np.mean([0.3, 0.1, -0.1]), 20.0])
    assert differences(res, "avgb", ["1", "2"], "dev") is None
    for name, r in res.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(r))
    text = write_report(str(tmp_path), ["1", "2"])
    assert "min_length top edge" in text and "| avg | dev | +10.00, +10.00 |" in text
    assert (tmp_path / "table.md").read_text() == text
