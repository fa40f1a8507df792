"""experiments/rl_vs_ml.py and its report: the parts that need no training (log parsing, the choice of the
equal-step control, the table)."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from experiments import rl_vs_ml, rl_vs_ml_report  # noqa: E402


def test_read_curve_takes_each_validation_with_its_training_time(tmp_path):
    """Older logs' "(step N; S s of training)" and today's "(step N; training CPU S s)" alike."""
    log = tmp_path / "train.log"
    log.write_text("[x INFO] Validation xent: 4.0000 (step 100; 130 s of training)\n"
                   "[x INFO] Validation ROUGE-L F1 (greedy): 30.50; mean length 6.1 (step 100; 130 s of training)\n"
                   "[x INFO] Step 150/1000; acc: 1\n"
                   "[x INFO] Validation xent: 3.0000 (step 200; training CPU 190 s)\n")   # today's form
    curve = rl_vs_ml.read_curve(str(log), offset=100.0)
    assert [p["step"] for p in curve] == [100, 200] and [p["seconds"] for p in curve] == [30.0, 90.0]
    assert curve[0]["rougeL"] == 30.5 and curve[0]["ppl"] == pytest.approx(54.598, abs=1e-3)
    assert "rougeL" not in curve[1]


def test_equal_step_control_is_the_last_checkpoint_not_after_the_arm(tmp_path):
    a = rl_vs_ml.parse_args(["-workdir", str(tmp_path)])
    folder = tmp_path / "arms" / "b1"
    folder.mkdir(parents=True)
    for step in (1050, 1100, 1150, 1500):
        (folder / f"model_step_{step}.pt").write_bytes(b"")
    path, name = rl_vs_ml.equal_step_checkpoint(a, "a1", 1149)
    assert path.endswith("model_step_1100.pt") and name == "b1_steps1100"
    assert rl_vs_ml.equal_step_checkpoint(a, "a1", 1000) is None


def _result(name, rl, paired=None):
    r = {"name": name, "step": 10, "train_seconds": 5.0, "rouge": {"rouge1": 30.0, "rouge2": 10.0, "rougeL": rl},
         "length": 6.0, "ref_length": 8.0, "repeated_trigrams": 0.0, "novel_bigrams": 40.0, "copy_share": 70.0,
         "curve": [{"step": 10, "seconds": 1.0, "rougeL": rl}]}
    if paired is not None:
        r["paired"] = {"rougeL": {"delta_f": paired[0], "p_value_f": paired[1]}}
    return r


def test_report_table_has_a_row_per_model_with_its_control(tmp_path):
    for r in (_result("ml_best", 30.0), _result("b1", 30.5), _result("a1", 31.25, (0.75, 0.01))):
        (tmp_path / f"{r['name']}.json").write_text(json.dumps(r))
    rl_vs_ml_report.write_report(str(tmp_path))
    table = (tmp_path / "table.md").read_text()
    (a_row,) = [line for line in table.splitlines() if line.startswith("| a1 ")]
    assert "| 31.25 | +0.75 | 0.010 | b1 |" in a_row
    assert table.index("| ml_best ") < table.index("| a1 ") < table.index("| b1 ")
    assert (tmp_path / "curves.png").stat().st_size > 0
