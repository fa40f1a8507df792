"""train.py -tensorboard: the scalars written (tags, steps, values), training unchanged bit for bit,
the event file closed on error, one-line errors for a missing package or an unwritable folder."""
import math
import sys

import pytest
import torch

from helpers.e2e import random_pair_data, torch_threads
from onmt.bin import train as train_bin
from onmt.errors import UserError
from onmt.trainer import TrainingError
from onmt.utils.tensorboard import TensorBoard

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("tb")), seed=1, n_examples=48, max_len=8,
                            target=lambda words: words[:3])


def _train(data, save_model, *more_args, model=("-copy_attn", "-coverage_attn")):
    with torch_threads(1):
        train_bin.main(["-data", data, "-save_model", save_model, "-layers", "1", "-rnn_size", "16",
                        "-word_vec_size", "8", "-brnn", *model, "-dropout", "0.2", "-optim", "adam",
                        "-learning_rate", "0.01", "-batch_size", "16", "-report_every", "2",
                        "-valid_steps", "3", "-seed", "5", "-save_checkpoint_steps", "0", *more_args])


def _scalars(log_dir):
    """tag -> [(step, value)] of every scalar in the event files of `log_dir`."""
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_copy_model_with_rl_writes_the_scalars_and_trains_the_same(data, tmp_path):
    board = tmp_path / "board" / "run1"
    log = tmp_path / "train.log"
    rl = ("-rl_gamma", "0.5", "-max_gen_length", "6", "-train_steps", "6")
    _train(data, str(tmp_path / "a"), *rl, "-tensorboard", "-tensorboard_log_dir", str(board),
           "-log_file", str(log))
    got = _scalars(board)
    progress = ["xent", "ppl", "accuracy", "lr", "tgt_per_sec", "p_copy", "coverage", "reward_sample",
                "reward_greedy", "rl_loss", "norm_ml", "norm_rl"]   # no copies: See et al.'s rollout records none
    valid = ["xent", "ppl", "accuracy", "p_copy", "coverage", "rougeL", "greedy_length"]
    want = {f"progress/{n}" for n in progress} | {f"valid/{n}" for n in valid}
    assert set(got) == want
    for tag, points in got.items():
        steps = [s for s, _ in points]
        assert steps == ([2, 4, 6] if tag.startswith("progress/") else [3, 6]), tag
        assert all(math.isfinite(v) for _, v in points), tag
    assert all(v == pytest.approx(0.01) for _, v in got["progress/lr"])
    assert all(0.0 < v < 1.0 for _, v in got["progress/p_copy"] + got["valid/p_copy"])
    assert all(0.0 <= v <= 1.0 for _, v in got["progress/reward_sample"] + got["progress/reward_greedy"])
    assert all(0.0 <= v <= 100.0 for _, v in got["valid/rougeL"] + got["valid/accuracy"])
    assert all(v > 0 for _, v in got["progress/tgt_per_sec"])
    # the report line carries the same mean p(copy) as the scalar at step 2
    line = next(x for x in log.read_text().splitlines() if "Step 2/6" in x)
    assert f"p(copy) {got['progress/p_copy'][0][1]:.2f}" in line

    _train(data, str(tmp_path / "b"), *rl)
    a = torch.load(tmp_path / "a_step_6.pt", weights_only=True)
    b = torch.load(tmp_path / "b_step_6.pt", weights_only=True)
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert a["optim"]["state"].keys() == b["optim"]["state"].keys()
    for i in a["optim"]["state"]:
        for k, v in a["optim"]["state"][i].items():
            assert torch.equal(v, b["optim"]["state"][i][k]), (i, k)


def test_plain_model_has_no_pointer_or_rl_scalars(data, tmp_path):
    board = tmp_path / "board"
    _train(data, str(tmp_path / "p"), "-train_steps", "4", "-tensorboard", "-tensorboard_log_dir", str(board),
           model=("-global_attention", "general"))
    got = _scalars(board)
    assert set(got) == {"progress/xent", "progress/ppl", "progress/accuracy", "progress/lr",
                        "progress/tgt_per_sec", "valid/xent", "valid/ppl", "valid/accuracy"}
    assert [s for s, _ in got["valid/xent"]] == [3, 4]   # every -valid_steps, and at the end


def test_event_file_is_closed_when_training_fails(data, tmp_path, monkeypatch):
    from onmt.losses.ml import MLLoss
    real = MLLoss.__call__
    calls = []

    def nan_at_third_step(self, model, batch):
        loss, stats = real(self, model, batch)
        if torch.is_grad_enabled():
            calls.append(1)
        return (loss * float("nan") if len(calls) == 3 else loss), stats
    monkeypatch.setattr(MLLoss, "__call__", nan_at_third_step)
    board = tmp_path / "board"
    with pytest.raises(TrainingError, match="at step 3"):
        _train(data, str(tmp_path / "n"), "-train_steps", "6", "-tensorboard", "-tensorboard_log_dir",
               str(board), "-valid_steps", "0")
    assert [s for s, _ in _scalars(board)["progress/xent"]] == [2]


def test_unwritable_log_dir_and_missing_package_are_one_line_errors(data, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot write to -tensorboard_log_dir"):
        _train(data, str(tmp_path / "u"), "-train_steps", "1", "-tensorboard", "-tensorboard_log_dir",
               str(blocker / "runs"))
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)   # import fails as if not installed
    with pytest.raises(UserError, match=r"pip install \.\[tensorboard\]"):
        _train(data, str(tmp_path / "u"), "-train_steps", "1", "-tensorboard", "-tensorboard_log_dir",
               str(tmp_path / "runs"))
    assert not list(tmp_path.glob("u_step_*.pt"))   # refused before training


def test_reinforced_model_reports_pointer_and_scheduled_sampling(data, tmp_path):
    board = tmp_path / "board"
    _train(data, str(tmp_path / "r"), "-train_steps", "2", "-valid_steps", "2", "-tensorboard",
           "-tensorboard_log_dir", str(board), model=("-reinforced", "-scheduled_sampling", "0.25"))
    got = _scalars(board)
    assert {"progress/p_copy", "progress/sampled_inputs", "valid/p_copy"} <= set(got)
    assert 0.0 < got["progress/p_copy"][0][1] < 1.0 and got["progress/p_copy"][0][0] == 2


def test_a_failing_event_file_is_one_line_and_training_goes_on(data, tmp_path, monkeypatch):
    """A full disk under the event files (simulated: the writer raises ENOSPC): one warning, and the run
    trains to its end and saves."""
    import errno

    from torch.utils.tensorboard import SummaryWriter

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(SummaryWriter, "add_scalar", full)
    log = tmp_path / "log.txt"
    _train(data, str(tmp_path / "f"), "-train_steps", "6", "-tensorboard", "-tensorboard_log_dir",
           str(tmp_path / "board"), "-log_file", str(log))
    assert (tmp_path / "f_step_6.pt").exists()
    warnings = [line for line in log.read_text().splitlines() if "WARNING" in line and "-tensorboard" in line]
    assert len(warnings) == 1 and "No space left on device" in warnings[0] and "training goes on" in warnings[0]


def test_the_event_file_opens_at_the_first_scalar_and_closes_once(tmp_path):
    """TensorBoard on its own: nothing written before the first scalar, `prefix/name` tags at their
    steps, closing twice is harmless; without -tensorboard, from_opt gives None."""
    from types import SimpleNamespace
    board = TensorBoard(str(tmp_path / "tb"))
    board.flush()
    board.close()
    assert not list(tmp_path.glob("tb/events*"))
    board.add_scalars("progress", 4, {"xent": 1.5, "lr": torch.tensor(0.25)})
    board.add_scalars("valid", 6, {"xent": 1.25})
    board.close()
    board.close()
    assert _scalars(tmp_path / "tb") == {"progress/xent": [(4, 1.5)], "progress/lr": [(4, 0.25)],
                                         "valid/xent": [(6, 1.25)]}
    assert TensorBoard.from_opt(SimpleNamespace(tensorboard=False, tensorboard_log_dir="x")) is None
