import os
import subprocess
import sys
from collections import Counter

import pytest

from helpers.paths import ROOT


def tool(name, *args, stdin=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), *args], input=stdin,
                          capture_output=True)


def test_remove_eos_keeps_lines():
    text = "a  b </s> c\n\n</s>\nx</s>y \t \nno newline at end"
    r = tool("remove_eos.py", stdin=text.encode())
    assert r.returncode == 0
    assert r.stdout.decode().split("\n") == ["a b . c", "", ".", "x . y", "no newline at end", ""]


def test_remove_eos_bad_utf8_one_line():
    r = tool("remove_eos.py", stdin=b"ok\n\xff\n")
    assert r.returncode != 0 and b"line 2" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def read(d, split, side):
    with open(os.path.join(d, f"{split}.{side}.txt"), encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.mark.parametrize("task", ["copy", "reverse", "sort", "copy_oov", "summ"])
def test_make_toy_data_deterministic(tmp_path, task):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for d in (a, b):
        assert tool("make_toy_data.py", "-task", task, "-dir", d, "-seed", "7", "-train_size", "300").returncode == 0
    for split in ("train", "valid", "test"):
        assert read(a, split, "src") == read(b, split, "src") and read(a, split, "tgt") == read(b, split, "tgt")
    src, tgt = read(a, "train", "src"), read(a, "train", "tgt")
    assert len(src) == len(tgt) == 300 and all("  " not in s for s in src)
    pairs = [(s.split(), t.split()) for s, t in zip(src, tgt)]
    if task == "copy":
        assert all(s == t for s, t in pairs)
    elif task == "reverse":
        assert all(s[::-1] == t for s, t in pairs)
    elif task == "sort":
        assert all(sorted(s, key=lambda w: int(w[1:])) == t for s, t in pairs)
    elif task == "copy_oov":
        counts = Counter(w for s, _ in pairs for w in s)
        rare = [w for w in counts if not w.startswith("w")]
        assert len(rare) > 1000 and sum(counts[w] for w in rare) > 0.6 * sum(counts.values())
    else:
        assert all(set(t) <= set(s) for s, t in pairs)       # every target word is in its source


def test_make_toy_data_bad_args(tmp_path):
    r = tool("make_toy_data.py", "-task", "copy", "-dir", str(tmp_path), "-min_len", "5", "-max_len", "2")
    assert r.returncode != 0 and b"Traceback" not in r.stderr


def test_remove_eos_reads_its_file_argument(tmp_path):
    import gzip
    f = tmp_path / "p.txt"
    f.write_bytes("\ufeffa </s> b\nc\n".encode())
    with gzip.open(tmp_path / "p.txt.gz", "wb") as g:
        g.write(b"x </s> y\n")
    r = tool("remove_eos.py", str(f), stdin=b"not this\n")
    assert r.returncode == 0 and r.stdout.decode() == "a . b\nc\n"
    assert tool("remove_eos.py", str(tmp_path / "p.txt.gz")).stdout == b"x . y\n"
    assert tool("remove_eos.py", "-", stdin=b"s </s>\n").stdout == b"s .\n"
    for args, words in (([str(tmp_path / "missing.txt")], b"cannot read"), ([str(f), str(f)], b"unexpected argument"),
                        (["-x"], b"unexpected argument -x"), ([str(tmp_path)], b"is a folder")):
        r = tool("remove_eos.py", *args)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
