"""The one output rule (onmt/utils/output_rule.py, issue 53): what an existing file is, and which kind of
output may replace it; the rule per command is tests/e2e/test_outputs_per_command.py's table."""
import os

import pytest
import torch

from onmt.errors import UserError
from onmt.utils.files import check_output
from onmt.utils.output_rule import check_replaceable, protected


def test_the_output_rule_knows_a_checkpoint_by_its_content_and_through_a_link(tmp_path):
    torch.save({"model": {}}, tmp_path / "weights.dat")
    os.symlink(tmp_path / "weights.dat", tmp_path / "pred.txt")
    for name in ("weights.dat", "pred.txt"):
        with pytest.raises(UserError, match="is a checkpoint, not a text file: .* -overwrite to replace it"):
            check_replaceable(str(tmp_path / name), f"-output {name}", "text")
    check_output(str(tmp_path / "pred.txt"), "-output pred.txt", "text", overwrite=True)   # -overwrite: allowed


def test_the_output_rule_lets_its_own_kind_and_new_paths_and_streams_through(tmp_path):
    (tmp_path / "v.txt").write_text("the\t10\ncat\t3\n")
    (tmp_path / "s.json").write_text('{"a": [1, 2]}')
    check_replaceable(str(tmp_path / "v.txt"), "src_vocab", "vocabulary")
    check_replaceable(str(tmp_path / "s.json"), "-json", "json")
    check_replaceable(str(tmp_path / "new.json"), "-json", "json")
    check_output("/dev/null", "-json /dev/null", "json")
    with pytest.raises(UserError, match="is not a vocabulary"):
        check_replaceable(str(tmp_path / "s.json"), "src_vocab", "vocabulary")



def test_what_the_rule_protects(tmp_path):
    (tmp_path / "d.meta.json").write_text("{}")
    (tmp_path / "d.src.vocab.txt").write_text("w\n")
    (tmp_path / "my.d.vocab.txt").write_text("w\n")       # no my.d.meta.json beside it, nor my.meta.json
    (tmp_path / "train.src.txt").write_text("an article\n")
    assert protected(str(tmp_path / "d.src.vocab.txt")).startswith("a file of the dataset")
    assert protected(str(tmp_path / "d.meta.json")).startswith("a file of the dataset")
    assert protected(str(tmp_path / "my.d.vocab.txt")) is None
    assert protected(str(tmp_path / "train.src.txt")) == "a corpus file"
