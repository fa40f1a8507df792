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


# --------------------------------------------------------------------------- early stopping, best, time
def _scripted_validation(monkeypatch, ppls):
    """Trainer.validate returns the perplexities of `ppls` in turn (the steps it ran at are recorded)."""
    import math

    from onmt.trainer import Trainer
    from onmt.utils.statistics import Statistics
    seen = []

    def validate(self, valid_data, step=None):
        seen.append(step)
        return Statistics(loss=100 * math.log(ppls[len(seen) - 1]), n_words=100)
    monkeypatch.setattr(Trainer, "validate", validate)
    return seen


def test_early_stopping_stops_at_the_planted_plateau_and_keeps_the_best(data, tmp_path, monkeypatch):
    seen = _scripted_validation(monkeypatch, [9.0, 7.0, 5.0, 6.0, 5.5, 5.0, 1.0, 1.0])
    log = tmp_path / "log.txt"
    _train(data, str(tmp_path / "s"), "-train_steps", "30", "-save_checkpoint_steps", "3", "-early_stopping", "3",
           "-log_file", str(log))
    # validations at 3, 6, 9 (best: 5.0), then 12, 15, 18 bring nothing better: stop at 18
    assert seen == [3, 6, 9, 12, 15, 18]
    steps = sorted(int(p.rsplit("_", 1)[1][:-3]) for p in glob.glob(str(tmp_path / "s_step_*.pt")))
    assert steps[-1] == 18
    best = load_checkpoint(str(tmp_path / "s_best.pt"))
    at_9 = load_checkpoint(str(tmp_path / "s_step_9.pt"))
    assert best["step"] == 9 and all(torch.equal(best["model"][k], at_9["model"][k]) for k in at_9["model"])
    assert best["early_stopping"]["best_step"] == 9
    assert "Early stopping at step 18" in log.read_text()


def test_the_best_is_saved_even_between_checkpoint_steps(data, tmp_path, monkeypatch):
    _scripted_validation(monkeypatch, [9.0, 3.0, 5.0, 6.0])
    _train(data, str(tmp_path / "b"), "-train_steps", "12", "-save_checkpoint_steps", "0")
    # no intermediate step files (-save_checkpoint_steps 0), the final one, and the best of step 6
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "b_*.pt"))) == ["b_best.pt", "b_step_12.pt"]
    assert load_checkpoint(str(tmp_path / "b_best.pt"))["step"] == 6


def test_valid_steps_zero_means_no_validation(data, tmp_path, monkeypatch):
    seen = _scripted_validation(monkeypatch, [1.0] * 10)
    _train(data, str(tmp_path / "z"), "-train_steps", "4", "-valid_steps", "0")
    assert seen == [] and not os.path.exists(tmp_path / "z_best.pt")


def test_train_time_limit_stops_and_train_seconds_carry_over(data, tmp_path, monkeypatch):
    """A fake process clock that advances one second per reading: each step takes 1 s exactly."""
    import itertools
    import time
    ticks = itertools.count()
    monkeypatch.setattr(time, "process_time", lambda: float(next(ticks)))
    _train(data, str(tmp_path / "t"), "-train_steps", "100", "-train_time_limit", "5", "-valid_steps", "0")
    (path,) = glob.glob(str(tmp_path / "t_step_*.pt"))
    ck = load_checkpoint(path)
    assert ck["step"] == 5 and ck["train_seconds"] == 5.0
    _train(data, str(tmp_path / "t"), "-train_steps", "100", "-train_time_limit", "3", "-valid_steps", "0",
           "-train_from", path)
    assert load_checkpoint(str(tmp_path / "t_step_8.pt"))["train_seconds"] == 8.0


def test_rl_only_report_line_prints_only_what_exists(data, tmp_path):
    log = tmp_path / "log.txt"
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "r"), "-reinforced", "-rnn_size", "16",
                    "-word_vec_size", "8", "-batch_size", "16", "-report_every", "2", "-valid_steps", "0",
                    "-train_steps", "2", "-rl_gamma", "1", "-max_gen_length", "5", "-log_file", str(log)])
    (line,) = [x for x in log.read_text().splitlines() if "Step 2/2;" in x]
    assert "reward sample:" in line and "ml loss: n/a" in line
    assert not any(k in line for k in ("acc:", "ppl:", "xent:", "update norm"))


def test_logged_update_norms_are_those_of_the_two_terms_gradients():
    """The trainer's update_norm_ml / _rl equal the norms of the gradients of (1 - gamma) L_ml / n and
    gamma L_rl / n computed separately here (same draws: same seed), before clipping."""
    from helpers.models import build, make_batch, make_opt, make_vocabs
    from onmt.losses.ml import MLLoss
    from onmt.losses.rl import MixedLoss
    from onmt.trainer import Trainer
    from onmt.utils import update_norms
    vocabs = make_vocabs(src_vocab_size=30, tgt_vocab_size=14)
    model = build(make_opt(reinforced=True, rnn_size=12, word_vec_size=6, scheduled_sampling=0.25), vocabs, seed=3)
    model.train()
    batch = make_batch(vocabs, B=4, S=8, T=6, seed=3)
    loss_fn = MixedLoss(MLLoss(), gamma=0.9, max_length=6)
    params = [p for p in model.parameters() if p.requires_grad]
    torch.manual_seed(5)
    parts, _ = loss_fn.parts(model, batch)
    n = batch.n_tgt_tokens
    want = {}
    for name in ("ml", "rl"):
        grads = torch.autograd.grad(parts[name] / n, params, retain_graph=True, allow_unused=True)
        want[name] = torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None)).item()
    assert want["ml"] > 0 and want["rl"] > 0
    trainer = Trainer(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.0), save_model="unused",
                      max_grad_norm=1e-3)
    torch.manual_seed(5)
    stats = trainer.train_step(batch, 1)
    assert stats.extra["update_norm_ml"] == pytest.approx(want["ml"], rel=1e-5)
    assert stats.extra["update_norm_rl"] == pytest.approx(want["rl"], rel=1e-5)
    assert trainer.reporter.scalars(stats)["norm_rl"] == pytest.approx(want["rl"], rel=1e-5)
    assert f"RL/ML {want['rl'] / want['ml']:.3g}" in update_norms.report(stats.extra)[0]


def test_a_signal_during_validation_stops_it_saves_and_stops(data, tmp_path, monkeypatch):
    """The last validation of a long run was deaf to ^C and SIGTERM (16 minutes at the paper's sizes):
    now the signal ends it at the next batch, the step is saved, and the run stops with the signal's
    status."""
    import os
    import signal

    from onmt.errors import Stopped
    from onmt.trainer import Trainer
    real = Trainer.validate
    calls = []

    def validate(self, valid_data, step=None):
        calls.append(step)
        os.kill(os.getpid(), signal.SIGTERM)   # arrives as validation starts
        return real(self, valid_data, step)
    monkeypatch.setattr(Trainer, "validate", validate)
    with pytest.raises(Stopped) as stopped:
        _train(data, str(tmp_path / "v"), "-train_steps", "5", "-valid_steps", "5", "-save_checkpoint_steps", "0")
    assert calls == [5] and stopped.value.code == 143 and "at step 5" in str(stopped.value)
    assert load_checkpoint(str(tmp_path / "v_step_5.pt"))["step"] == 5
    assert not os.path.exists(tmp_path / "v_best.pt")   # an interrupted validation is no best


def test_a_long_validation_shows_progress(data, tmp_path, monkeypatch):
    """A fake clock advancing 20 s per reading: the validation (8 batches) logs progress lines."""
    import itertools

    from onmt import trainer_reporting
    ticks = itertools.count(0, 20)
    monkeypatch.setattr(trainer_reporting.time, "monotonic", lambda: float(next(ticks)))
    log = tmp_path / "log.txt"
    _train(data, str(tmp_path / "p"), "-train_steps", "3", "-valid_steps", "3", "-log_file", str(log))
    lines = [x for x in log.read_text().splitlines() if "Validation: " in x and " batches, " in x]
    assert len(lines) >= 2 and "Validation: 1 batches, 32 examples (wall 40 s)" in lines[0]


def test_a_diverging_run_is_said_once_naming_the_likely_option(data, tmp_path):
    """Adagrad at a learning rate of 5 with its accumulator at 0: perplexity far above V within a few steps,
    one warning naming -adagrad_accumulator_init; upstream's recipe (0.15, accumulator 0.1) none."""
    def run(name, *optim):
        train_bin.main(["-data", data, "-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn",
                        "-copy_attn", "-optim", "adagrad", *optim, "-batch_size", "16", "-report_every", "1",
                        "-valid_steps", "0", "-seed", "7", "-train_steps", "6", "-save_model", str(tmp_path / name),
                        "-log_file", str(tmp_path / f"{name}.log")])
        return (tmp_path / f"{name}.log").read_text()
    text = run("bad", "-learning_rate", "5")
    assert text.count("training is diverging") == 1 and "-adagrad_accumulator_init 0.1" in text
    assert "training is diverging" not in run("ok", "-learning_rate", "0.15", "-adagrad_accumulator_init", "0.1")


def test_the_report_line_gives_the_pace_and_time_left():
    from onmt.trainer_reporting import eta
    assert eta(100, "300", 50, 25.0) == "; 2.00 steps/s, ETA 1m40s"
    assert eta(100, "100000", 50, 25.0) == "; 2.00 steps/s, ETA 13h52m"
    assert eta(100, "epoch 3", 50, 25.0) == "" and eta(300, "300", 50, 25.0) == ""
