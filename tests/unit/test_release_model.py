"""onmt_release_model (onmt/bin/release_model.py): a checkpoint without its training state, as one
torch file or a safetensors folder (onmt/utils/release_format.py), read back by load_checkpoint, the
translate session and the API with the same state dict and the same predictions (fp32); fp16 holds
the weights rounded to float16; -card writes a model card."""
import json
import os

import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint
from onmt import Summarizer
from onmt.bin import release_model
from onmt.errors import UserError
from onmt.utils import release_format
from onmt.utils.checkpoint import load_checkpoint, rng_state

PREPROCESS = {"lower": True, "src_seq_length_trunc": 6, "tgt_seq_length": 5,
              "text": {"tokenize": "ptb", "lower": True}}
TEXTS = ["W1 w2 W9 w3 w11 w4 w5 w12 w1", "w7 w7 w3", "W13 w0 w2 w6 w8 w10 w3 w1 w2 w9", "w5"]


def training_checkpoint(path, family):
    """A tiny checkpoint with the training state train.py saves beside the model."""
    save_tiny_checkpoint(path, family, PREPROCESS, seed=4)
    ckpt = torch.load(path, weights_only=True)
    ckpt.update(optim={"state": {}, "param_groups": []}, rng=rng_state(), data_pos=[1, 2],
                train_seconds=3.0, saved_checkpoints=[str(path)], step=7,
                early_stopping={"criteria": ["ppl"], "best": {}, "best_step": None, "bad": 0})
    torch.save(ckpt, path)
    return str(path)


def summaries(path):
    s = Summarizer.load(path)
    return [(d["summary"], d["score"]) for d in s.summarize(TEXTS, beam_size=3, return_details=True)]


@pytest.mark.parametrize("family", ["reinforced", "copy", "rnn"])
@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_a_release_reloads_to_the_same_state_and_predictions(tmp_path, family, fmt):
    src = training_checkpoint(tmp_path / "m.pt", family)
    out = str(tmp_path / ("rel.pt" if fmt == "pt" else "rel"))
    release_model.main(["-model", src, "-output", out, "-format", fmt])
    a, b = load_checkpoint(src), load_checkpoint(out)
    assert set(a["model"]) == set(b["model"])
    for k, t in a["model"].items():
        assert b["model"][k].dtype == t.dtype and torch.equal(b["model"][k], t), k
    assert b["opt"] == a["opt"] and b["vocab"] == a["vocab"] and b["preprocess"] == a["preprocess"]
    for key in ("optim", "rng", "data_pos", "train_seconds", "saved_checkpoints", "early_stopping"):
        assert key not in b, key
    assert b["step"] == 7 and b["release"] == {"precision": "fp32", "source_step": 7}
    assert summaries(out) == summaries(src)


def test_fp16_holds_the_rounded_weights_and_decodes_close(tmp_path):
    src = training_checkpoint(tmp_path / "m.pt", "copy")
    out = str(tmp_path / "rel16")
    release_model.main(["-model", src, "-output", out, "-format", "safetensors",
                        "-precision", "fp16"])
    a, b = load_checkpoint(src)["model"], load_checkpoint(out)["model"]
    for k, t in a.items():
        assert b[k].dtype == torch.float16 and torch.equal(b[k], t.half()), k
    full, half = summaries(src), summaries(out)
    for (_, s32), (_, s16) in zip(full, half):
        assert abs(s32 - s16) < 1e-2 * max(1.0, abs(s32))
    release_model.main(["-model", src, "-output", str(tmp_path / "rel32"), "-format", "safetensors"])
    size16, size32 = (os.path.getsize(os.path.join(tmp_path, d, "model.safetensors"))
                      for d in ("rel16", "rel32"))
    assert size16 < 0.75 * size32     # half the values, the same header


def test_the_safetensors_folder_holds_no_pickle(tmp_path):
    src = training_checkpoint(tmp_path / "m.pt", "reinforced")
    out = tmp_path / "rel"
    release_model.main(["-model", src, "-output", str(out), "-format", "safetensors"])
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == release_format.FORMAT_NAME and config["preprocess"] == PREPROCESS
    assert config["vocab"]["tgt"][:4] == ["<unk>", "<blank>", "<s>", "</s>"]
    release_model.main(["-model", src, "-output", f"{out}/", "-format", "safetensors"])  # again
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".rel")]


def test_a_damaged_or_foreign_folder_is_one_line(tmp_path):
    src = training_checkpoint(tmp_path / "m.pt", "rnn")
    out = tmp_path / "rel"
    release_model.main(["-model", src, "-output", str(out), "-format", "safetensors"])
    (out / "model.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(UserError, match="model.safetensors is damaged"):
        load_checkpoint(str(out))
    (out / "config.json").write_text("{}")
    with pytest.raises(UserError, match="config.json is not an onmt-reinforced release"):
        load_checkpoint(str(out))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="holds something else"):
        release_model.main(["-model", src, "-output", str(other), "-format", "safetensors"])
    with pytest.raises(UserError, match="is a folder, not a file"):
        load_checkpoint(str(other))


def test_without_safetensors_the_option_says_so(tmp_path, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_safetensors(name, *args, **kwargs):
        if name.startswith("safetensors"):
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_safetensors)
    src = training_checkpoint(tmp_path / "m.pt", "rnn")
    with pytest.raises(UserError, match=r"^-format safetensors needs the safetensors package.*"
                                        r"pip install safetensors") as e:
        release_model.main(["-model", src, "-output", str(tmp_path / "r"), "-format", "safetensors"])
    assert "\n" not in str(e.value) and not (tmp_path / "r").exists()


def test_the_card_has_yaml_metadata_metrics_and_options(tmp_path):
    import yaml
    src = training_checkpoint(tmp_path / "m.pt", "reinforced")
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"rouge1": {"p": 40.0, "r": 38.0, "f": 39.123},
                                  "rouge2": {"p": 1, "r": 1, "f": 17.5},
                                  "rougeL": {"p": 1, "r": 1, "f": 36.0}, "n": 11490,
                                  "scorer": "built-in", "settings": "-m -n 2 -a"}))
    out = tmp_path / "rel"
    release_model.main(["-model", src, "-output", str(out), "-format", "safetensors", "-card",
                        "-metrics", str(scores)])
    text = (out / "README.md").read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["pipeline_tag"] == "summarization" and "reinforced" in meta["tags"]
    result = meta["model-index"][0]["results"][0]
    assert result["task"]["type"] == "summarization"
    assert {m["type"]: m["value"] for m in result["metrics"]} == \
        {"rouge1": 39.12, "rouge2": 17.5, "rougeL": 36.0}
    assert "| -model_family | reinforced |" in text and "11490 examples" in text
    release_model.main(["-m", src, "-o", str(tmp_path / "r.pt"), "-card"])
    assert (tmp_path / "r.md").read_text().startswith("---\n") and not (tmp_path / "README.md").exists()


def test_user_errors_are_one_line(tmp_path):
    src = training_checkpoint(tmp_path / "m.pt", "rnn")
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    with pytest.raises(UserError, match="-metrics is what -card reports"):
        release_model.main(["-model", src, "-output", str(tmp_path / "r.pt"), "-metrics", str(bad)])
    with pytest.raises(UserError, match="-metrics .*bad.json: not an onmt_evaluate -json file"):
        release_model.main(["-model", src, "-output", str(tmp_path / "r.pt"), "-card",
                            "-metrics", str(bad)])
    with pytest.raises(UserError, match="-output .*m.pt is this command's -model"):
        release_model.main(["-model", src, "-output", src])
