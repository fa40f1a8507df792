"""No command writes over its own inputs, by any spelling or link: each case is one line, a non-zero exit,
and the input byte for byte as it was (issue: "Nothing lost, ever")."""
import os

import pytest

from onmt.bin import evaluate as evaluate_bin
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main

TINY = ["-rnn_size", "8", "-word_vec_size", "8", "-layers", "1", "-batch_size", "8", "-seed", "3"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from helpers.e2e import random_pair_data, torch_threads
    folder = tmp_path_factory.mktemp("noloss")
    prefix = random_pair_data(str(folder), seed=3, n_examples=24, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), *TINY, "-train_steps", "1",
                                  "-valid_steps", "0"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_1.pt"), "src": str(folder / "src.txt"),
            "folder": folder}


def _refused(capsys, main, argv, *kept):
    """`main(argv)` stops in one line naming the clash, and every file of `kept` is unchanged."""
    before = {p: open(p, "rb").read() for p in kept}
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("would destroy the input" in err or "would replace" in err), err
    for p, data in before.items():
        assert open(p, "rb").read() == data, p
    return err.strip().splitlines()[-1]


def _spellings(tmp_path, target):
    """The same file as `target` by another spelling, a symbolic link and a hard link."""
    sym, hard = tmp_path / "sym", tmp_path / "hard"
    os.symlink(target, sym)
    os.link(target, hard)
    other = os.path.join(os.path.dirname(target), ".", os.path.basename(target))
    return [target, other, str(sym), str(hard)]


@pytest.mark.parametrize("spelling", range(4))
def test_translate_output_is_never_the_model(capsys, tiny, tmp_path, spelling):
    out = _spellings(tmp_path, tiny["ckpt"])[spelling]
    err = _refused(capsys, translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"], "-output", out],
                   tiny["ckpt"])
    assert "-output" in err and "-model" in err


@pytest.mark.parametrize("option, input_option", [("-output", "-src"), ("-output", "-tgt"), ("-attn_debug", "-model"),
                                                  ("-dump_beam", "-src"), ("-log_file", "-src"),
                                                  ("-log_file", "-model")])
def test_translate_outputs_are_never_inputs(capsys, tiny, tmp_path, option, input_option):
    tgt = tmp_path / "tgt.txt"
    tgt.write_text(open(tiny["src"]).read())
    inputs = {"-model": tiny["ckpt"], "-src": tiny["src"], "-tgt": str(tgt)}
    argv = ["-model", tiny["ckpt"], "-src", tiny["src"], "-tgt", str(tgt), "-output", str(tmp_path / "pred.txt")]
    argv += [option, inputs[input_option]]
    err = _refused(capsys, translate_bin.main, argv, *inputs.values())
    assert option in err and input_option in err
    assert not (tmp_path / "pred.txt").exists()


def test_evaluate_json_is_never_a_reference(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("a b\n")
    (tmp_path / "r.txt").write_text("a c\n")
    err = _refused(capsys, evaluate_bin.main, ["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "r.txt"),
                                                "-json", str(tmp_path / "r.txt")], tmp_path / "r.txt")
    assert "-json" in err and "-ref" in err


def test_preprocess_never_replaces_its_inputs(capsys, tmp_path):
    src, tgt = tmp_path / "train.src.txt", tmp_path / "train.tgt.txt"
    src.write_text("a b c\nb c d\n")
    tgt.write_text("a b\nb c\n")
    vocab = tmp_path / "data.vocab.txt"          # the file -save_data data writes
    vocab.write_text("a\nb\nc\nd\n")
    base = ["-train_src", str(src), "-train_tgt", str(tgt), "-share_vocab", "-dynamic_dict"]
    err = _refused(capsys, preprocess_bin.main, [*base, "-save_data", str(tmp_path / "data"), "-src_vocab", str(vocab)],
                   vocab, src, tgt)
    assert "-save_data" in err and "-src_vocab" in err
    err = _refused(capsys, preprocess_bin.main, [*base, "-save_data", str(tmp_path / "other"), "-log_file", str(src)],
                   src, tgt)
    assert "-log_file" in err and "-train_src" in err


def test_train_never_writes_over_its_inputs(capsys, tiny, tmp_path):
    base = ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"), *TINY, "-train_steps", "2"]
    err = _refused(capsys, train_bin.main, [*base, "-train_from", tiny["ckpt"], "-log_file", tiny["ckpt"]],
                   tiny["ckpt"])
    assert "-log_file" in err and "-train_from" in err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dropout: 0.1\n")
    err = _refused(capsys, train_bin.main, [*base, "-config", str(cfg), "-save_config", str(cfg)], cfg)
    assert "-save_config" in err and "-config" in err
