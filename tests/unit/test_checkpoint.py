"""onmt/utils/checkpoint.py: which recorded checkpoints a resumed run may prune, and the best checkpoint made
again from the resumed early-stopping state (after a kill, a deletion, a truncation)."""
import os
import re

import pytest
import torch

from onmt.utils.checkpoint import (
    checkpoint_step,
    file_identity,
    owned_checkpoints,
    prune_checkpoints,
    restore_best,
)


def _ckpt(path, step):
    torch.save({"step": step, "model": {"w": torch.full((2,), float(step))}}, path)
    return str(path)


def test_only_this_prefix_and_unchanged_files_are_owned(tmp_path):
    prefix = str(tmp_path / "m")
    a, b, c = (_ckpt(tmp_path / f"m_step_{s}.pt", s) for s in (1, 2, 3))
    other = _ckpt(tmp_path / "x_step_1.pt", 1)
    ckpt = {"saved_checkpoints": ["m_step_1.pt", a, b, c, other],
            "saved_identities": {p: list(file_identity(p)) for p in (a, b, other)}}
    os.replace(_ckpt(tmp_path / "new.pt", 22), b)   # replaced since (as an atomic save does): another file
    saved, ids = owned_checkpoints(ckpt, prefix, path=c)
    assert saved == [a, c] and set(ids) == {a, c}     # relative, replaced and foreign entries left out
    assert prune_checkpoints(list(saved), 1, ids) == [c] and not os.path.exists(a)
    assert prune_checkpoints([b, c], 1, {}) == [c] and os.path.exists(b)     # never recorded: not deleted


def test_the_best_is_made_the_best_steps_checkpoint_again(tmp_path):
    prefix = str(tmp_path / "m")
    best = tmp_path / "m_best.pt"
    step4 = _ckpt(tmp_path / "m_step_4.pt", 4)
    _ckpt(best, 6)                               # a killed run's later best, forgotten by the state resumed
    restore_best(prefix, 4)
    assert checkpoint_step(best) == 4 and os.path.samefile(best, step4)
    best.unlink()                                # deleted
    restore_best(prefix, 4)
    assert checkpoint_step(best) == 4
    best.unlink()
    best.write_bytes(b"truncated")               # damaged
    restore_best(prefix, 4)
    assert checkpoint_step(best) == 4


def test_a_best_without_its_step_file_is_kept_if_right_and_said_if_not(tmp_path, caplog):
    prefix = str(tmp_path / "m")
    best = tmp_path / "m_best.pt"
    _ckpt(best, 5)
    restore_best(prefix, 5)                      # saved under the best's name only: right, kept
    assert checkpoint_step(best) == 5
    with caplog.at_level("WARNING", logger="onmt"):
        restore_best(prefix, 3)
    assert checkpoint_step(best) == 5 and "does not hold the best step 3" in caplog.text
    restore_best(prefix, None)                   # nothing recorded: nothing to do
    assert checkpoint_step(tmp_path / "missing.pt") is None


@pytest.mark.parametrize("field, value, message", [
    ("step", "20", "its step is '20', not a non-negative integer"),
    ("step", -3, "its step is -3"),
    ("data_pos", [1], "its data_pos is [1], not two non-negative integers"),
    ("data_pos", ["a", 2], "its data_pos is ['a', 2]"),
    ("train_seconds", "12", "its train_seconds is '12', not a non-negative number"),
    ("train_seconds", float("nan"), "its train_seconds is nan"),
])
def test_counters_of_the_wrong_type_are_one_line(tmp_path, field, value, message):
    from helpers.checkpoints import save_tiny_checkpoint
    from onmt.errors import UserError
    from onmt.utils.checkpoint import load_checkpoint
    path = save_tiny_checkpoint(tmp_path / "m.pt", "rnn")
    assert load_checkpoint(path)["step"] == 0
    ckpt = torch.load(path, weights_only=True)
    ckpt[field] = value
    torch.save(ckpt, path)
    with pytest.raises(UserError, match=re.escape(message)):
        load_checkpoint(path)


def test_weights_digest_is_equal_for_equal_weights_only():
    from onmt.utils.checkpoint import weights_digest
    state = {"b": torch.arange(3), "a.weight": torch.randn(2, 3)}
    same = {k: v.clone() for k, v in reversed(list(state.items()))}        # other order, other storage
    assert weights_digest(same) == weights_digest(state)
    changed = dict(state, **{"a.weight": state["a.weight"].clone()})
    changed["a.weight"][1, 2] = torch.nextafter(changed["a.weight"][1, 2], torch.tensor(9.0))  # one bit
    assert weights_digest(changed) != weights_digest(state)
    assert weights_digest(dict(state, b=torch.arange(3).reshape(3, 1))) != weights_digest(state)    # shape
