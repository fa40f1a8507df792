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


# upstream OpenNMT-py 3.5.1's docs/source/examples/summary/cnndm.yaml, key for key, its paths under {d}
UPSTREAM_CNNDM = """## where the vocabularies go
save_data: {d}/cnndm/run/example
overwrite: False

src_seq_length: 10000
tgt_seq_length: 10000
src_seq_length_trunc: 400
tgt_seq_length_trunc: 100

share_vocab: True

data:
    cnndm:
        path_src: {d}/cnndm/train.txt.src
        path_tgt: {d}/cnndm/train.txt.tgt.tagged
        transforms: []
        weight: 1
    valid:
        path_src: {d}/cnndm/val.txt.src
        path_tgt: {d}/cnndm/val.txt.tgt.tagged
        transforms: []

src_vocab_size: 50000
tgt_vocab_size: 50000

src_vocab: {d}/cnndm/run/example.vocab.src
tgt_vocab: {d}/cnndm/run/example.vocab.tgt

save_model: {d}/cnndm/run/model
copy_attn: true
global_attention: mlp
word_vec_size: 128
hidden_size: 512
layers: 1
encoder_type: brnn
train_steps: 200000
max_grad_norm: 2
dropout: 0
batch_size: 16
valid_batch_size: 16
optim: adagrad
learning_rate: 0.15
adagrad_accumulator_init: 0.1
reuse_copy_attn: true
copy_loss_by_seqlength: true
bridge: true
seed: 777
world_size: 2
gpu_ranks: [0, 1]
"""


def test_upstreams_cnndm_yaml_runs_unchanged(tmp_path):
    """The file as upstream documents it (toy data from tools/make_toy_data.py under upstream's file names):
    onmt_build_vocab, then a few training steps (the command line sizes the model and the run for a test and
    this machine: one process on the CPU); the keys it drops are one log line naming the file, once."""
    import shutil
    import subprocess
    import sys

    from helpers.paths import ROOT
    toy = tmp_path / "toy"
    subprocess.run([sys.executable, "tools/make_toy_data.py", "-task", "summ", "-dir", str(toy), "-train_size", "48",
                    "-valid_size", "8", "-test_size", "2"], cwd=ROOT, check=True, capture_output=True)
    (tmp_path / "cnndm").mkdir()
    for ours, theirs in (("train.src", "train.txt.src"), ("train.tgt", "train.txt.tgt.tagged"),
                         ("valid.src", "val.txt.src"), ("valid.tgt", "val.txt.tgt.tagged")):
        shutil.copy(toy / f"{ours}.txt", tmp_path / "cnndm" / theirs)
    config = tmp_path / "cnndm.yaml"
    config.write_text(UPSTREAM_CNNDM.format(d=tmp_path))
    build_vocab_bin.main(["-config", str(config), "-n_sample", "-1", "-log_file", str(tmp_path / "v.log")])
    assert (tmp_path / "cnndm" / "run" / "example.vocab.src").exists()
    log = tmp_path / "t.log"
    train_bin.main(["-config", str(config), "-train_steps", "3", "-valid_steps", "3", "-word_vec_size", "8",
                    "-hidden_size", "16", "-world_size", "1", "-gpu_ranks", "-log_file", str(log)])
    assert (tmp_path / "cnndm" / "run" / "model_step_3.pt").exists()
    for text in (log.read_text(), (tmp_path / "v.log").read_text()):
        ignored = [line for line in text.splitlines() if "ignored upstream keys" in line]
        assert len(ignored) == 1 and f"ignored upstream keys in {config}: " in ignored[0]
        assert all(f"{k} (" in ignored[0] for k in ("overwrite", "transforms", "weight"))


def test_dashed_keys_yaml_errors_and_refused_keys_name_the_config(tmp_path, capsys):
    """`-copy_attn: true` is the option, as on the command line; a YAML error names the file and line; the
    keys that would change the result are refused together, in one line naming the file."""
    from onmt import opts
    (tmp_path / "d.yaml").write_text("-copy_attn: true\n-layers: 2\n--rnn_size: 8\ndata: x\n")
    opt = opts.parse_with_given(opts.train_parser(), ["-config", str(tmp_path / "d.yaml")])
    assert opt.copy_attn and opt.layers == 2 and opt.rnn_size == 8 and {"copy_attn", "layers"} <= opt._given
    (tmp_path / "bad.yaml").write_text("data: x\nlayers: [1, 2\nrnn_size: 3\n")
    (tmp_path / "refused.yaml").write_text("data: x\nlabel_smoothing: 0.1\ncopy_attn_force: true\nrnn_sise: 4\n")
    for name, expected in (("bad.yaml", r"bad.yaml, line 3, column \d+: not valid YAML"),
                           ("refused.yaml", r"refused.yaml: 3 key\(s\) not available here, none of them run: "
                                            r".*-label_smoothing.*; .*-copy_attn_force.*; .*-rnn_sise \(did you mean")):
        with pytest.raises(SystemExit) as exc:
            opts.parse_with_given(opts.train_parser(), ["-config", str(tmp_path / name)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert __import__("re").search(expected, err) and "unicode string" not in err, err
