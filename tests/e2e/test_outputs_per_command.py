"""The one output rule (issue 53, docs/hostile-inputs.md "What each command writes"): each command,
given an output path that is a checkpoint, a dataset's file, a corpus or another kind of file,
refuses in one line and leaves the file as it was; -overwrite replaces it; its own kind of output
(a vocabulary over a vocabulary, JSON over JSON, predictions over a text file) is replaced."""
import json
import os

import pytest
import torch

from helpers.e2e import _load_tool
from onmt.errors import UserError

VOCAB_CONFIG = """data:
    corpus_1:
        path_src: {d}/train.src
        path_tgt: {d}/train.tgt
save_data: {d}/run/example
src_vocab: {victim}
share_vocab: true
"""


@pytest.fixture
def files(tmp_path):
    """A checkpoint, a dataset's files, a corpus, a prediction file, a JSON file, a vocabulary."""
    torch.save({"model": {"w": torch.zeros(2)}, "opt": {}}, tmp_path / "model_step_5.pt")
    torch.save({"x": 1}, tmp_path / "weights.bin")                 # a checkpoint by its content
    (tmp_path / "data.vocab.txt").write_text("<unk>\n<blank>\nw1\n")
    (tmp_path / "data.meta.json").write_text(json.dumps({"run_id": "0" * 32}) + "\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        for side in ("src", "tgt"):
            (corpus / f"{split}.{side}.txt").write_text("a real article .\n")
    (tmp_path / "train.src").write_text("w1 w2 w3\nw2 w3\n")
    (tmp_path / "train.tgt").write_text("w1\nw2\n")
    (tmp_path / "pred.txt").write_text("the cat sat .\nthe dog sat on the mat .\n")
    (tmp_path / "other_pred.txt").write_text("a b c d\n")
    (tmp_path / "scores.json").write_text('{"rouge1": 1}\n')
    (tmp_path / "words.vocab").write_text("w1\t5\nw2\t3\n")
    (tmp_path / "page.html").write_text("<!DOCTYPE html><html></html>\n")
    (tmp_path / "cfg.yaml").write_text("rnn_size: 8\n")
    (tmp_path / "ref.txt").write_text("the cat sat .\nthe dog sat .\n")
    return tmp_path


def build_vocab(d, victim, *more):
    from onmt.bin import build_vocab as bin_
    (d / "v.yaml").write_text(VOCAB_CONFIG.format(d=d, victim=d / victim))
    bin_.main(["-config", str(d / "v.yaml"), *more])


def toy_data(d, victim, *more):
    """make_toy_data.py catches the UserError: one line, exit 1."""
    with pytest.raises(SystemExit) as e:
        _load_tool("make_toy_data").main(["-task", "copy", "-dir", str(d / victim), "-train_size", "5",
                                          "-valid_size", "2", "-test_size", "2", *more])
        raise SystemExit(0)
    if e.value.code:
        raise UserError("make_toy_data.py refused")


def evaluate(d, victim, *more):
    from onmt.bin import evaluate as bin_
    bin_.main(["-pred", str(d / "pred.txt"), "-ref", str(d / "ref.txt"), "-json", str(d / victim), *more])


def translate(d, victim, *more, option="-output"):
    from onmt.bin import translate as bin_
    bin_.main(["-model", str(d / "absent.pt"), "-src", str(d / "train.src"), option, str(d / victim), *more])


def translate_log(d, victim, *more):
    translate(d, victim, *more, option="-log_file")


def explore(d, victim, *more):
    from onmt.bin import explore as bin_
    bin_.main(["-src", str(d / "train.src"), "-ref", str(d / "train.tgt"), "-system", str(d / "train.tgt"),
               "-output", str(d / victim), *more])


def translate_dump(d, victim, *more):
    translate(d, victim, *more, option="-attn_debug")


def translate_beam(d, victim, *more):
    translate(d, victim, *more, option="-dump_beam")


def train_save_config(d, victim, *more):
    from onmt.bin import train as bin_
    bin_.main(["-data", str(d / "data"), "-save_model", str(d / "run" / "m"), "-save_config", str(d / victim), *more])


def preprocess_log(d, victim, *more):
    from onmt.bin import preprocess as bin_
    bin_.main(["-train_src", str(d / "train.src"), "-train_tgt", str(d / "train.tgt"), "-save_data",
               str(d / "prep" / "p"), "-log_file", str(d / victim), *more])


def preprocess_save_config(d, victim, *more):
    from onmt.bin import preprocess as bin_
    bin_.main(["-train_src", str(d / "train.src"), "-train_tgt", str(d / "train.tgt"), "-save_data",
               str(d / "prep" / "p"), "-save_config", str(d / victim), *more])


def tune_decoding(d, victim, *more, option="-output"):
    from onmt.bin import tune_decoding as bin_
    others = {"-output": d / "t.yaml", "-report": d / "t.json", "-match_output": d / "m.yaml"}
    others[option] = d / victim
    bin_.main(["-model", str(d / "absent.pt"), "-src", str(d / "train.src"), "-tgt", str(d / "train.tgt"),
               *[x for k, v in others.items() for x in (k, str(v))], *more])


def tune_report(d, victim, *more):
    tune_decoding(d, victim, *more, option="-report")


def tune_matched(d, victim, *more):
    tune_decoding(d, victim, *more, option="-match_output")


def lead_baseline(d, victim, *more):
    with pytest.raises(SystemExit) as e:
        _load_tool("lead_baseline").main(["-src", str(d / "train.src"), "-output", str(d / victim),
                                          "-words", "2", *more])
        raise SystemExit(0)
    if e.value.code:
        raise UserError(str(e.value.code))


# (command, the output it is given, what that file is): each refused, the file kept
REFUSED = [
    (build_vocab, "model_step_5.pt", "a checkpoint"),
    (build_vocab, "weights.bin", "a checkpoint"),
    (build_vocab, "data.vocab.txt", "a file of the dataset"),
    (build_vocab, "data.meta.json", "a file of the dataset"),
    (build_vocab, "pred.txt", "not a vocabulary"),
    (toy_data, "corpus", "not toy data"),
    (evaluate, "model_step_5.pt", "a checkpoint"),
    (evaluate, "other_pred.txt", "not a JSON file"),
    (evaluate, "data.meta.json", "a file of the dataset"),
    (translate, "model_step_5.pt", "a checkpoint"),
    (translate, "data.vocab.txt", "a file of the dataset"),
    (translate, "corpus/test.tgt.txt", "a corpus file"),
    (translate_log, "model_step_5.pt", "a checkpoint"),
    (explore, "model_step_5.pt", "a checkpoint"),
    (translate_dump, "model_step_5.pt", "a checkpoint"),
    (translate_dump, "other_pred.txt", "not an -attn_debug dump"),
    (translate_beam, "data.meta.json", "a file of the dataset"),
    (train_save_config, "model_step_5.pt", "a checkpoint"),
    (train_save_config, "other_pred.txt", "not a YAML mapping"),
    (preprocess_log, "model_step_5.pt", "a checkpoint"),
    (preprocess_save_config, "data.vocab.txt", "a file of the dataset"),
    (lead_baseline, "model_step_5.pt", "a checkpoint"),
    (lead_baseline, "corpus/train.tgt.txt", "a corpus file"),
    (explore, "other_pred.txt", "not an HTML page"),
    (tune_decoding, "model_step_5.pt", "a checkpoint"),
    (tune_decoding, "other_pred.txt", "not a YAML mapping"),
    (tune_report, "data.meta.json", "a file of the dataset"),
    (tune_matched, "corpus/train.tgt.txt", "a corpus file"),
]


def _snapshot(path):
    if os.path.isdir(path):
        return {n: (path / n).read_bytes() for n in sorted(os.listdir(path))}
    return path.read_bytes()


@pytest.mark.parametrize("command,victim,kind", REFUSED, ids=[f"{c.__name__}-{v}" for c, v, _ in REFUSED])
def test_an_output_that_is_not_the_commands_own_is_refused(files, command, victim, kind):
    before = _snapshot(files / victim)
    with pytest.raises(UserError, match=kind if command is not toy_data else "refused") as e:
        command(files, victim)
    assert "\n" not in str(e.value) and ("-overwrite" in str(e.value) or command is toy_data)
    assert _snapshot(files / victim) == before


def test_make_toy_data_names_the_rule_in_one_line(files, capsys):
    with pytest.raises(UserError):
        toy_data(files, "corpus")
    err = capsys.readouterr().err.strip()
    assert err.startswith("make_toy_data.py: error: -dir") and "-overwrite" in err and "\n" not in err


@pytest.mark.parametrize("command,victim", [(build_vocab, "data.vocab.txt"), (evaluate, "model_step_5.pt"),
                                            (toy_data, "corpus")])
def test_overwrite_replaces_it(files, command, victim):
    before = _snapshot(files / victim)
    command(files, victim, "-overwrite")
    assert _snapshot(files / victim) != before


@pytest.mark.parametrize("command,victim", [(build_vocab, "words.vocab"), (evaluate, "scores.json"),
                                            (toy_data, "toy"), (train_save_config, "cfg.yaml"),
                                            (preprocess_save_config, "cfg.yaml")])
def test_its_own_kind_of_output_is_replaced(files, command, victim):
    if command is toy_data:
        toy_data(files, victim)             # made by the tool: run again, replaced
    before = _snapshot(files / victim)
    command(files, victim)
    assert command is toy_data or _snapshot(files / victim) != before
