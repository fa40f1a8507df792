"""The checkpoint tools through the command line on a tiny trained copy model: train.py with
-average_decay and -keep_checkpoint 3, onmt_average_models over the kept checkpoints, onmt_release_model
to a torch file and a safetensors folder (fp32: translate.py's predictions identical to the
checkpoint's; fp16: ROUGE-L within FP16_ROUGE_TOLERANCE points), onmt_evaluate -json into a model card."""
import json
import os
import subprocess
import sys

import pytest

from helpers.e2e import make_data, preprocess, read_lines, run_cli, train
from helpers.paths import ROOT

# fp16 weights decoded in float32: at most this many ROUGE-L F1 points from the fp32 release
# (docs/user-guide.md, Averaging checkpoints, the moving average, releasing a model; on the toy copy and
# reverse tasks the fp16 predictions were identical to fp32's)
FP16_ROUGE_TOLERANCE = 1.0
TINY = ["-layers", "1", "-rnn_size", "32", "-word_vec_size", "16", "-brnn", "-copy_attn", "-dropout", "0.0",
        "-optim", "adam", "-learning_rate", "0.005", "-batch_size", "32", "-seed", "1"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tool(module, *args):
    """python -m onmt.bin.MODULE ARGS (what the console scripts onmt_average_models & co. run)."""
    return subprocess.run([sys.executable, "-m", f"onmt.bin.{module}", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    data = make_data("copy", root / "data", seed=3, train_size=300, valid_size=30, test_size=30, vocab=12,
                     max_len=8)
    prefix = preprocess(data, root / "prep" / "data")
    ckpt = train(prefix, root / "m", *TINY, "-train_steps", "50", "-valid_steps", "10",
                 "-save_checkpoint_steps", "10", "-keep_checkpoint", "3", "-average_decay", "0.01")
    return dict(root=root, data=data, prefix=prefix, ckpt=ckpt, src=os.path.join(data, "test.src.txt"),
                ref=os.path.join(data, "test.tgt.txt"))


def predict(run, model, name):
    out = run["root"] / f"{name}.txt"
    r = run_cli("translate.py", "-model", model, "-src", run["src"], "-output", out, "-beam_size", "3",
                "-max_length", "12")
    assert r.returncode == 0, r.stderr
    return str(out)


def rouge_l(run, pred):
    from onmt.evaluation import score, summarize
    return summarize(score(read_lines(pred), [[r] for r in read_lines(run["ref"])]))["rougeL"]["f"]


def test_average_the_kept_checkpoints(run):
    kept = sorted(p for p in os.listdir(run["root"]) if p.startswith("m_step_"))
    assert kept == ["m_step_30.pt", "m_step_40.pt", "m_step_50.pt"]     # -keep_checkpoint 3
    avg = run["root"] / "avg.pt"
    r = tool("average_models", "-models", *[run["root"] / p for p in kept], "-output", avg)
    assert r.returncode == 0, r.stderr
    assert "Averaged 3 checkpoints (steps 30, 40, 50)" in r.stderr
    assert len(read_lines(predict(run, avg, "avg"))) == 30


def test_release_predicts_as_the_checkpoint(run):
    base = predict(run, run["ckpt"], "ckpt")
    for fmt, out in (("pt", run["root"] / "rel.pt"), ("safetensors", run["root"] / "rel")):
        r = tool("release_model", "-model", run["ckpt"], "-output", out, "-format", fmt)
        assert r.returncode == 0, r.stderr
        assert read_lines(predict(run, out, f"rel_{fmt}")) == read_lines(base), fmt
    assert os.path.getsize(run["root"] / "rel.pt") < os.path.getsize(run["ckpt"]) / 2   # no Adam state, no EMA copy


def test_fp16_release_within_the_stated_tolerance(run):
    out = run["root"] / "rel16"
    r = tool("release_model", "-model", run["ckpt"], "-output", out, "-format", "safetensors",
             "-precision", "fp16")
    assert r.returncode == 0, r.stderr
    full = rouge_l(run, predict(run, run["ckpt"], "full"))
    half = rouge_l(run, predict(run, out, "half"))
    assert full > 50         # a model that learnt the copy task
    assert abs(full - half) <= FP16_ROUGE_TOLERANCE, (full, half)


def test_card_from_onmt_evaluate_json(run):
    pred = predict(run, run["ckpt"], "for_card")
    scores = run["root"] / "scores.json"
    r = tool("evaluate", "-pred", pred, "-ref", run["ref"], "-json", scores)
    assert r.returncode == 0, r.stderr
    out = run["root"] / "carded"
    r = tool("release_model", "-model", run["ckpt"], "-output", out, "-format", "safetensors", "-card",
             "-metrics", scores)
    assert r.returncode == 0, r.stderr
    card = (out / "README.md").read_text()
    want = round(json.loads(scores.read_text())["rougeL"]["f"], 2)
    assert f"value: {want}" in card and "pipeline_tag: summarization" in card


def test_train_from_an_average_and_a_release(run, tmp_path):
    avg = tmp_path / "avg.pt"
    assert tool("average_models", "-models", run["ckpt"], run["root"] / "m_step_40.pt", "-output", avg).returncode == 0
    rel = tmp_path / "rel16"
    assert tool("release_model", "-model", run["ckpt"], "-output", rel, "-format", "safetensors",
                "-precision", "fp16").returncode == 0
    for name, source in (("from_avg", avg), ("from_rel", rel)):   # no optimizer state: a fresh one
        last = train(run["prefix"], tmp_path / name, *TINY, "-train_steps", "52", "-valid_steps", "0",
                     "-train_from", source)
        assert last.endswith("_step_52.pt")


def test_user_errors_are_one_line(run):
    r = tool("average_models", "-models", run["ckpt"], run["root"] / "missing.pt", "-output", run["root"] / "x.pt")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "missing.pt does not exist" in r.stderr
    r = tool("release_model", "-model", run["ckpt"], "-output", run["root"] / "y", "-format", "onnx")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run_cli("translate.py", "-model", run["root"], "-src", run["src"], "-output", run["root"] / "z.txt")
    assert r.returncode == 1 and "is a folder, not a file" in r.stderr and "Traceback" not in r.stderr
