"""An OpenNMT-py 3.x config (its summarization recipe's keys, written here with tiny sizes) runs unchanged:
onmt_build_vocab writes its src_vocab, train.py -config builds the dataset once and finds it again."""
import json
import random

import pytest

from onmt.bin import build_vocab as build_vocab_bin
from onmt.bin import train as train_bin
from onmt.errors import UserError

CONFIG = """# OpenNMT-py 3.x
data:
    corpus_1:
        path_src: {d}/train.src
        path_tgt: {d}/train.tgt
        transforms: [filtertoolong]
        weight: 1
    valid:
        path_src: {d}/valid.src
        path_tgt: {d}/valid.tgt
save_data: {d}/run/example
src_vocab: {d}/run/example.vocab.src
share_vocab: true
src_seq_length: 10000
tgt_seq_length: 10000
src_seq_length_trunc: 6
tgt_seq_length_trunc: 100
overwrite: false
save_model: {d}/run/{name}
copy_attn: true
global_attention: mlp
word_vec_size: 8
rnn_size: 16
layers: 1
encoder_type: brnn
train_steps: 4
valid_steps: 4
max_grad_norm: 2
dropout: 0.
batch_size: 16
valid_batch_size: 16
optim: adagrad
learning_rate: 0.15
adagrad_accumulator_init: 0.1
reuse_copy_attn: true
copy_loss_by_seqlength: true
bridge: true
seed: 777
model_type: text
"""


def _corpus(d):
    rng = random.Random(1)
    src = [" ".join(f"w{rng.randint(0, 30)}" for _ in range(8)) for _ in range(64)]
    for split, lines in (("train", src), ("valid", src[:8])):
        (d / f"{split}.src").write_text("\n".join(lines) + "\n")
        (d / f"{split}.tgt").write_text("\n".join(" ".join(s.split()[:3]) for s in lines) + "\n")


def test_a_3x_config_builds_its_vocab_and_dataset_once_and_trains(tmp_path):
    _corpus(tmp_path)
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(CONFIG.format(d=tmp_path, name=name))
    build_vocab_bin.main(["-config", str(tmp_path / "a.yaml"), "-n_sample", "-1"])
    vocab = (tmp_path / "run" / "example.vocab.src").read_text().splitlines()
    assert vocab[0].split("\t")[0].startswith("w") and all(len(line.split("\t")) == 2 for line in vocab)
    log = tmp_path / "a.log"
    train_bin.main(["-config", str(tmp_path / "a.yaml"), "-log_file", str(log)])
    (built,) = (tmp_path / "run").glob("example.prep-*")
    meta = json.loads((built / "data.meta.json").read_text())
    assert meta["share_vocab"] and meta["dynamic_dict"]
    assert meta["src_seq_length_trunc"] == 6 and meta["tgt_seq_length_trunc"] == 100   # upstream's cut, kept
    assert (tmp_path / "run" / "a_step_4.pt").exists() and "building the dataset" in log.read_text()
    log = tmp_path / "b.log"
    train_bin.main(["-config", str(tmp_path / "b.yaml"), "-log_file", str(log)])   # the same data: found
    assert "the dataset built before" in log.read_text() and len(list((tmp_path / "run").glob("example.prep-*"))) == 1
    assert (tmp_path / "run" / "b_step_4.pt").exists()


def test_a_3x_config_without_its_corpus_is_one_line(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG.format(d=tmp_path, name="c"))
    with pytest.raises(UserError, match="train.src does not exist"):
        train_bin.main(["-config", str(tmp_path / "c.yaml")])


def test_translate_maps_the_data_keys_into_one_option_and_drops_upstream_pipeline_keys():
    """onmt/opts/upstream_config.py on its own: the corpora and vocabulary keys become -data_config,
    the pipeline's keys are dropped, and a config it cannot honour is one error."""
    import yaml

    from onmt.opts.upstream_config import PLACEHOLDER, UpstreamConfigError, is_upstream, translate
    obj = yaml.safe_load(CONFIG.format(d="D", name="m"))
    assert is_upstream(obj) and not is_upstream({"data": "runs/prep"})
    out = translate(obj)
    assert out["data"] == PLACEHOLDER and out["copy_attn"] and out["save_model"] == "D/run/m"
    assert not {"overwrite", "model_type", "save_data", "src_vocab", "share_vocab"} & set(out)
    assert json.loads(out["data_config"]) == {
        "train": [["D/train.src", "D/train.tgt"]], "valid": ["D/valid.src", "D/valid.tgt"],
        "dynamic_dict": True, "save_data": "D/run/example", "src_vocab": "D/run/example.vocab.src",
        "share_vocab": True, "src_seq_length": 10000, "tgt_seq_length": 10000, "src_seq_length_trunc": 6,
        "tgt_seq_length_trunc": 100}
    for bad, message in ((dict(obj, model_type="img"), "model_type: img is not available here"),
                         (dict(obj, data={"valid": obj["data"]["valid"]}), "no training corpus"),
                         (dict(obj, data={"c": {"path_src": "a"}}), "c needs path_src and path_tgt"),
                         ({k: v for k, v in obj.items() if k != "save_data"}, "save_data")):
        with pytest.raises(UpstreamConfigError, match=message):
            translate(bad)


@pytest.mark.parametrize("target", ["train.src", "valid.tgt", "a.yaml"])
def test_build_vocab_never_writes_over_what_it_reads(tmp_path, target):
    """src_vocab naming a corpus, a validation file or the config itself: one line, the file untouched."""
    _corpus(tmp_path)
    config = CONFIG.format(d=tmp_path, name="a").replace(f"src_vocab: {tmp_path}/run/example.vocab.src",
                                                         f"src_vocab: {tmp_path}/{target}")
    (tmp_path / "a.yaml").write_text(config)
    before = (tmp_path / target).read_bytes()
    with pytest.raises(UserError, match="src_vocab"):
        build_vocab_bin.main(["-config", str(tmp_path / "a.yaml")])
    assert (tmp_path / target).read_bytes() == before


def test_data_beside_a_configs_data_mapping_is_refused(tmp_path):
    from onmt.opts import OptionError
    _corpus(tmp_path)
    (tmp_path / "a.yaml").write_text(CONFIG.format(d=tmp_path, name="a"))
    with pytest.raises(OptionError, match="-data .* and the -config.s data: mapping both name the training data"):
        train_bin.main(["-config", str(tmp_path / "a.yaml"), "-data", str(tmp_path / "elsewhere")])
    assert not (tmp_path / "run").exists()
