"""The corpus readers' text plumbing (onmt/prepare/text.py): line-aligned pairs, sentence tags, and the
Cleaner that makes one output line. ROUGE's text handling (onmt/evaluation/text.py) is tested in
test_rouge_scorer.py and test_rouge_official.py (tests/unit/test_layout.py's table)."""
import gzip

import pytest

from onmt.errors import UserError
from onmt.prepare.text import Cleaner, between_tags, files_in, open_binary, read_pairs, remove_eos


def test_remove_eos_makes_periods_and_single_spaces():
    assert remove_eos("a b </s>  c\td </s>") == "a b . c d ."


def test_pairs_are_line_aligned_and_unequal_lengths_name_the_files(tmp_path):
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt.gz"
    src.write_bytes(b"a\r\nb\n")
    with gzip.open(tgt, "wb") as f:
        f.write(b"A\nB\n")
    assert list(read_pairs(str(src), str(tgt))) == [("a", "A"), ("b", "B")]
    with open_binary(str(tgt)) as f:
        assert f.read() == b"A\nB\n"
    src.write_text("a\nb\nc\n")
    with pytest.raises(UserError, match=r"s.txt has more lines than .*t.txt.gz \(.*ends after line 2\)"):
        list(read_pairs(str(src), str(tgt)))
    src.write_text("a\n")
    with pytest.raises(UserError, match=r"t.txt.gz has more lines than .*s.txt \(.*ends after line 1\)"):
        list(read_pairs(str(src), str(tgt)))


def test_between_tags():
    assert between_tags("<t> a b . </t> <t> c . </t>", "<t>", "</t>") == ["a b .", "c ."]
    assert between_tags("no tags here", "<t>", "</t>") == ["no tags here"]
    assert between_tags("x <t> a </t> y <t> </t> <t> b", "<t>", "</t>") == ["x", "a", "y", "b"]


def test_cleaner_tokens_case_tags_and_end_periods():
    assert Cleaner(tokenize=False, lower=True).line("<s> The  Cat's </s>") == "the cat's"
    assert Cleaner(tokenize=True, lower=False).line("The cat's mat.") == "The cat 's mat ."
    clean = Cleaner(tokenize=False, lower=True)
    sents = ["A b", "c .", "d -rrb-", 'e"', ""]
    assert clean.sentences(sents) == "a b c . d -rrb- e\""
    assert clean.sentences(sents, end_period=True) == "a b . c . d -rrb- e\""


def test_files_in_lists_plain_files_only(tmp_path):
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "sub").mkdir()
    assert files_in(str(tmp_path)) == ["a.txt", "b.txt"]
    assert files_in(str(tmp_path / "none")) == [] == files_in(str(tmp_path / "a.txt"))
