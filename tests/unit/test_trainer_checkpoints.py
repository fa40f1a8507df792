"""onmt/trainer_checkpoints.py: what a run writes (atomically, with the meta and the training state),
prunes with -keep_checkpoint, and takes back on a resume of the same run."""
import os

import torch

from onmt.trainer_checkpoints import CheckpointKeeper
from onmt.utils.distributed import World

STATE = {"model": {"w": torch.ones(2)}, "optim": {"state": {}}, "train_seconds": 3.5,
         "early_stopping": {"best": None}}


def _load(path):
    return torch.load(path, weights_only=False)


def test_saves_prunes_and_records_what_it_wrote(tmp_path):
    prefix = str(tmp_path / "run" / "m")
    keeper = CheckpointKeeper(prefix, 2, World(), {"vocab": "v"})
    paths = [keeper.save(step, (0, step), STATE) for step in (10, 20, 30)]
    assert paths == [os.path.abspath(f"{prefix}_step_{s}.pt") for s in (10, 20, 30)]
    assert not os.path.exists(paths[0]) and all(os.path.exists(p) for p in paths[1:])   # keep 2
    assert keeper.saved == paths[1:] and keeper.saved_steps == {10, 20, 30}
    ckpt = _load(paths[2])
    assert ckpt["vocab"] == "v" and ckpt["step"] == 30 and ckpt["data_pos"] == [0, 30]
    assert torch.equal(ckpt["model"]["w"], torch.ones(2)) and ckpt["train_seconds"] == 3.5
    # recorded as it was written, before the pruning it triggers (its own identity known after)
    assert ckpt["saved_checkpoints"] == paths and set(ckpt["saved_identities"]) == set(paths[:2])
    assert "scaler" not in ckpt and "rng_ranks" not in ckpt and ckpt["world_size"] == 1


def test_a_path_of_its_own_is_neither_pruned_nor_counted(tmp_path):
    keeper = CheckpointKeeper(str(tmp_path / "m"), 1, World(), {})
    other = keeper.save(5, (0, 5), dict(STATE, scaler={"scale": 8.0}), path=str(tmp_path / "x.pt"))
    keeper.save(10, (0, 10), STATE)
    assert os.path.exists(other) and keeper.saved_steps == {10}
    assert _load(other)["scaler"] == {"scale": 8.0}


def test_a_resumed_run_counts_its_earlier_checkpoints(tmp_path):
    prefix = str(tmp_path / "m")
    first = CheckpointKeeper(prefix, 2, World(), {})
    a, b = (first.save(s, (0, s), STATE) for s in (1, 2))
    resumed = CheckpointKeeper(prefix, 2, World(), {})
    resumed.resume(_load(b), b)
    assert resumed.saved == [a, b]
    c = resumed.save(3, (0, 3), STATE)
    assert not os.path.exists(a) and os.path.exists(b) and os.path.exists(c)   # still two kept


def test_a_rank_other_than_0_writes_nothing_but_knows_the_step(tmp_path):
    keeper = CheckpointKeeper(str(tmp_path / "m"), -1, World(rank=1, world_size=1), {})
    assert keeper.save(4, (0, 4), STATE) is None
    assert keeper.saved_steps == {4} and list(tmp_path.iterdir()) == []
