"""train.py -sample_every: a validation example logged with its greedy prediction, training unchanged."""
import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import train as train_bin

FAMILIES = {
    "copy": ["-copy_attn", "-coverage_attn", "-brnn", "-layers", "1"],
    "reinforced": ["-reinforced", "-brnn", "-layers", "1", "-scheduled_sampling", "0.25"],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("sample_every")), seed=2, n_examples=64, max_len=9,
                            target=lambda words: words[:3])


def _train(data, save_model, family, *more_args):
    log = f"{save_model}.log"
    train_bin.main(["-data", data, "-save_model", save_model, *FAMILIES[family], "-rnn_size", "16",
                    "-word_vec_size", "8", "-dropout", "0.3", "-optim", "adam", "-learning_rate", "0.01",
                    "-batch_size", "16", "-report_every", "3", "-valid_steps", "4", "-train_steps", "6",
                    "-save_checkpoint_steps", "0", "-seed", "3", "-log_file", log, *more_args])
    with open(log, encoding="utf-8") as f:
        return torch.load(f"{save_model}_step_6.pt", weights_only=True), f.read()


@pytest.mark.parametrize("family", ["copy", "reinforced"])
def test_samples_are_logged_and_training_is_bitwise_unchanged(data, tmp_path, family):
    plain, plain_log = _train(data, str(tmp_path / "a"), family)
    sampled, log = _train(data, str(tmp_path / "b"), family, "-sample_every", "2")
    assert "Sample at step" not in plain_log
    for step in (2, 4, 6):
        assert f"Sample at step {step} (validation example" in log
    assert "Sample at step 3" not in log
    block = log[log.index("Sample at step 2"):].split("\n")[:5]
    assert block[1].startswith("  SOURCE") and block[2].startswith("  REFERENCE: ")
    assert block[3].startswith("  PREDICTION: ") and block[4].startswith("  mean p(copy): ")
    assert plain["model"].keys() == sampled["model"].keys()
    for k in plain["model"]:
        assert torch.equal(plain["model"][k], sampled["model"][k]), k
    assert torch.equal(plain["rng"]["torch"], sampled["rng"]["torch"])        # the RNG streams too
    assert plain["rng"]["python"] == sampled["rng"]["python"]


def test_describe_example_marks_copies_and_restores_training_mode():
    from helpers.checkpoints import VOCABS, build_tiny
    from helpers.models import make_batch
    from onmt.inspection.sample import describe_example, format_block
    model, _ = build_tiny("copy")
    model.train()
    batch = make_batch(VOCABS, B=3, S=7, T=6, seed=1)
    text = describe_example(model, batch, VOCABS, index=1, step=5)
    assert model.training and text.startswith("Sample at step 5 (validation example 2):")
    record = {"line": 0, "src": [f"s{i}" for i in range(70)], "pred": ["a", "b", "c"], "copied": [False, True, True],
              "p_copy": [0.2, 0.6, 0.7]}
    block = format_block(record, ["ref", "words"], step=9).split("\n")
    assert block[1] == "  SOURCE (60 of 70 words): " + " ".join(f"s{i}" for i in range(60)) + " ..."
    assert block[2] == "  REFERENCE: ref words" and block[3] == "  PREDICTION: a [b] [c]"
    assert block[4] == "  mean p(copy): 0.50 over 3 steps; 2 copied words in [brackets]"


def test_a_failing_sample_is_one_line_and_training_goes_on(data, tmp_path, monkeypatch):
    from onmt.inspection.sample import TrainingSample

    def broken(*a, **k):
        raise RuntimeError("plotting backend gone")
    monkeypatch.setattr(TrainingSample, "describe", broken)
    ckpt, log = _train(data, str(tmp_path / "s"), "copy", "-sample_every", "2")
    assert ckpt["step"] == 6
    warnings = [line for line in log.splitlines() if "WARNING" in line and "-sample_every" in line]
    assert len(warnings) == 1 and "at step 2" in warnings[0] and "plotting backend gone" in warnings[0]
