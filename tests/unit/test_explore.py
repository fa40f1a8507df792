"""The summary explorer (onmt/explore/, onmt/bin/explore.py): marks against hand-computed examples, attention
as sparse rows, escaping of every text, the page's data from a hand-built dump, and one-line errors. The page
in a real browser: tests/e2e/test_explore_browser.py."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers.explore_inputs import PRED_A, SOURCES, records, write_inputs
from helpers.paths import ROOT
from onmt.bin.explore import main
from onmt.errors import OptionError, UserError
from onmt.evaluation.diagnostics import repeated_ngrams
from onmt.explore.data import page_data, read_system, rouge_f1, system_names
from onmt.explore.marks import POINTER, REPEATED, SOURCE, repeated_positions, sparse_rows, word_marks
from onmt.explore.page import embed_json, page_html
from onmt.explore.summary import difference_chart, figures_table


def page_json(html):
    """The data a written page embeds, parsed back."""
    m = re.search(r"<script type=application/json id=data>(.*?)</script>", html, re.S)
    return json.loads(m.group(1))


def test_word_marks_by_hand():
    # a: in the source and copied; b: novel; c: in the source; then "a b c" again: a repeated trigram
    words, source = "a b c a b c d".split(), "x a c".split()
    copied = [True, False, False, False, False, False, False]
    assert word_marks(words, source, copied) == "3026460"
    assert word_marks(words, source) == "2026460"                       # a prediction file: no pointer marks
    assert (POINTER, SOURCE, REPEATED) == (1, 2, 4)
    assert word_marks(["y", "y", "y", "y"], ["y"]) == "2666"            # overlapping repeats: words 1..3
    assert word_marks([], ["a"]) == ""


def test_repeated_positions_count_what_diagnostics_count():
    rng = np.random.default_rng(0)
    for _ in range(50):
        words = [str(w) for w in rng.integers(0, 3, rng.integers(0, 12))]
        marks = repeated_positions(words)
        repeated, _ = repeated_ngrams(words, 3)
        starts = [i for i in range(len(words) - 2) if tuple(words[i:i + 3]) in
                  {tuple(words[j:j + 3]) for j in range(i)}]
        assert len(starts) == repeated
        expected = np.zeros(len(words), dtype=bool)
        for i in starts:
            expected[i:i + 3] = True
        assert (marks == expected).all()


def test_word_marks_refuses_misaligned_copy_marks():
    with pytest.raises(ValueError, match="2 copy marks for 3 words"):
        word_marks(["a", "b", "c"], [], [True, False])


def test_sparse_rows_keep_the_strongest_positions_argmax_first():
    m = np.array([[0.1, 0.7, 0.2], [0.0, 0.0, 0.0], [0.5, 0.006, 0.494], [0.5, 0.004, 0.496]])
    assert sparse_rows(m) == [[1, 70, 2, 20, 0, 10], [], [0, 50, 2, 49, 1, 1], [0, 50, 2, 50]]  # 0.004 < 1% of 0.5
    assert sparse_rows(m, top=1) == [[1, 70], [], [0, 50], [0, 50]]
    assert sparse_rows(m, floor=0.2) == [[1, 70, 2, 20], [], [0, 50, 2, 49], [0, 50, 2, 50]]
    assert sparse_rows(None) is None
    assert sparse_rows(np.zeros((2, 0))) == [[], []]


def test_embedded_json_cannot_close_its_script_and_reads_back():
    obj = {"s": ["</script>", "<!--", "a&b", "x\u2028y", "<\\/script>", "é"]}
    text = embed_json(obj)
    assert "</" not in text and "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == obj


def test_page_escapes_every_text(tmp_path):
    paths = write_inputs(str(tmp_path))
    sources = SOURCES
    refs = [line.rstrip("\n") for line in open(paths["ref"], encoding="utf-8")]
    systems = [read_system(paths["a"], sources), read_system(paths["b"], sources)]
    names = ["<b>A</b>", "B & co"]
    scores = [rouge_f1(s["preds"], refs) for s in systems]
    data = page_data(sources, refs, systems, names, scores)
    html = page_html(data, difference_chart(data), "<script>alert('title')</script>")
    assert html.count("<script") == 2                    # the JSON and the page's own code, nothing else
    assert "<img" not in html and "<b>A</b>" not in html
    assert "&lt;script&gt;alert" in html and "B &amp; co" in html
    assert page_json(html) == json.loads(json.dumps(data))
    assert "<script>window.__xss=1</script>" in page_json(html)["articles"][0]["s"]


def test_page_data_marks_attention_and_scores(tmp_path):
    paths = write_inputs(str(tmp_path))
    refs = [line.rstrip("\n") for line in open(paths["ref"], encoding="utf-8")]
    a, b = read_system(paths["a"], SOURCES), read_system(paths["b"], SOURCES)
    assert a["records"] is not None and b["records"] is None
    scores = [rouge_f1(s["preds"], refs) for s in (a, b)]
    data = page_data(SOURCES, refs, [a, b], ["a", "b"], scores)
    art = data["articles"][0]
    ya, yb = art["y"]
    assert ya["w"] == PRED_A[0]
    # cat: source+pointer; <script>..: source+pointer; sat sat on: source (+pointer while p >= 0.5); mat: source
    p = np.linspace(0.9, 0.1, 6)
    assert ya["m"] == "".join("%x" % (2 | int(q >= 0.5)) for q in p) == "333222"
    assert yb["m"] == "22" and "a" not in yb and "p" not in yb
    rec = records()[0]
    assert [row[0] for row in ya["a"]] == rec["attn"].argmax(1).tolist()
    assert ya["i"][0] == [] and [row[0] for row in ya["i"][1:]] == list(range(5))
    assert ya["p"] == [round(float(q) * 100) for q in rec["p_copy"]]
    assert ya["f"] == [round(float(x), 1) for x in scores[0][0]]
    assert art["rm"] == "2022" and art["o"] == 75.0                     # "sits" is novel
    assert data["articles"][1]["y"][0]["m"] == "30322"                  # "arrest" is novel


def test_system_names():
    assert system_names(["x/a1/test.npz", "y/b1/test.npz"]) == ["a1/test", "b1/test"]
    assert system_names(["ml.txt", "rl.npz"]) == ["ml", "rl"]
    assert system_names(["a.txt", "a.txt"]) == ["system 1", "system 2"]
    assert system_names(["a", "b"], ["x", "y"]) == ["x", "y"]


def test_figures_table_escapes_names():
    fig = {"name": "<i>x</i>", "path": "'p'", "rouge": {m: [1.0, 0.5, 1.5] for m in ("R1", "R2", "RL")},
           "length": 3.0, "ref_length": 4.0, "copy_share": None, "novel_bigrams": 0.0, "repeated_trigrams": 0.0}
    html = figures_table([fig], None)
    assert "<i>" not in html and "&lt;i&gt;" in html and "'p'" not in html and "–" in html


def test_main_writes_one_page_and_reports_its_size(tmp_path, capsys):
    paths = write_inputs(str(tmp_path))
    out = str(tmp_path / "page.html")
    size = main(["-src", paths["src"], "-ref", paths["ref"], "-system", paths["a"], paths["b"], "-output", out,
                 "-bootstrap", "100"])
    assert size == os.path.getsize(out) and f"{size:,} bytes" in capsys.readouterr().out
    html = open(out, encoding="utf-8").read()
    assert "http://" not in html and "https://" not in html and "Content-Security-Policy" in html
    data = page_json(html)
    assert data["systems"] == ["a", "b"] and len(data["articles"]) == len(SOURCES)
    assert "<svg class=chart" in html and html.count("<circle") == len(SOURCES)
    assert [os.path.basename(p) for p in os.listdir(tmp_path)] and not [p for p in os.listdir(tmp_path)
                                                                        if ".tmp" in p]


@pytest.mark.parametrize("case, message", [
    ("short_ref", "-ref .* has 3 lines but -src .* has 4"),
    ("short_pred", "-system .*b.txt has 3 lines but -src has 4"),
    ("other_source", "-system .*a.npz: line 2: the dump's source is not -src's line 2"),
    ("not_a_dump", "-system .*bad.npz: .* is not an -attn_debug dump"),
    ("missing", "-system .*nothing.npz: no such file"),
])
def test_bad_input_is_one_user_error_and_no_page(tmp_path, case, message):
    paths = write_inputs(str(tmp_path))
    system = [paths["a"], paths["b"]]
    if case == "short_ref":
        open(paths["ref"], "w").write("a\nb\nc\n")
    elif case == "short_pred":
        open(paths["b"], "w").write("a\nb\nc\n")
    elif case == "other_source":
        lines = list(SOURCES)
        lines[1] = "another article entirely"
        open(paths["src"], "w").write("\n".join(lines) + "\n")
    elif case == "not_a_dump":
        import zipfile
        system = [str(tmp_path / "bad.npz")]
        with zipfile.ZipFile(system[0], "w") as z:
            z.writestr("x.txt", "not numpy")
    else:
        system = [str(tmp_path / "nothing.npz")]
    out = tmp_path / "page.html"
    with pytest.raises(UserError, match=message):
        main(["-src", paths["src"], "-ref", paths["ref"], "-system", *system, "-output", str(out)])
    assert not out.exists()


def test_option_errors(tmp_path):
    paths = write_inputs(str(tmp_path))
    base = ["-src", paths["src"], "-ref", paths["ref"], "-system", paths["a"], paths["b"], "-output",
            str(tmp_path / "p.html")]
    with pytest.raises(OptionError, match="-names gives 1 names for 2 -system files"):
        main(base + ["-names", "x"])
    with pytest.raises(OptionError, match="-bootstrap 10"):
        main(base + ["-bootstrap", "10"])
    with pytest.raises(UserError):
        main(base[:-1] + [paths["src"]])                # the output is an input


def test_tool_prints_one_line_on_bad_input(tmp_path):
    paths = write_inputs(str(tmp_path))
    out = tmp_path / "p.html"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "explore.py"), "-src", paths["src"], "-ref",
                        paths["src"], "-system", str(tmp_path / "none.txt"), "-output", str(out)],
                       capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "none.txt" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()
