"""onmt_evaluate: table, JSON, several references, bootstrap, paired test, bad input in one line."""
import json
import os
import subprocess
import sys

import pytest

from helpers.paths import ROOT
from onmt.bin.evaluate import main


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path):
    preds = ["the cat sat on the mat .", "a dog runs . it barks", "", "he went home ."]
    refs1 = ["the cat sits on a mat .", "the dog ran . it barked loudly", "nothing here", "he goes home ."]
    refs2 = ["a cat was on the mat .", "dogs run", "", "home he went"]
    worse = ["mat", "dog", "", "home"]
    return dict(pred=write(tmp_path / "pred.txt", preds), ref=write(tmp_path / "ref1.txt", refs1),
                ref2=write(tmp_path / "ref2.txt", refs2), worse=write(tmp_path / "worse.txt", worse), tmp=tmp_path)


def test_json_has_every_metric_and_n(files, capsys):
    out = files["tmp"] / "scores.json"
    res = main(["-pred", files["pred"], "-ref", files["ref"], "-json", str(out)])
    table = capsys.readouterr().out
    for name in ("ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum"):
        assert name in table
    data = json.loads(out.read_text())
    assert data["n"] == 4 and data["scorer"] == "built-in" and "-m" in data["settings"]
    for m in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert set("prf") <= set(data[m]) and 0 <= data[m]["f"] <= 100
        assert data[m] == res[m]
    assert not [p for p in os.listdir(files["tmp"]) if ".tmp" in p]


def test_several_references_as_repeated_or_listed_flags(files):
    a = main(["-pred", files["pred"], "-ref", files["ref"], "-ref", files["ref2"]])
    b = main(["-pred", files["pred"], "-ref", files["ref"], files["ref2"]])
    one = main(["-pred", files["pred"], "-ref", files["ref"]])
    assert a["rouge1"] == b["rouge1"] and a["rouge1"] != one["rouge1"]


def test_bootstrap_intervals_and_paired_test(files, capsys):
    res = main(["-pred", files["pred"], "-ref", files["ref"], "-bootstrap", "200"])
    for m in ("rouge1", "rougeLsum"):
        lo, hi = res[m]["f_ci"]
        assert lo <= res[m]["f"] <= hi
    same = main(["-pred", files["pred"], files["pred"], "-ref", files["ref"], "-bootstrap", "200"])
    assert all(same["paired"][m]["p_value_f"] == 1.0 for m in same["paired"])
    capsys.readouterr()
    vs = main(["-pred", files["pred"], "-pred", files["worse"], "-ref", files["ref"]])
    assert vs["paired_samples"] == 1000 and vs["paired"]["rouge2"]["delta_f"] > 0
    assert "paired bootstrap" in capsys.readouterr().out


def test_recall_only_and_limits(files, capsys):
    main(["-pred", files["pred"], "-ref", files["ref"], "-recall_only", "-limit_bytes", "10"])
    out = capsys.readouterr().out
    assert "-b 10" in out and " R" in out and "F1" not in out


def test_sent_per_line_files(tmp_path):
    pred = write(tmp_path / "p.txt", ["the cat sat", "on the mat", "", "a dog", ""])
    ref = write(tmp_path / "r.txt", ["the cat sat on the mat", "", "a dog", ""])
    res = main(["-pred", pred, "-ref", ref, "-sent_per_line"])
    assert res["n"] == 2 and res["rouge1"]["f"] == pytest.approx(100.0)


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "onmt.bin.evaluate", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)


def one_line_error(proc, *needles):
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_input_one_line(files, tmp_path):
    short = write(tmp_path / "short.txt", ["a"])
    one_line_error(run("-pred", files["pred"], "-ref", short), "short.txt", "1 lines")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nok\n\xff\xfe\nok\n")
    one_line_error(run("-pred", bad, "-ref", files["ref"]), "bad.txt", "line 3")
    one_line_error(run("-pred", tmp_path / "missing.txt", "-ref", files["ref"]), "missing.txt")
    one_line_error(run("-pred", files["pred"], "-ref", files["ref"], "-limit_bytes", "5", "-limit_words", "3"),
                   "-limit_bytes")
    one_line_error(run("-pred", files["pred"], "-ref", files["ref"], "-json", tmp_path / "no" / "x.json"), "no")


def test_official_without_perl_names_what_is_missing(files):
    env = dict(os.environ, PATH=str(files["tmp"]))           # no perl on PATH
    one_line_error(run("-pred", files["pred"], "-ref", files["ref"], "-official", env=env),
                   "-official needs perl", "apt-get install")


@pytest.mark.parametrize("n", ["1", "2", "99"])
def test_too_few_bootstrap_samples_are_refused(files, n):
    from onmt.errors import OptionError
    with pytest.raises(OptionError, match=f"-bootstrap {n}: a 95% interval or a p-value needs at least 100"):
        main(["-pred", files["pred"], "-ref", files["ref"], "-bootstrap", n])
