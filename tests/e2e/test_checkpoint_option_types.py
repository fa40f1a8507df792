"""A checkpoint whose model options have values of the wrong kind is refused in one line naming the
checkpoint and the option, by translate.py, train.py -train_from and Summarizer.load."""
import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint
from onmt import Summarizer
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.errors import UserError
from onmt.utils.cli import run_main

BAD = [("rnn_type", "TRANSFORMER", "one of LSTM, GRU"), ("global_attention", "bogus", "one of none, dot"),
       ("rnn_size", "sixteen", "an int"), ("brnn", "yes", "a bool"), ("dropout", [0.1], "a number"),
       ("rnn_size", True, "an int")]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    d = tmp_path_factory.mktemp("types")
    return save_tiny_checkpoint(d / "copy.pt", "copy", seed=1)


def _damaged(good, tmp_path, name, value):
    ck = torch.load(good, weights_only=True)
    ck["opt"][name] = value
    path = tmp_path / "bad.pt"
    torch.save(ck, path)
    return str(path)


@pytest.mark.parametrize("name, value, kind", BAD)
def test_translate_and_the_api_refuse_in_one_line(capsys, good, tmp_path, name, value, kind):
    bad = _damaged(good, tmp_path, name, value)
    (tmp_path / "src.txt").write_text("w1 w2\n")
    with pytest.raises(SystemExit) as exc:
        run_main(translate_bin.main, ["-model", bad, "-src", str(tmp_path / "src.txt"),
                                      "-output", str(tmp_path / "p.txt")])
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"checkpoint {bad}" in err and f"-{name} {value!r} is not {kind}" in err
    with pytest.raises(UserError, match=f"-{name} "):
        Summarizer.load(bad)


def test_train_from_refuses_in_one_line(good, tmp_path):
    from helpers.e2e import random_pair_data
    (tmp_path / "d").mkdir()
    prefix = random_pair_data(str(tmp_path / "d"), seed=1, n_examples=16, max_len=5, target=lambda w: w[:2])
    bad = _damaged(good, tmp_path, "rnn_type", "TRANSFORMER")
    with pytest.raises(UserError, match=f"checkpoint {bad} is damaged .* -rnn_type 'TRANSFORMER' is not one of"):
        train_bin.main(["-data", prefix, "-save_model", str(tmp_path / "m"), "-train_from", bad, "-train_steps", "2"])
