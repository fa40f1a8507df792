"""No silent steps: preprocessing that keeps less than half of a split warns and names the option;
-data given a folder says what to pass; run.sh says which checkpoint and which split it uses."""
import os
import subprocess
import sys

import pytest

from helpers.paths import ROOT
from onmt.bin import preprocess as preprocess_bin
from onmt.errors import UserError
from onmt.inputters.vocab_builder import load_vocabs


def test_dropping_most_of_a_split_warns_naming_the_option(tmp_path):
    long_line = " ".join(f"w{i}" for i in range(80))
    (tmp_path / "s.txt").write_text("\n".join([long_line] * 8 + ["a b", "b c"]) + "\n")
    (tmp_path / "t.txt").write_text("\n".join(["a"] * 10) + "\n")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "preprocess.py"), "-train_src", str(tmp_path / "s.txt"),
                        "-train_tgt", str(tmp_path / "t.txt"), "-save_data", str(tmp_path / "p" / "d")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0
    log = r.stdout + r.stderr
    assert "WARNING" in log and "only 2 of 10 examples kept (20%)" in log and "-src_seq_length" in log
    preprocess_bin.main(["-train_src", str(tmp_path / "s.txt"), "-train_tgt", str(tmp_path / "t.txt"),
                         "-save_data", str(tmp_path / "q" / "d"), "-src_seq_length", "100"])


def test_data_given_a_folder_says_what_to_pass(tmp_path):
    (tmp_path / "s.txt").write_text("a b\n")
    preprocess_bin.main(["-train_src", str(tmp_path / "s.txt"), "-train_tgt", str(tmp_path / "s.txt"),
                         "-save_data", str(tmp_path / "prep" / "giga")])
    folder = tmp_path / "prep"
    with pytest.raises(UserError, match=f"-data {folder} is a folder.*give -data {folder / 'giga'}"):
        load_vocabs(str(tmp_path / "prep"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no preprocessed data there"):
        load_vocabs(str(tmp_path / "empty"))
