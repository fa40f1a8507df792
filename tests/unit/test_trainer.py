"""The trainer: exact resume, NaN guard, checkpoint contents and pruning, epochs."""
import glob
import os

import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.trainer import TrainingError
from onmt.utils.checkpoint import load_checkpoint


def _write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("trainer")), seed=0, n_examples=120, max_len=9,
                            target=lambda words: reversed(words))


def _train(data, save_model, *more_args):
    args = ["-data", data, "-save_model", save_model, "-layers", "1", "-rnn_size", "16",
            "-word_vec_size", "8", "-brnn", "-copy_attn", "-coverage_attn", "-dropout", "0.3",
            "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "16", "-report_every", "2",
            "-valid_steps", "3", "-seed", "7", *more_args]
    train_bin.main(args)


def test_resume_is_bitwise_equal(data, tmp_path):
    _train(data, str(tmp_path / "a"), "-train_steps", "10", "-save_checkpoint_steps", "5")
    _train(data, str(tmp_path / "b"), "-train_steps", "5", "-save_checkpoint_steps", "5")
    _train(data, str(tmp_path / "b"), "-train_steps", "10", "-save_checkpoint_steps", "5",
           "-train_from", str(tmp_path / "b_step_5.pt"))
    a = torch.load(tmp_path / "a_step_10.pt", weights_only=True)
    b = torch.load(tmp_path / "b_step_10.pt", weights_only=True)
    assert a["step"] == b["step"] == 10 and a["data_pos"] == b["data_pos"]
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    # and the run really trained: step 10 differs from step 5
    mid = torch.load(tmp_path / "a_step_5.pt", weights_only=True)
    assert any(not torch.equal(mid["model"][k], a["model"][k]) for k in a["model"])


def test_checkpoint_contents_and_keep(data, tmp_path):
    _train(data, str(tmp_path / "m"), "-train_steps", "6", "-save_checkpoint_steps", "2",
           "-keep_checkpoint", "2")
    names = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "m_step_*.pt")))
    assert names == ["m_step_4.pt", "m_step_6.pt"]
    assert not glob.glob(str(tmp_path / "*.tmp"))
    ck = load_checkpoint(str(tmp_path / "m_step_6.pt"))
    for key in ("model", "optim", "opt", "vocab", "step", "data_pos", "rng"):
        assert key in ck
    assert any(k.startswith("generator") for k in ck["model"])
    assert ck["opt"]["copy_attn"] is True and ck["vocab"]["shared"] is True


def test_epochs_mode_stops_after_the_epochs(data, tmp_path):
    _train(data, str(tmp_path / "e"), "-epochs", "2", "-save_checkpoint_steps", "0")
    (path,) = glob.glob(str(tmp_path / "e_step_*.pt"))
    ck = load_checkpoint(path)
    # 120 examples in batches of 16 -> 8 batches per epoch
    assert ck["step"] == 16 and ck["data_pos"] == [2, 0]


def test_nan_loss_stops_naming_the_step(data, tmp_path, monkeypatch):
    from onmt.losses.ml import MLLoss
    real = MLLoss.__call__

    def poisoned(self, model, batch):
        loss, stats = real(self, model, batch)
        return loss * float("nan"), stats
    monkeypatch.setattr(MLLoss, "__call__", poisoned)
    with pytest.raises(TrainingError, match="at step 1"):
        _train(data, str(tmp_path / "n"), "-train_steps", "3")


def test_resume_refuses_other_vocabulary(data, tmp_path):
    _train(data, str(tmp_path / "v"), "-train_steps", "1")
    ck = torch.load(tmp_path / "v_step_1.pt", weights_only=True)
    ck["vocab"]["tgt"] = ck["vocab"]["tgt"][:-1]
    ck["vocab"]["src"] = ck["vocab"]["src"][:-1] + ["zzz"]
    torch.save(ck, tmp_path / "bad.pt")
    from onmt.errors import UserError
    with pytest.raises(UserError, match="vocabulary"):
        _train(data, str(tmp_path / "v2"), "-train_steps", "2", "-train_from", str(tmp_path / "bad.pt"))


def test_reinforced_model_trains_and_resumes_through_the_registry(data, tmp_path):
    common = ["-data", data, "-reinforced", "-brnn", "-layers", "1", "-rnn_size", "16", "-word_vec_size", "8",
              "-dropout", "0", "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "16",
              "-report_every", "2", "-valid_steps", "4", "-seed", "3", "-scheduled_sampling", "0.25",
              "-save_checkpoint_steps", "4"]
    log = tmp_path / "train.log"
    train_bin.main(common + ["-save_model", str(tmp_path / "a"), "-train_steps", "8", "-log_file", str(log)])
    shares = [float(line.split("Step 2: ")[1].split("%")[0]) for line in log.read_text().splitlines()
              if "Step 2: " in line and "scheduled sampling" in line]
    assert len(shares) == 1 and 5.0 < shares[0] < 50.0  # about 25% of the inputs after the first
    train_bin.main(common + ["-save_model", str(tmp_path / "b"), "-train_steps", "4"])
    train_bin.main(common + ["-save_model", str(tmp_path / "b"), "-train_steps", "8",
                             "-train_from", str(tmp_path / "b_step_4.pt")])
    a = torch.load(tmp_path / "a_step_8.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "b_step_8.pt", weights_only=True)["model"]
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_reinforced_refuses_data_without_shared_vocab(tmp_path):
    _write(tmp_path / "s.txt", ["a b c", "b c d"])
    prefix = str(tmp_path / "p" / "d")
    preprocess_bin.main(["-train_src", str(tmp_path / "s.txt"), "-train_tgt", str(tmp_path / "s.txt"),
                         "-save_data", prefix, "-dynamic_dict"])
    from onmt.errors import UserError
    with pytest.raises(UserError, match="rerun preprocess.py with -share_vocab"):
        train_bin.main(["-data", prefix, "-reinforced", "-brnn", "-layers", "1", "-rnn_size", "8",
                        "-word_vec_size", "4", "-train_steps", "1", "-save_model", str(tmp_path / "m")])


def test_profile_logs_operators_and_writes_a_chrome_trace(data, tmp_path):
    """-profile 2: the top-operator table (aten ops) in the log, a valid JSON trace, then a stop
    without checkpoint."""
    import json
    log = tmp_path / "log.txt"
    _train(data, str(tmp_path / "p"), "-train_steps", "50", "-profile", "2", "-log_file", str(log))
    text = log.read_text()
    assert "top 25 operators by self CPU time" in text and "aten::" in text
    trace = json.loads((tmp_path / "p_profile.json").read_text())
    assert trace.get("traceEvents")
    assert not glob.glob(str(tmp_path / "p_step_*.pt")) and "Step " not in text
    custom = tmp_path / "t.json"
    _train(data, str(tmp_path / "q"), "-train_steps", "50", "-profile", "1", "-profile_trace", str(custom))
    assert json.loads(custom.read_text()).get("traceEvents")
