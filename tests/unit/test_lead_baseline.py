"""tools/lead_baseline.py: lead-k sentences and first-k words, one line per input line."""
import os
import subprocess
import sys

from helpers.paths import ROOT

TOOL = os.path.join(ROOT, "tools", "lead_baseline.py")


def run(*args):
    return subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)


def test_lead_sentences_words_and_tags(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("one two . three ? four ! five . six .\n\nshort\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert run("-src", src, "-output", out, "-sentences", "3").returncode == 0
    assert out.read_text().split("\n") == ["one two . three ? four !", "", "short", ""]
    assert run("-src", src, "-output", out, "-sentences", "2", "-tag_sentences").returncode == 0
    assert out.read_text().split("\n")[0] == "<t> one two . </t> <t> three ? </t>"
    assert run("-src", src, "-output", out, "-words", "4").returncode == 0
    assert out.read_text().split("\n") == ["one two . three", "", "short", ""]
    assert run("-src", src, "-output", out, "-sentences", "1", "-sentence_end", ".").returncode == 0
    assert out.read_text().split("\n")[0] == "one two ."
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def test_bad_input_one_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\n")
    for args, needle in (((bad, "-words", "3"), "line 2"), ((tmp_path / "nope.txt", "-words", "3"), "nope.txt"),
                         ((bad, "-words", "0"), "-words")):
        proc = run("-src", args[0], "-output", tmp_path / "o.txt", *args[1:])
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert needle in lines[-1], proc.stderr
    assert not (tmp_path / "o.txt").exists()


def test_output_is_never_the_source(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("one two . three .\n", encoding="utf-8")
    os.symlink(src, tmp_path / "link.txt")
    for out in (src, tmp_path / "link.txt", tmp_path / "." / "src.txt"):
        proc = run("-src", src, "-output", out, "-sentences", "1")
        assert proc.returncode != 0 and "would destroy the input" in proc.stderr and "Traceback" not in proc.stderr
    assert src.read_text() == "one two . three .\n"
