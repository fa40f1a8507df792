"""Hostile options: impossible numbers, two outputs on one file, device options, the API's arguments and
-keep_checkpoint's edge values. Each refusal is one line naming the option, a non-zero exit, no traceback
(docs/hostile-inputs.md). The entry points run in-process through `run_main`, as the console scripts call them.
"""

import pytest

from helpers.hostile import corpus, make_tiny, one_line_error, preprocess_argv
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.checkpoint import prune_checkpoints
from onmt.utils.cli import run_main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    return make_tiny(tmp_path_factory.mktemp("tiny"))


TRAIN_NUMBERS = [
    (["-learning_rate", "nan"], "-learning_rate must be positive, got nan"),
    (["-learning_rate", "-0.1"], "-learning_rate must be positive"),
    (["-learning_rate", "inf"], "-learning_rate must be positive, got inf"),
    (["-report_every", "0"], "-report_every must be positive"),
    (["-pool_factor", "0"], "-pool_factor must be positive"),
    (["-valid_batch_size", "0"], "-valid_batch_size must be positive"),
    (["-batch_size", "-3"], "-batch_size must be positive"),
    (["-rnn_size", "0"], "-rnn_size must be positive"),
    (["-word_vec_size", "0"], "-word_vec_size must be positive"),
    (["-layers", "0"], "-layers must be positive"),
    (["-enc_layers", "0"], "-enc_layers must be positive"),
    (["-dropout", "1.5"], "-dropout must be in [0, 1)"),
    (["-dropout", "-0.1"], "-dropout must be in [0, 1)"),
    (["-max_grad_norm", "-1"], "-max_grad_norm must be >= 0"),
    (["-adam_beta2", "1.0"], "-adam_beta2 must be in [0, 1)"),
    (["-param_init", "nan"], "-param_init must be >= 0, got nan"),
    (["-sample_every", "-1"], "-sample_every must be >= 0"),
]


@pytest.mark.parametrize("more_args,message", TRAIN_NUMBERS, ids=[" ".join(a) for a, _ in TRAIN_NUMBERS])
def test_impossible_training_numbers(capsys, tmp_path, more_args, message):
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"), *more_args])
    assert message in err
    assert list(tmp_path.iterdir()) == []          # refused before anything was written


TRANSLATE_NUMBERS = [
    (["-max_length", "0"], "-max_length must be positive"),
    (["-max_length", "-5"], "-max_length must be positive"),
    (["-min_length", "-1"], "-min_length must be >= 0"),
    (["-min_length", "20", "-max_length", "10"], "-min_length 20 is above -max_length 10"),
    (["-block_ngram_repeat", "-2"], "-block_ngram_repeat must be >= 0"),
    (["-alpha", "nan"], "-alpha must be >= 0, got nan"),
    (["-batch_size", "0"], "-batch_size must be positive"),
    (["-beam_size", "0"], "-beam_size must be >= 1"),
]


@pytest.mark.parametrize("more_args,message", TRANSLATE_NUMBERS, ids=[" ".join(a) for a, _ in TRANSLATE_NUMBERS])
def test_impossible_translation_numbers(capsys, tmp_path, more_args, message):
    out = tmp_path / "pred.txt"
    err = one_line_error(capsys, translate_bin.main,
                         ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s.txt"), "-output", str(out),
                          *more_args])
    assert message in err
    assert not out.exists()


PREPROCESS_NUMBERS = [
    (["-src_seq_length_trunc", "-1"], "-src_seq_length_trunc must be >= 0, got -1"),   # was: last word dropped
    (["-tgt_seq_length_trunc", "-2"], "-tgt_seq_length_trunc must be >= 0, got -2"),
    (["-src_seq_length", "0"], "-src_seq_length must be positive, got 0"),
    (["-tgt_seq_length", "-1"], "-tgt_seq_length must be positive, got -1"),
    (["-src_words_min_frequency", "-1"], "-src_words_min_frequency must be >= 0"),
    (["-report_every", "-1"], "-report_every must be >= 0"),
]


@pytest.mark.parametrize("more_args,message", PREPROCESS_NUMBERS, ids=[" ".join(a) for a, _ in PREPROCESS_NUMBERS])
def test_impossible_preprocessing_numbers(capsys, tmp_path, more_args, message):
    src, tgt = corpus(tmp_path / "c")
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv(src, tgt, str(tmp_path / "p" / "d"), *more_args))
    assert message in err and not (tmp_path / "p").exists()


@pytest.mark.parametrize("more_args,message", [(["-gpu", "0"], "-gpu 0 given but CUDA is not available"),
                                               (["-precision", "fp16"], "-precision fp16")])
def test_tune_decoding_device_options_checked_at_start(capsys, tmp_path, more_args, message):
    """onmt_tune_decoding -gpu 0 on a machine without CUDA was a traceback after reading the inputs."""
    import torch

    from onmt.bin import tune_decoding as tune_bin
    if torch.cuda.is_available():
        pytest.skip("a CUDA machine accepts these")
    err = one_line_error(capsys, tune_bin.main, ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s.txt"),
                                                 "-tgt", str(tmp_path / "t.txt"), "-output", str(tmp_path / "o.yaml"),
                                                 *more_args])
    assert message in err and list(tmp_path.iterdir()) == []


TRAIN_PAIRS = [
    (["-save_config", "c.yaml", "-log_file", "./c.yaml"], "-log_file and -save_config are both"),
    (["-profile", "1", "-profile_trace", "t.json", "-log_file", "t.json"], "-log_file and -profile_trace are both"),
    (["-profile", "1", "-log_file", "out/m_profile.json"], "-log_file and -profile_trace are both"),
    (["-log_file", "out/m.lock"], "-log_file out/m.lock is one of the files of -save_model out/m"),
    (["-log_file", "out/../out/m_best.pt"], "is one of the files of -save_model out/m"),
    (["-log_file", "out/m_step_7.pt"], "is one of the files of -save_model out/m"),
]


@pytest.mark.parametrize("more_args,message", TRAIN_PAIRS, ids=[" ".join(a) for a, _ in TRAIN_PAIRS])
def test_train_outputs_on_one_file_are_refused_before_the_log_is_opened(capsys, tmp_path, monkeypatch, more_args,
                                                                       message):
    """The log was lost: replaced by the saved options, the trace, a checkpoint, or removed with the lock."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    err = one_line_error(capsys, train_bin.main, ["-data", "none", "-save_model", "out/m", *more_args])
    assert message in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]       # not even the log was created


PREPROCESS_PAIRS = [
    (["-save_config", "c.yaml", "-log_file", "c.yaml"], "-log_file and -save_config are both"),
    (["-log_file", "p/data.vocab.txt"], "-log_file p/data.vocab.txt is one of the files of -save_data p/data"),
    (["-log_file", "p/data.meta.json"], "is one of the files of -save_data p/data"),
    (["-log_file", "p/data.lock"], "is one of the files of -save_data p/data"),
    (["-save_config", "p/data.train.0.pt"], "-save_config p/data.train.0.pt is one of the files of -save_data"),
]


@pytest.mark.parametrize("more_args,message", PREPROCESS_PAIRS, ids=[" ".join(a) for a, _ in PREPROCESS_PAIRS])
def test_preprocess_outputs_on_one_file_are_refused(capsys, tmp_path, monkeypatch, more_args, message):
    src, tgt = corpus(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv(src, tgt, "p/data", *more_args))
    assert message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "p"] and not list((tmp_path / "p").iterdir())


def test_a_log_beside_the_dataset_is_fine(tmp_path, monkeypatch):
    src, tgt = corpus(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, "p/data", "-log_file", "p/data.log"))
    assert (tmp_path / "p" / "data.log").stat().st_size > 0 and (tmp_path / "p" / "data.meta.json").exists()


@pytest.mark.parametrize("keep", [0, -1])
def test_keep_checkpoint_zero_or_negative_deletes_nothing(tmp_path, keep):
    """OpenNMT-py reads -keep_checkpoint 0 as 'delete nothing'; it once deleted every checkpoint here."""
    paths = []
    for step in (1, 2, 3):
        p = tmp_path / f"m_step_{step}.pt"
        p.write_bytes(b"x")
        paths.append(str(p))
        paths = prune_checkpoints(paths, keep)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m_step_1.pt", "m_step_2.pt", "m_step_3.pt"]


def test_keep_checkpoint_n_keeps_the_newest_n(tmp_path):
    paths = []
    for step in (1, 2, 3):
        p = tmp_path / f"m_step_{step}.pt"
        p.write_bytes(b"x")
        paths = prune_checkpoints(paths + [str(p)], 2)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m_step_2.pt", "m_step_3.pt"]


def test_min_length_above_the_checkpoints_max_length_is_refused(capsys, tiny, tmp_path):
    """-min_length alone, above the maximum length the checkpoint's data allows (its rule when
    -max_length is not given), was silently ignored: max_length wins in the search."""
    out = tmp_path / "pred.txt"
    err = one_line_error(capsys, translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"],
                                                      "-output", str(out), "-min_length", "60"])
    assert "-min_length 60 is above the maximum prediction length 50" in err and not out.exists()


@pytest.mark.parametrize("device", ["meta", "mps", "xla", "vulkan"])
def test_api_device_other_than_cpu_or_cuda_is_an_option_error_naming_it(device):
    """mps / xla: a bare RuntimeError from deep inside torch; meta: loaded, then NotImplementedError."""
    from onmt.api import Summarizer
    from onmt.errors import OptionError
    with pytest.raises(OptionError, match=rf"device='{device}': this toolkit runs on 'cpu' or 'cuda'"):
        Summarizer.load("any.pt", device=device)


@pytest.mark.parametrize("text, message", [("w1\x00w2", r"texts\[1\]: a NUL character at position 2"),
                                           ("w1 \ud800 w2", r"texts\[1\]: a lone surrogate '\\ud800' at position 3")])
def test_api_text_that_is_no_text_is_a_value_error_naming_it(text, message):
    """A NUL: summarized as one odd token (the file readers refuse it); a lone surrogate: a UnicodeEncodeError
    from onmt/inputters/numericalize.py."""
    from onmt.api import check_texts
    with pytest.raises(ValueError, match=message):
        list(check_texts(["fine", text]))
