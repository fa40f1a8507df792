"""onmt_tune_decoding (onmt/bin/tune_decoding.py): the grid, the choice on a planted grid, the YAML that
translate.py -config reads back to the same predictions, and one-line errors."""
import json
import os

import pytest
import yaml

from helpers.checkpoints import save_tiny_checkpoint
from helpers.e2e import read_lines, run_cli
from onmt.bin import tune_decoding as td
from onmt.opts import OptionError

REFS = ["a b c d e f", "g h i j"]


def planted(model, setting):
    """Predictions whose ROUGE-L peaks at model "good" with alpha 1.5: shorter below, padded above."""
    keep = {0.0: 1, 0.5: 2, 1.0: 3, 1.5: 6, 2.0: 6}[setting["alpha"]]
    extra = ["x", "y", "z"] if setting["alpha"] == 2.0 else []
    if model == "bad":
        keep = 1
    return [" ".join(r.split()[:keep] + extra) for r in REFS]


def test_grid_is_every_alpha_times_every_min_length_in_order():
    opt = td.opts.parse_values(td.opts.tune_decoding_parser(), {"model": ["m"], "src": "s", "tgt": "t", "output": "o",
                                                                 "alpha": [0, 1.5], "min_length": [0, 4]})
    td.opts.update_tune_decoding_opts(opt)
    assert td.grid(opt) == [{"length_penalty": "wu", "alpha": 0.0, "min_length": 0},
                            {"length_penalty": "wu", "alpha": 0.0, "min_length": 4},
                            {"length_penalty": "wu", "alpha": 1.5, "min_length": 0},
                            {"length_penalty": "wu", "alpha": 1.5, "min_length": 4}]
    opt.length_penalty = "none"
    assert td.grid(opt) == [{"length_penalty": "none", "min_length": 0}, {"length_penalty": "none", "min_length": 4}]


def test_tuner_picks_the_planted_best_model_and_setting():
    settings = [{"length_penalty": "wu", "alpha": a, "min_length": 0} for a in (0.0, 0.5, 1.0, 1.5, 2.0)]
    rows, best = td.tune(["bad", "good"], settings, planted, REFS, "rougeL")
    assert len(rows) == 10
    assert rows[best]["model"] == "good" and rows[best]["setting"]["alpha"] == 1.5
    assert rows[best]["rouge"]["rougeL"] == pytest.approx(100.0)
    assert rows[best]["length"] == pytest.approx(5.0) and rows[best]["ref_length"] == pytest.approx(5.0)
    # the padded setting is longer and scores lower
    assert rows[9]["length"] == pytest.approx(8.0) and rows[9]["rouge"]["rougeL"] < 100.0


def test_ties_go_to_the_earlier_row():
    rows = [{"rouge": {"rougeL": 30.0}}, {"rouge": {"rougeL": 31.0}}, {"rouge": {"rougeL": 31.0}}]
    assert td.best_index(rows, "rougeL") == 1


def test_a_bad_setting_is_one_option_error_before_any_decoding():
    with pytest.raises(OptionError, match="-min_length"):
        td.translate_namespace({"beam_size": 5, "min_length": 40, "max_length": 30, "length_penalty": "wu",
                                "alpha": 1.0})


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune")
    models = [save_tiny_checkpoint(d / f"m{i}.pt", "reinforced", seed=i) for i in range(2)]
    src = ["w1 w2 w3 w4 w5", "w3 w3 w9 w1", "w5 w4 w3 w2 w1 w0", "w2 w7"]
    tgt = ["w1 w2 w3", "w3 w9", "w5 w4 w3", "w2"]
    (d / "s.txt").write_text("\n".join(src) + "\n")
    (d / "t.txt").write_text("\n".join(tgt) + "\n")
    return d, models


def test_the_yaml_decodes_as_the_chosen_row(toy):
    d, models = toy
    r = run_cli("tools/tune_decoding.py", "-model", *models, "-src", d / "s.txt", "-tgt", d / "t.txt",
                "-alpha", "0", "1", "3", "-min_length", "0", "2", "-beam_size", "3", "-max_length", "6",
                "-output", d / "best.yaml", "-report", d / "grid.json")
    assert r.returncode == 0, r.stderr
    report = json.loads((d / "grid.json").read_text())
    rows = report["rows"]
    assert len(rows) == 2 * 3 * 2
    best = report["best"]
    assert rows[best]["rouge"]["rougeL"] == max(row["rouge"]["rougeL"] for row in rows)
    assert best == min(i for i, row in enumerate(rows) if row["rouge"]["rougeL"] == rows[best]["rouge"]["rougeL"])
    chosen = yaml.safe_load((d / "best.yaml").read_text())
    assert chosen == {"model": os.path.abspath(rows[best]["model"]), "beam_size": 3, "max_length": 6,
                      **rows[best]["setting"]}
    assert "| checkpoint | setting |" in r.stdout and "<- rougeL" in r.stdout
    # translate.py -config reads it and writes what the tuner scored
    t = run_cli("translate.py", "-config", d / "best.yaml", "-src", d / "s.txt", "-tgt", d / "t.txt",
                "-output", d / "pred.txt", "-report_rouge")
    assert t.returncode == 0, t.stderr
    from onmt.evaluation import score, summarize
    res = summarize(score(read_lines(d / "pred.txt"), read_lines(d / "t.txt")))
    assert res["rougeL"]["f"] == pytest.approx(rows[best]["rouge"]["rougeL"], abs=1e-3)
    assert sum(len(p.split()) for p in read_lines(d / "pred.txt")) / 4 == pytest.approx(rows[best]["length"])


@pytest.mark.parametrize("args, message", [
    (["-length_penalty", "avg", "-alpha", "1"], "-alpha is wu's parameter"),
    (["-min_length", "9", "-max_length", "5"], "-min_length 9 is above -max_length 5"),
    (["-beam_size", "0"], "-beam_size must be >= 1"),
])
def test_bad_options_are_one_line(toy, args, message):
    d, models = toy
    r = run_cli("tools/tune_decoding.py", "-model", models[0], "-src", d / "s.txt", "-tgt", d / "t.txt",
                "-output", d / "x.yaml", *args)
    assert r.returncode != 0 and message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (d / "x.yaml").exists()


def test_bad_files_are_one_line(toy, tmp_path):
    d, models = toy
    (tmp_path / "short.txt").write_text("w1\n")
    cases = [(["-tgt", tmp_path / "short.txt", "-output", tmp_path / "o.yaml"], "has 4 lines but -tgt has 1"),
             (["-tgt", d / "t.txt", "-output", d / "s.txt"], "-output"),
             (["-tgt", d / "t.txt", "-output", tmp_path / "o.yaml", "-report", tmp_path / "o.yaml"], "-report")]
    for args, message in cases:
        r = run_cli("tools/tune_decoding.py", "-model", models[0], "-src", d / "s.txt", *args)
        assert r.returncode != 0 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / "o.yaml").exists()
    assert read_lines(d / "s.txt")[0] == "w1 w2 w3 w4 w5"


def lengths_decoder(peak_min_length):
    """Predictions whose ROUGE-L rises with the minimum length up to `peak_min_length`: the first
    min_length words of a long reference (the alpha does nothing)."""
    refs = [" ".join(f"w{i}" for i in range(200))]

    def decode(model, setting):
        keep = min(setting["min_length"], peak_min_length) or 1
        return [" ".join(refs[0].split()[:keep] + ["x"] * max(setting["min_length"] - peak_min_length, 0))]
    return decode, refs


def test_widening_moves_an_edge_choice_inside_and_stops_at_the_bound():
    decode, refs = lengths_decoder(peak_min_length=70)
    bounds = {"alpha": (0.0, 3.0), "min_length": (0, 90)}
    rows, best, status, axes = td.tune_widening(["m"], {"alpha": [0.0, 1.0], "min_length": [0, 15, 30]}, "wu",
                                                decode, refs, "rougeL", bounds, widen=True)
    assert rows[best]["setting"]["min_length"] == 75 and status["min_length"] == "interior"
    assert sorted(axes["min_length"]) == [0, 15, 30, 45, 60, 75, 90]
    assert status["alpha"] == "lowest possible" and sorted(axes["alpha"]) == [0.0, 1.0]   # ties: alpha 0 first
    # the peak beyond the bound: widening stops at 90 and says so
    decode, refs = lengths_decoder(peak_min_length=150)
    rows, best, status, axes = td.tune_widening(["m"], {"alpha": [0.0], "min_length": [0, 40]}, "wu",
                                                decode, refs, "rougeL", bounds, widen=True)
    assert rows[best]["setting"]["min_length"] == 90 and status["min_length"] == "at its bound"
    assert sorted(axes["min_length"]) == [0, 40, 80, 90] and len(rows) == 4
    # without -widen the edge is only reported
    rows, best, status, _ = td.tune_widening(["m"], {"alpha": [0.0], "min_length": [0, 40]}, "wu",
                                             decode, refs, "rougeL", bounds, widen=False)
    assert status["min_length"] == "top edge" and len(rows) == 2


def test_widen_and_match_length_on_a_toy_model(toy):
    d, models = toy
    refs = ["w1 w2 w3 w4 w5 w6", "w3 w9 w1 w2 w3", "w5 w4 w3 w2 w1 w0", "w2 w7 w1 w1 w2"]
    (d / "t5.txt").write_text("\n".join(refs) + "\n")
    r = run_cli("tools/tune_decoding.py", "-model", models[0], "-src", d / "s.txt", "-tgt", d / "t5.txt",
                "-alpha", "0", "1", "-min_length", "0", "1", "-beam_size", "3", "-max_length", "12", "-widen",
                "-output", d / "w.yaml", "-report", d / "w.json", "-match_output", d / "m.yaml")
    assert r.returncode == 0, r.stderr
    report = json.loads((d / "w.json").read_text())
    assert set(report["edges"]) == {"alpha", "min_length"}
    assert all(v not in ("top edge", "bottom edge") for v in report["edges"].values())
    matched = report["matched"]
    assert matched["target"] == pytest.approx(5.5)
    # the matched rule decodes to the mean length it reports, nearest the references' of what it probed
    t = run_cli("translate.py", "-config", d / "m.yaml", "-src", d / "s.txt", "-output", d / "mp.txt")
    assert t.returncode == 0, t.stderr
    mean = sum(len(p.split()) for p in read_lines(d / "mp.txt")) / 4
    assert mean == pytest.approx(matched["length"])
    assert abs(mean - 5.5) <= min(abs(v - 5.5) for v in matched["probes"].values()) + 1e-9
    assert abs(mean - 5.5) <= 1.0


def test_an_ensemble_is_one_candidate_and_its_yaml_decodes_as_the_ensemble(toy):
    d, models = toy
    r = run_cli("tools/tune_decoding.py", "-model", *models, "-ensemble", "-src", d / "s.txt",
                "-tgt", d / "t.txt", "-alpha", "0", "1", "-beam_size", "3", "-max_length", "6",
                "-output", d / "ens.yaml", "-report", d / "ens.json")
    assert r.returncode == 0, r.stderr
    report = json.loads((d / "ens.json").read_text())
    assert len(report["rows"]) == 2                       # one candidate x two length rules
    assert report["rows"][0]["model"] == [str(m) for m in models]
    chosen = yaml.safe_load((d / "ens.yaml").read_text())
    assert chosen["model"] == [os.path.abspath(m) for m in models]
    assert "m0.pt + m1.pt" in r.stdout
    t = run_cli("translate.py", "-config", d / "ens.yaml", "-src", d / "s.txt", "-output", d / "ep.txt")
    assert t.returncode == 0, t.stderr
    e = run_cli("translate.py", "-model", *models, "-src", d / "s.txt", "-output", d / "ep2.txt",
                "-beam_size", "3", "-max_length", "6", "-length_penalty", "wu",
                "-alpha", str(report["chosen"]["alpha"]), "-min_length", "0")
    assert e.returncode == 0, e.stderr
    assert read_lines(d / "ep.txt") == read_lines(d / "ep2.txt")
    row = report["rows"][report["best"]]
    assert sum(len(p.split()) for p in read_lines(d / "ep.txt")) / 4 == pytest.approx(row["length"])
