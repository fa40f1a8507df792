"""Hostile checkpoints: damaged, unreadable, of impossible options, lacking an option, a damaged resume
state, a FIFO or no checkpoint at all; each one line naming the checkpoint (docs/hostile-inputs.md)."""
import os

import pytest

from helpers.hostile import make_tiny, one_line_error, train_from_error, translate_error
from onmt.bin import train as train_bin
from onmt.utils.cli import run_main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    return make_tiny(tmp_path_factory.mktemp("tiny"))


def _damaged(tiny, tmp_path, kind):
    """A copy of the tiny checkpoint damaged as `kind` says; -> (path, expected words of the message)."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    if kind == "rnn_size_edited":
        ck["opt"]["rnn_size"] = 12
        expect = "does not fit"
    elif kind == "weight_missing":
        name = sorted(ck["model"])[0]
        del ck["model"][name]
        expect = f"missing {name}"
    elif kind == "weight_extra":
        ck["model"]["decoder.extra.weight"] = torch.zeros(2)
        expect = "unexpected decoder.extra.weight"
    elif kind == "weight_resized":
        name = sorted(ck["model"])[-1]
        ck["model"][name] = torch.zeros(3, 3)
        expect = f"{name} is 3x3 in the checkpoint"
    elif kind == "option_deleted":
        del ck["opt"]["rnn_size"]
        expect = "its options lack rnn_size"
    elif kind in ("nan", "inf"):
        name = sorted(ck["model"])[1]
        ck["model"][name].view(-1)[0] = float(kind)
        expect = f"has non-finite weights in {name}"
    elif kind == "model_not_a_dict":
        ck["model"] = [1, 2]
        expect = "is damaged: its model is a list"
    path = tmp_path / f"{kind}.pt"
    torch.save(ck, path)
    return path, expect


DAMAGE = ["rnn_size_edited", "weight_missing", "weight_extra", "weight_resized", "option_deleted", "nan", "inf",
          "model_not_a_dict"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_checkpoint_at_translate(capsys, tiny, tmp_path, kind):
    """Options and weights that disagree gave a size-mismatch or AttributeError traceback; NaN weights
    translated every line to an empty line."""
    path, expect = _damaged(tiny, tmp_path, kind)
    err = translate_error(capsys, tiny, path, tmp_path / "p.txt")
    assert str(path) in err and expect in err
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("option, value, expect", [
    ("dropout", 1.5, "-dropout must be in [0, 1), got 1.5"),
    ("rnn_size", 0, "-rnn_size must be positive, got 0"),
    ("layers", 0, "-layers must be positive"),
    ("brnn", True, None),                   # a valid change: the weights then do not fit
    ("global_attention", "none", "-copy_attn needs attention"),
])
def test_checkpoint_with_impossible_options_is_refused_at_translate(capsys, tiny, tmp_path, option, value, expect):
    """translate.py validates a checkpoint's options as train.py did, before building its model."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    if option == "global_attention":   # a copy model (its -copy_attn alone would contradict its -model_family)
        ck["opt"].update(copy_attn=True, model_family="copy")
    ck["opt"][option] = value
    path = tmp_path / "bad.pt"
    torch.save(ck, path)
    err = translate_error(capsys, tiny, path, tmp_path / "p.txt")
    assert str(path) in err and (expect or "does not fit") in err
    assert ("its options are invalid" in err) == (expect is not None)
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_checkpoint_at_train_from(capsys, tiny, tmp_path, kind):
    path, expect = _damaged(tiny, tmp_path, kind)
    err = train_from_error(capsys, tiny, path, tmp_path)
    assert str(path) in err and expect in err
    assert not list(tmp_path.glob("r_step_*"))


@pytest.mark.parametrize("kind", ["truncated", "garbage", "empty", "folder"])
@pytest.mark.parametrize("program", ["translate", "train"])
def test_unreadable_checkpoint(capsys, tiny, tmp_path, kind, program):
    bad = tmp_path / f"{kind}.pt"
    if kind == "truncated":
        whole = open(tiny["ckpt"], "rb").read()
        bad.write_bytes(whole[: len(whole) // 3])
    elif kind == "garbage":
        bad.write_bytes(bytes(range(256)) * 8)
    elif kind == "empty":
        bad.write_bytes(b"")
    else:
        bad.mkdir()
    if program == "translate":
        err = translate_error(capsys, tiny, bad, tmp_path / "p.txt")
    else:
        err = train_from_error(capsys, tiny, bad, tmp_path)
    assert str(bad) in err
    assert not (tmp_path / "p.txt").exists() and not list(tmp_path.glob("r_step_*"))


def test_option_a_checkpoint_lacks_may_be_given_on_the_command_line(capsys, tiny, tmp_path):
    """A model option a (hand-made or older) checkpoint lacks is refused unless given: a default could
    silently change the model."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    del ck["opt"]["dropout"]
    torch.save(ck, tmp_path / "old.pt")
    run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"), "-dropout", "0.1",
                              "-train_from", str(tmp_path / "old.pt"), "-train_steps", "3"])
    assert torch.load(tmp_path / "r_step_3.pt", weights_only=True)["opt"]["dropout"] == 0.1


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint trained 1 step on toy data."""
    from helpers.e2e import random_pair_data, torch_threads
    folder = tmp_path_factory.mktemp("ckpt")
    prefix = random_pair_data(str(folder), seed=3, n_examples=16, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), "-rnn_size", "8",
                                  "-word_vec_size", "8", "-layers", "1", "-batch_size", "8", "-train_steps", "1"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_1.pt")}


RESUME_DAMAGE = [("rng", "x", "its rng is 'x', not an RNG state"),
                 ("rng", {"torch": 1, "python": 2}, "not an RNG state"),
                 ("rng_ranks", [1], "not a list of RNG states"),
                 ("world_size", 0, "its world_size is 0, not a positive integer"),
                 ("saved_checkpoints", 5, "its saved_checkpoints is 5, not a list of paths"),
                 ("early_stopping", "x", "not an early-stopping state"),
                 ("early_stopping", {"criteria": ["ppl"], "best": {"ppl": "low"}}, "not an early-stopping state")]


@pytest.mark.parametrize("key,value,message", RESUME_DAMAGE, ids=[f"{k}={v!r}" for k, v, _ in RESUME_DAMAGE])
def test_checkpoint_with_a_damaged_resume_state_is_one_line(capsys, tmp_path, checkpoint, key, value, message):
    """-train_from a checkpoint whose RNG state was not one: a TypeError traceback after building the model;
    a damaged early-stopping state or list of checkpoints was trained on (exit 0) or failed at the end."""
    import torch
    ckpt = torch.load(checkpoint["ckpt"], weights_only=True)
    ckpt[key] = value
    torch.save(ckpt, tmp_path / "c.pt")
    err = one_line_error(capsys, train_bin.main, ["-data", checkpoint["prefix"], "-save_model", str(tmp_path / "m"),
                                                  "-train_from", str(tmp_path / "c.pt"), "-train_steps", "3"])
    assert f"checkpoint {tmp_path / 'c.pt'} is damaged: " in err and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt"]


def test_checkpoint_that_is_a_fifo_or_no_checkpoint(tmp_path):
    from onmt.errors import UserError
    from onmt.utils.checkpoint import load_checkpoint
    os.mkfifo(tmp_path / "f.pt")
    with pytest.raises(UserError, match="is not a regular file"):      # was "does not exist"
        load_checkpoint(str(tmp_path / "f.pt"))
    (tmp_path / "meta.json").write_text('{"a": 1}')
    with pytest.raises(UserError) as e:     # torch's advice to load it unsafely is not repeated
        load_checkpoint(str(tmp_path / "meta.json"))
    assert "weights_only" not in str(e.value) and "not a checkpoint or a damaged one" in str(e.value)
