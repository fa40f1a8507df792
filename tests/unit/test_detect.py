"""Recognizing a corpus folder (onmt/prepare/detect.py): the files of a form, its missing pieces and
partners, and the one-line errors when a folder holds no form, several, or part of one."""
import gzip

import pytest

from onmt.errors import UserError
from onmt.prepare.detect import Found, choose, find_file, find_pair, numbered_pieces, seed_pairs


def touch(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_find_file_takes_folders_in_order_then_names_and_gz(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    touch(b / "x.txt")
    touch(b / "y.txt.gz")
    assert find_file([a, b], ["y.txt", "x.txt"]) == str(b / "y.txt.gz")   # a name before the next name
    touch(a / "x.txt")
    assert find_file([a, b], ["x.txt"]) == str(a / "x.txt")             # the first folder first
    assert find_file([a, b], ["z.txt"]) is None


def test_a_file_without_its_partner_is_a_problem(tmp_path):
    touch(tmp_path / "train.src")
    found = Found()
    assert find_pair(found, str(tmp_path), [str(tmp_path)], ["train.src"], ["train.tgt"]) is None
    assert found.problems == ["train.src has no partner train.tgt"] and found.present
    touch(tmp_path / "train.tgt")
    assert find_pair(Found(), str(tmp_path), [str(tmp_path)], ["train.src"], ["train.tgt"]) == (
        str(tmp_path / "train.src"), str(tmp_path / "train.tgt"))
    assert not Found().present


def test_numbered_pieces_in_numeric_order_and_a_gap_is_a_problem(tmp_path):
    for k in (0, 1, 2, 10):
        touch(tmp_path / f"part_{k:d}.bin")
    found = Found()
    pieces = numbered_pieces(str(tmp_path), r"part_(\d+)\.bin", "train", found, str(tmp_path))
    assert [p.rsplit("_", 1)[1] for p in pieces] == ["0.bin", "1.bin", "2.bin", "10.bin"]
    assert found.problems == ["piece 3 of train is missing in ."]
    assert numbered_pieces(str(tmp_path / "none"), r"(\d+)", "x", Found(), str(tmp_path)) == []


def test_choose_the_one_form_present_or_asked_for(tmp_path):
    accepted = "accepted: seed or bin"
    seed, binary, broken = Found(), Found(), Found()
    seed.splits["train"] = (["train.src.txt", "train.tgt.txt"], list)
    seed.seen, binary.seen = ["train.src.txt"], ["chunked/train_000.bin"]
    binary.splits["train"] = (["train_000.bin"], list)
    broken.problems.append("val.bin has no partner")
    folder = str(tmp_path)
    assert choose(folder, {"seed": seed, "bin": Found()}, "auto", "CNN/DM", accepted) == ("seed", seed)
    assert choose(folder, {"seed": seed, "bin": binary}, "bin", "CNN/DM", accepted) == ("bin", binary)
    with pytest.raises(UserError, match=r"several forms \(seed: train.src.txt; bin: chunked/train_000.bin\)"):
        choose(folder, {"seed": seed, "bin": binary}, "auto", "CNN/DM", accepted)
    with pytest.raises(UserError, match="no CNN/DM data in the 'bin' form in .*; accepted: seed or bin"):
        choose(folder, {"seed": seed, "bin": Found()}, "bin", "CNN/DM", accepted)
    with pytest.raises(UserError, match="incomplete 'bin' corpus: val.bin has no partner"):
        choose(folder, {"seed": Found(), "bin": broken}, "auto", "CNN/DM", accepted)
    with pytest.raises(UserError, match="no CNN/DM folder at"):
        choose(str(tmp_path / "none"), {"seed": seed}, "auto", "CNN/DM", accepted)


def test_seed_layout_pairs_each_split_and_notes_other_files(tmp_path):
    touch(tmp_path / "train.src.txt", "a b\nc\n")
    touch(tmp_path / "train.tgt.txt", "A\nC\n")
    with gzip.open(tmp_path / "test.src.txt.gz", "wt") as f:
        f.write("t\n")
    touch(tmp_path / "test.tgt.txt", "T\n")
    touch(tmp_path / "extra.src.txt", "e\n")
    found = seed_pairs(str(tmp_path), lambda s, t: (s.upper(), t.lower()))
    assert sorted(found.splits) == ["test", "train"] and not found.problems
    names, examples = found.splits["train"]
    assert names == ["train.src.txt", "train.tgt.txt"] and list(examples()) == [("A B", "a"), ("C", "c")]
    assert list(found.splits["test"][1]()) == [("T", "t")]
    assert found.notes == ["ignored (not a split): extra.src.txt"]
