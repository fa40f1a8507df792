"""-train_from for a new phase of training: RL after ML, coverage after plain copy, new learning rate,
-reset_optim; and the exact-resume guarantee of RL runs (train.py end to end on tiny data)."""
import re

import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import train as train_bin
from onmt.errors import UserError


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("resume")), seed=1, n_examples=96, max_len=8,
                            target=lambda words: words[: max(2, len(words) - 2)])


REINFORCED = ["-reinforced", "-rnn_size", "16", "-word_vec_size", "8", "-dropout", "0",
              "-scheduled_sampling", "0.25"]
COPY = ["-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn", "-copy_attn", "-dropout", "0"]


def _train(data, model, save, *more_args):
    train_bin.main(["-data", data, "-save_model", save, *model, "-batch_size", "16", "-report_every", "2",
                    "-valid_steps", "4", "-save_checkpoint_steps", "4", "-seed", "5", *more_args])


def _ckpt(path):
    return torch.load(path, weights_only=True)


def _same_params(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_rl_resume_is_bitwise_equal_and_logs_rewards(data, tmp_path):
    rl = ["-optim", "adam", "-learning_rate", "0.01", "-rl_gamma", "0.5", "-max_gen_length", "6"]
    log = tmp_path / "a.log"
    _train(data, REINFORCED, str(tmp_path / "a"), *rl, "-train_steps", "8", "-log_file", str(log))
    _train(data, REINFORCED, str(tmp_path / "b"), *rl, "-train_steps", "4")
    _train(data, REINFORCED, str(tmp_path / "b"), *rl, "-train_steps", "8",
           "-train_from", str(tmp_path / "b_step_4.pt"))
    assert _same_params(_ckpt(tmp_path / "a_step_8.pt")["model"], _ckpt(tmp_path / "b_step_8.pt")["model"])
    text = log.read_text()
    steps = [line for line in text.splitlines() if "Step 2/8" in line and "acc:" in line]
    assert steps and all(k in steps[0] for k in ("reward sample:", "reward greedy:", "ml loss:", "rl loss:",
                                                  "copies:"))
    assert "Validation ROUGE-L F1 (greedy)" in text and "0.5 * self-critical RL" in text


def test_gamma_zero_trains_exactly_as_ml(data, tmp_path):
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4")
    _train(data, REINFORCED, str(tmp_path / "g0"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4",
           "-rl_gamma", "0")
    assert _same_params(_ckpt(tmp_path / "ml_step_4.pt")["model"], _ckpt(tmp_path / "g0_step_4.pt")["model"])


def test_rl_phase_from_ml_checkpoint_with_new_learning_rate(data, tmp_path):
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4")
    ml = _ckpt(tmp_path / "ml_step_4.pt")
    # -optim not given: the checkpoint's adam, with its state; the new learning rate wins
    _train(data, REINFORCED, str(tmp_path / "rl"), "-train_steps", "6", "-rl_gamma", "0.9984",
           "-learning_rate", "0.0001", "-train_from", str(tmp_path / "ml_step_4.pt"),
           "-log_file", str(tmp_path / "rl.log"))
    assert "Validation ROUGE-L F1 (greedy)" in (tmp_path / "rl.log").read_text()  # on with -rl_gamma
    rl = _ckpt(tmp_path / "rl_step_6.pt")
    assert rl["opt"]["optim"] == "adam" and rl["opt"]["rl_gamma"] == 0.9984
    assert rl["optim"]["param_groups"][0]["lr"] == 0.0001
    first = next(iter(rl["optim"]["state"].values()))
    assert int(first["step"]) == 6  # the state went on from the checkpoint's 4 steps
    assert not _same_params(ml["model"], rl["model"])


def test_reset_optim_all_starts_a_fresh_state(data, tmp_path):
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4")
    _train(data, REINFORCED, str(tmp_path / "r"), "-train_steps", "5", "-optim", "adagrad", "-learning_rate", "0.1",
           "-reset_optim", "all", "-train_from", str(tmp_path / "ml_step_4.pt"))
    ck = _ckpt(tmp_path / "r_step_5.pt")
    assert ck["opt"]["optim"] == "adagrad" and ck["optim"]["param_groups"][0]["lr"] == 0.1
    assert all(int(s["step"]) == 1 for s in ck["optim"]["state"].values())


def test_changing_optim_without_reset_is_one_clear_error(data, tmp_path):
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "2")
    with pytest.raises(UserError, match="-reset_optim all"):
        _train(data, REINFORCED, str(tmp_path / "x"), "-train_steps", "3", "-optim", "sgd",
               "-train_from", str(tmp_path / "ml_step_2.pt"))


def test_coverage_added_on_resume(data, tmp_path):
    _train(data, COPY, str(tmp_path / "c"), "-optim", "adagrad", "-learning_rate", "0.1", "-train_steps", "4")
    before = _ckpt(tmp_path / "c_step_4.pt")
    _train(data, COPY, str(tmp_path / "cov"), "-train_steps", "5", "-coverage_attn", "-lambda_coverage", "1",
           "-train_from", str(tmp_path / "c_step_4.pt"))
    after = _ckpt(tmp_path / "cov_step_5.pt")
    new = set(after["model"]) - set(before["model"])
    assert new and all("coverage" in k or "cov" in k for k in new)
    assert after["opt"]["coverage_attn"] is True and after["opt"]["optim"] == "adagrad"
    # the old parameters' optimizer state went on (5 steps of accumulated squares, not 1)
    names = after["param_names"]
    state = after["optim"]["state"]
    old_ids = [i for i, n in enumerate(names) if n in before["model"]]
    new_ids = [i for i, n in enumerate(names) if n not in before["model"]]
    assert old_ids and all(int(state[i]["step"]) == 5 for i in old_ids)
    assert new_ids and all(int(state[i]["step"]) == 1 for i in new_ids)


def test_a_checkpoint_that_does_not_fit_is_refused(data, tmp_path):
    _train(data, COPY + ["-coverage_attn"], str(tmp_path / "c"), "-optim", "adam", "-train_steps", "2")
    ck = _ckpt(tmp_path / "c_step_2.pt")
    ck["opt"]["coverage_attn"] = False  # claims no coverage, holds coverage parameters
    torch.save(ck, tmp_path / "odd.pt")
    with pytest.raises(UserError, match="does not fit"):
        _train(data, COPY, str(tmp_path / "x"), "-train_steps", "3", "-train_from", str(tmp_path / "odd.pt"))


# --------------------------------------------------------------------------- the RL phase's traps
def test_reset_optim_all_keeps_the_checkpoints_optimizer_and_says_so(data, tmp_path):
    """-reset_optim all resets the optimizer's state, not its options: an Adam checkpoint goes on with Adam
    (not the parser's SGD), at the learning rate given here, and the log's first lines say so."""
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4")
    log = tmp_path / "rl.log"
    _train(data, REINFORCED, str(tmp_path / "rl"), "-train_steps", "6", "-rl_gamma", "0.9984",
           "-learning_rate", "0.0001", "-reset_optim", "all", "-max_gen_length", "6",
           "-train_from", str(tmp_path / "ml_step_4.pt"), "-log_file", str(log))
    ck = _ckpt(tmp_path / "rl_step_6.pt")
    assert ck["opt"]["optim"] == "adam" and ck["optim"]["param_groups"][0]["lr"] == 0.0001
    assert all(int(s["step"]) == 2 for s in ck["optim"]["state"].values())   # a fresh state: 2 steps
    head = log.read_text().split("Step 2/6")[0]
    assert "Training: adam, learning rate 0.0001, fresh state (-reset_optim all)" in head
    assert "0.9984 * self-critical RL" in head


def test_train_steps_not_above_the_checkpoint_is_one_clear_error(data, tmp_path):
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-train_steps", "4")
    for steps in ("2", "4"):
        with pytest.raises(UserError, match=f"-train_steps {steps} is not above the step of .*ml_step_4.pt \\(4\\)"):
            _train(data, REINFORCED, str(tmp_path / "x"), "-train_steps", steps,
                   "-train_from", str(tmp_path / "ml_step_4.pt"))
    assert not list(tmp_path.glob("x_*"))


def test_copy_loss_by_seqlength_of_a_checkpoint_is_not_carried_into_the_mix(data, tmp_path):
    _train(data, COPY, str(tmp_path / "c"), "-optim", "adam", "-train_steps", "2", "-copy_loss_by_seqlength")
    assert _ckpt(tmp_path / "c_step_2.pt")["opt"]["copy_loss_by_seqlength"] is True
    log = tmp_path / "rl.log"
    _train(data, COPY, str(tmp_path / "r"), "-train_steps", "3", "-rl_gamma", "0.5", "-max_gen_length", "5",
           "-train_from", str(tmp_path / "c_step_2.pt"), "-log_file", str(log))
    assert _ckpt(tmp_path / "r_step_3.pt")["opt"]["copy_loss_by_seqlength"] is False
    assert "-copy_loss_by_seqlength of" in log.read_text()
    with pytest.raises(Exception, match="-copy_loss_by_seqlength with -rl_gamma"):
        _train(data, COPY, str(tmp_path / "q"), "-train_steps", "3", "-rl_gamma", "0.5", "-copy_loss_by_seqlength",
               "-train_from", str(tmp_path / "c_step_2.pt"))


def test_a_new_phase_with_its_own_seed_draws_from_it(data, tmp_path):
    """Seeds of an RL phase from one ML checkpoint give different runs (the checkpoint's RNG state is for an
    exact resume of the same run); the same seed gives the same run."""
    _train(data, REINFORCED, str(tmp_path / "ml"), "-optim", "adam", "-learning_rate", "0.01", "-train_steps", "4")
    rl = ["-train_steps", "6", "-rl_gamma", "0.9", "-max_gen_length", "6",
          "-train_from", str(tmp_path / "ml_step_4.pt")]
    for name, seed in (("s1", "1"), ("s1b", "1"), ("s2", "2")):
        train_bin.main(["-data", data, "-save_model", str(tmp_path / name), *REINFORCED, "-batch_size", "16",
                        "-valid_steps", "0", "-seed", seed, *rl])
    s1, s1b, s2 = (_ckpt(tmp_path / f"{n}_step_6.pt")["model"] for n in ("s1", "s1b", "s2"))
    assert _same_params(s1, s1b) and not _same_params(s1, s2)


def test_reinforced_alone_trains_with_the_papers_recipe(data, tmp_path):
    log = tmp_path / "p.log"
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "p"), "-reinforced", "-train_steps", "1",
                    "-valid_steps", "0", "-log_file", str(log)])
    ck = _ckpt(tmp_path / "p_step_1.pt")
    o = ck["opt"]
    assert (o["word_vec_size"], o["rnn_size"], o["brnn"], o["enc_layers"]) == (100, 400, True, 1)
    assert (o["optim"], o["learning_rate"], o["batch_size"], o["dropout"], o["scheduled_sampling"]) == \
        ("adam", 0.001, 50, 0.0, 0.0)
    assert "exp_avg" in next(iter(ck["optim"]["state"].values()))   # an Adam state
    text = log.read_text()
    # the one departure from the paper's recipe is said in the log
    assert "Training: adam, learning rate 0.001" in text
    assert "differ from Paulus et al.'s (config/cnndm_reinforced.yaml has theirs): -scheduled_sampling 0.0 " \
           "(paper: 0.25)" in text


def test_model_options_that_contradict_the_checkpoint_are_refused(data, tmp_path):
    """-train_from keeps the checkpoint's model: another family or size given with it is refused in one
    line (it was silently ignored: -reinforced on a copy checkpoint trained the copy model); what a
    resume may change (dropout, coverage, scheduled sampling) is taken."""
    _train(data, COPY, str(tmp_path / "c"), "-optim", "adam", "-train_steps", "2")
    for extra, shown in ((["-reinforced"], "-reinforced True (the checkpoint's: False)"),
                         (["-rnn_size", "32"], "-rnn_size 32 (the checkpoint's: 16)"),
                         (["-global_attention", "dot"], "-global_attention dot")):
        with pytest.raises(UserError, match=re.escape(shown)):
            train_bin.main(["-data", data, "-save_model", str(tmp_path / "x"), "-train_steps", "3", *extra,
                            "-train_from", str(tmp_path / "c_step_2.pt")])
    _train(data, COPY[:-2] + ["-dropout", "0.2"], str(tmp_path / "d"), "-train_steps", "3",
           "-train_from", str(tmp_path / "c_step_2.pt"))
    assert _ckpt(tmp_path / "d_step_3.pt")["opt"]["dropout"] == 0.2


def test_a_plain_resume_takes_the_batching_and_seed_of_the_checkpoint(data, tmp_path):
    """4 + 4 steps with `-train_from` alone (no -batch_size, -accum_count, -seed again) equal 8 steps, bit
    for bit, and the log lists what came from the checkpoint and what was changed."""
    run = ["-data", data, *COPY, "-batch_size", "8", "-accum_count", "2", "-seed", "3", "-valid_steps", "0",
           "-save_checkpoint_steps", "4"]
    train_bin.main([*run, "-save_model", str(tmp_path / "a"), "-train_steps", "8"])
    train_bin.main([*run, "-save_model", str(tmp_path / "b"), "-train_steps", "4"])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "b"), "-train_steps", "8", "-log_file",
                    str(tmp_path / "b.log"), "-train_from", str(tmp_path / "b_step_4.pt"), "-valid_steps", "0",
                    "-max_grad_norm", "3"])
    text = (tmp_path / "b.log").read_text()
    assert re.search(r"from the checkpoint \(not given here\): .*-batch_size 8.*-accum_count 2.*-seed 3", text), text
    assert "changed here: -max_grad_norm 3.0 (the checkpoint's: 5.0)" in text
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "c"), "-train_steps", "4", *COPY, "-batch_size", "8",
                    "-accum_count", "2", "-seed", "3", "-valid_steps", "0", "-save_checkpoint_steps", "4"])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "c"), "-train_steps", "8",
                    "-train_from", str(tmp_path / "c_step_4.pt"), "-valid_steps", "0"])
    assert _same_params(_ckpt(tmp_path / "a_step_8.pt")["model"], _ckpt(tmp_path / "c_step_8.pt")["model"])


def test_epochs_not_above_the_checkpoints_epoch_is_one_clear_error(data, tmp_path):
    _train(data, COPY, str(tmp_path / "e"), "-epochs", "2", "-valid_steps", "0", "-save_checkpoint_steps", "1000")
    (last,) = tmp_path.glob("e_step_*.pt")
    assert _ckpt(last)["data_pos"][0] == 2
    with pytest.raises(UserError, match=r"-epochs 1 is not above the epoch of .* \(2\): nothing to train"):
        _train(data, COPY, str(tmp_path / "e"), "-epochs", "1", "-train_from", str(last))
    assert not list(tmp_path.glob("e_best.pt"))


def test_a_plain_resume_records_the_first_runs_options(data, tmp_path):
    """A plain `-train_from X -train_steps N` into the same -save_model reset -early_stopping 3 -> 0, its criteria
    ppl rougeL -> ppl, -valid_rouge on -> off and -keep_checkpoint 2 -> -1 (nothing pruned): now every run option
    the checkpoint recorded goes on; given ones win and are logged; a new phase (another -save_model) has its own."""
    first = ["-early_stopping", "3", "-early_stopping_criteria", "ppl", "rougeL", "-keep_checkpoint", "2",
             "-valid_steps", "2", "-save_checkpoint_steps", "2", "-report_every", "1", "-max_gen_length", "5"]
    _train(data, COPY, str(tmp_path / "a"), *first, "-train_steps", "4")
    log = tmp_path / "b.log"
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "a"), "-train_from", str(tmp_path / "a_step_4.pt"),
                    "-train_steps", "6", "-log_file", str(log)])
    before, after = _ckpt(tmp_path / "a_step_4.pt")["opt"], _ckpt(tmp_path / "a_step_6.pt")["opt"]
    assert (after["early_stopping"], after["early_stopping_criteria"], after["valid_rouge"],
            after["keep_checkpoint"]) == (3, ["ppl", "rougeL"], True, 2)
    differ = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert differ == {"train_from", "train_steps", "log_file"}, differ
    assert sorted(p.name for p in tmp_path.glob("a_step_*.pt")) == ["a_step_4.pt", "a_step_6.pt"]   # pruned
    assert re.search(r"the run's own options, from the checkpoint \(not given here\): .*-keep_checkpoint 2.*"
                     r"-early_stopping 3, -early_stopping_criteria ppl rougeL", log.read_text())
    # given again: the command line's, logged
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "a"), "-train_from", str(tmp_path / "a_step_6.pt"),
                    "-train_steps", "8", "-keep_checkpoint", "3", "-log_file", str(log)])
    assert _ckpt(tmp_path / "a_step_8.pt")["opt"]["keep_checkpoint"] == 3
    assert re.search(r"the run's options changed here: -train_steps 8 \(the checkpoint's: 6\), -keep_checkpoint 3 "
                     r"\(the checkpoint's: 2\)", log.read_text())
    # a new phase into another prefix: its own schedule and stopping, named
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "n"), "-train_from", str(tmp_path / "a_step_8.pt"),
                    "-train_steps", "9", "-log_file", str(log)])
    new = _ckpt(tmp_path / "n_step_9.pt")["opt"]
    assert (new["early_stopping"], new["keep_checkpoint"], new["early_stopping_criteria"]) == (0, -1, ["ppl"])
    assert re.search(r"a new phase, its own schedule and stopping: .*-early_stopping 0 \(the checkpoint's: 3\)",
                     log.read_text())


def test_a_plain_resume_of_an_rl_run_keeps_its_rouge_criterion(data, tmp_path):
    """-rl_gamma carried from the checkpoint but the criteria derived from the command line's (none): a plain
    resume of an RL run chose its best checkpoint by perplexity, which RL raises by design."""
    _train(data, COPY, str(tmp_path / "r"), "-rl_gamma", "0.5", "-max_gen_length", "5", "-train_steps", "4")
    assert _ckpt(tmp_path / "r_step_4.pt")["opt"]["early_stopping_criteria"] == ["rougeL"]
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "r"), "-train_from", str(tmp_path / "r_step_4.pt"),
                    "-train_steps", "6"])
    after = _ckpt(tmp_path / "r_step_6.pt")["opt"]
    assert (after["rl_gamma"], after["early_stopping_criteria"], after["valid_rouge"]) == (0.5, ["rougeL"], True)
