"""Short end-to-end run (default suite) and command-line bad-input checks.

make_toy_data (tiny copy task) -> preprocess -> train a tiny copy+coverage model a few dozen steps
-> translate with beam search -> evaluate, through the real entry points; then train.py and
translate.py as subprocesses on bad input: one line on stderr, non-zero exit, no traceback.
"""
import math
import os
import re

import pytest
import torch

from helpers.e2e import exact_match, make_data, preprocess, read_lines, run_cli, train, translate

CKPT_KEYS = {"model", "optim", "opt", "vocab", "step", "data_pos", "rng"}
TINY_MODEL = ["-layers", "1", "-rnn_size", "32", "-word_vec_size", "16", "-brnn", "-copy_attn",
              "-coverage_attn", "-global_attention", "mlp", "-dropout", "0.0", "-optim", "adam",
              "-learning_rate", "0.005", "-batch_size", "32", "-seed", "1"]



pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e_short")
    data = make_data("copy", root / "data", seed=3, train_size=400, valid_size=40, test_size=30,
                     vocab=12, max_len=8)
    prefix = preprocess(data, root / "prep" / "data")
    log = root / "train.log"
    ckpt = train(prefix, root / "models" / "m", *TINY_MODEL, "-train_steps", "40", "-valid_steps", "20",
                 "-save_checkpoint_steps", "20", "-report_every", "10", "-log_file", log)
    # the test source with an empty line (and a blank one) in the middle
    src_lines = read_lines(os.path.join(data, "test.src.txt"))
    src_lines[5], src_lines[12] = "", "   "
    src = root / "test_with_empty.src.txt"
    src.write_text("".join(line + "\n" for line in src_lines), encoding="utf-8")
    pred = root / "pred.txt"
    preds = translate(ckpt, src, pred, "-beam_size", "4", "-batch_size", "7", "-max_length", "20")
    return dict(root=root, data=data, prefix=prefix, log=log, ckpt=ckpt, src_lines=src_lines, preds=preds,
                pred=pred)


def test_checkpoint_loads_safely_with_every_key(pipeline):
    assert os.path.basename(pipeline["ckpt"]) == "m_step_40.pt"
    assert os.path.exists(str(pipeline["root"] / "models" / "m_step_20.pt"))
    ckpt = torch.load(pipeline["ckpt"], map_location="cpu", weights_only=True)
    assert CKPT_KEYS <= set(ckpt)
    assert ckpt["step"] == 40
    assert ckpt["opt"]["copy_attn"] and ckpt["opt"]["coverage_attn"]
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())


def test_one_prediction_per_input_line_and_empty_in_empty_out(pipeline):
    preds, src_lines = pipeline["preds"], pipeline["src_lines"]
    assert len(preds) == len(src_lines) == 30
    assert preds[5] == "" and preds[12] == ""


def test_training_log_and_validation_stats_are_finite(pipeline):
    text = pipeline["log"].read_text(encoding="utf-8")
    # OpenNMT-py's report line, its clocks named: Step N/T; acc: A; ppl: P; xent: X; lr: L; S/T tok/s;
    # wall N s; training CPU N s (then extras); no bare "sec"
    steps = re.findall(r"Step (\d+)/\d+; acc: ([-\d.a-z]+); ppl: ([-\d.a-z]+); xent: ([-\d.a-z]+); "
                       r"lr: \d\.\d\de[-+]\d+; (\d+)/(\d+) tok/s; wall \d+ s; training CPU \d+ s; epoch", text)
    assert " sec" not in text
    assert [int(s[0]) for s in steps] == [10, 20, 30, 40]
    assert all(int(s[4]) > 0 and int(s[5]) > 0 for s in steps)     # source and target tokens per second
    steps = [s[:4] for s in steps]
    # OpenNMT-py's validation lines: each figure on its own line
    valid = list(zip(re.findall(r"Validation perplexity: ([-\d.a-z]+)\n", text),
                     re.findall(r"Validation accuracy: ([-\d.a-z]+)\n", text)))
    assert len(valid) == 2
    for row in [s[1:] for s in steps] + valid:
        assert all(math.isfinite(float(x)) for x in row), row
    # a few dozen steps already learn something: the last validation beats a uniform guess
    assert float(valid[-1][0]) < float(valid[0][0])
    assert "Saved checkpoint" in text


def test_evaluate_on_predictions(pipeline, tmp_path):
    from onmt.bin.evaluate import main as evaluate
    ref = os.path.join(pipeline["data"], "test.tgt.txt")
    scores = evaluate(["-pred", str(pipeline["pred"]), "-ref", ref])
    assert scores["n"] == 30
    assert all(math.isfinite(scores[m][k]) for m in ("rouge1", "rouge2", "rougeL", "rougeLsum") for k in "prf")
    # 40 steps already copy some test lines exactly (measured 4 of 30; an untrained model copies none),
    # and never the two whose source was blanked out (lines 5 and 12 predict nothing)
    assert 1 / 30 <= exact_match(pipeline["pred"], ref) <= 28 / 30
    assert scores["rouge1"]["f"] >= 20.0   # measured 38.8


# --------------------------------------------------------------------------- bad input, through the CLI
def _assert_one_line_error(proc, *needles):
    assert proc.returncode != 0, proc
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_train_missing_data_prefix(tmp_path):
    proc = run_cli("train.py", "-data", tmp_path / "nowhere" / "data", "-save_model", tmp_path / "m",
                   "-train_steps", "1")
    _assert_one_line_error(proc, "nowhere")
    assert not any(f.name.endswith(".pt") for f in tmp_path.iterdir())


def test_train_from_missing_and_corrupt_checkpoint(pipeline, tmp_path):
    proc = run_cli("train.py", "-data", pipeline["prefix"], "-save_model", tmp_path / "m",
                   "-train_from", tmp_path / "missing.pt", "-train_steps", "1")
    _assert_one_line_error(proc, "missing.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"this is not a checkpoint\x00\x01\x02" * 10)
    proc = run_cli("train.py", "-data", pipeline["prefix"], "-save_model", tmp_path / "m",
                   "-train_from", corrupt, "-train_steps", "1")
    _assert_one_line_error(proc, "corrupt.pt")


def test_translate_missing_checkpoint(pipeline, tmp_path):
    src = os.path.join(pipeline["data"], "test.src.txt")
    proc = run_cli("translate.py", "-model", tmp_path / "missing.pt", "-src", src, "-output", tmp_path / "p.txt")
    _assert_one_line_error(proc, "missing.pt")
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("kind", ["garbage", "truncated", "not_a_checkpoint"])
def test_translate_corrupt_checkpoint(pipeline, tmp_path, kind):
    bad = tmp_path / f"{kind}.pt"
    if kind == "garbage":
        bad.write_bytes(os.urandom(4096))
    elif kind == "truncated":
        whole = open(pipeline["ckpt"], "rb").read()
        bad.write_bytes(whole[: len(whole) // 2])
    else:
        torch.save({"weights": torch.zeros(3)}, bad)
    src = os.path.join(pipeline["data"], "test.src.txt")
    proc = run_cli("translate.py", "-model", bad, "-src", src, "-output", tmp_path / "p.txt")
    _assert_one_line_error(proc, bad.name)
    assert not (tmp_path / "p.txt").exists()
