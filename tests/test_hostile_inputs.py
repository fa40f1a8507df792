"""Hostile and broken inputs: each answered by a one-line message naming the option, file or line, a
non-zero exit, no traceback, and nothing half-written left behind (issue: every hostile input clean).

The entry points run in-process through `run_main` (what the console scripts call), so each row costs
milliseconds; the message is what a user sees on stderr.
"""
import pytest

from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.checkpoint import prune_checkpoints
from onmt.utils.cli import run_main


def one_line_error(capsys, main, argv):
    """Run `main(argv)` as the console script does; -> the single stderr line (exit status checked)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


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


@pytest.mark.parametrize("extra,message", TRAIN_NUMBERS, ids=[" ".join(a) for a, _ in TRAIN_NUMBERS])
def test_impossible_training_numbers(capsys, tmp_path, extra, message):
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"), *extra])
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


@pytest.mark.parametrize("extra,message", TRANSLATE_NUMBERS, ids=[" ".join(a) for a, _ in TRANSLATE_NUMBERS])
def test_impossible_translation_numbers(capsys, tmp_path, extra, message):
    out = tmp_path / "pred.txt"
    err = one_line_error(capsys, translate_bin.main,
                         ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s.txt"), "-output", str(out),
                          *extra])
    assert message in err
    assert not out.exists()


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


# --------------------------------------------------------------------------- evaluate
def _evaluate(capsys, argv):
    from onmt.bin import evaluate as evaluate_bin
    return one_line_error(capsys, evaluate_bin.main, argv)


def test_evaluate_two_empty_files_is_an_error_not_a_table_of_zeros(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("")
    (tmp_path / "r.txt").write_text("")
    err = _evaluate(capsys, ["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "r.txt")])
    assert "empty" in err and "p.txt" in err


@pytest.mark.parametrize("which", ["pred", "ref"])
def test_evaluate_folder_as_input(capsys, tmp_path, which):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    args = {"pred": str(tmp_path / "a.txt"), "ref": str(tmp_path / "a.txt"), which: str(tmp_path / "d")}
    err = _evaluate(capsys, ["-pred", args["pred"], "-ref", args["ref"]])
    assert "d: cannot read" in err


@pytest.mark.parametrize("target", ["missing/x.json", "d"])
def test_evaluate_json_checked_before_scoring(capsys, tmp_path, target):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    err = _evaluate(capsys, ["-pred", str(tmp_path / "a.txt"), "-ref", str(tmp_path / "a.txt"),
                             "-json", str(tmp_path / target)])
    assert "-json" in err and ("does not exist" in err or "is a folder" in err)
    assert "ROUGE-1" not in capsys.readouterr().out      # nothing was scored


def test_atomic_text_write_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    import errno
    import os

    from onmt.utils.cli import UserError
    from onmt.utils.files import write_text_atomic
    target = tmp_path / "out.json"
    target.write_text("old\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError, match="-json out.json: cannot write .*No space left on device"):
        write_text_atomic(str(target), "new\n", "-json out.json")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


# --------------------------------------------------------------------------- data
def test_training_on_a_split_without_examples_stops_at_once(capsys, tmp_path):
    """Such data (written by an earlier preprocess.py, which kept no example with exit 0) used to make
    training spin forever looking for a batch."""
    import json

    from e2e_helpers import random_pair_data
    prefix = random_pair_data(str(tmp_path), seed=1, n_examples=8, max_len=6, target=lambda w: w)
    meta_path = f"{prefix}.meta.json"
    meta = json.load(open(meta_path))
    meta["shard_sizes"]["train"] = [0]
    meta["summary"]["train"].update(kept=0, drops={"src_too_long": 8})
    json.dump(meta, open(meta_path, "w"))
    err = one_line_error(capsys, train_bin.main, ["-data", prefix, "-save_model", str(tmp_path / "m"),
                                                  "-rnn_size", "8", "-word_vec_size", "8", "-train_steps", "5"])
    assert "the training split has no example" in err and "src_too_long 8" in err
    assert not list(tmp_path.glob("m*"))


def _corpus(folder, n=12):
    import os
    os.makedirs(folder, exist_ok=True)
    src = [" ".join(f"w{(i + j) % 9}" for j in range(3 + i % 4)) for i in range(n)]
    tgt = [" ".join(s.split()[:2]) for s in src]
    paths = []
    for name, lines in (("train.src.txt", src), ("train.tgt.txt", tgt)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(os.path.join(folder, name))
    return paths


def _preprocess_argv(src, tgt, save, *extra):
    return ["-train_src", src, "-train_tgt", tgt, "-save_data", save, "-share_vocab", "-dynamic_dict",
            "-src_vocab_size", "20", "-tgt_vocab_size", "10", *extra]


def test_preprocess_keeping_no_example_fails_and_names_the_option(capsys, tmp_path):
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = _corpus(tmp_path / "c")
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv(src, tgt, str(tmp_path / "p" / "data"),
                                                                       "-src_seq_length", "2"))
    assert "no training example kept" in err and "-src_seq_length 2" in err and "-src_seq_length_trunc" in err
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == []       # nothing written, no staging folder


@pytest.mark.parametrize("fault", ["missing_src", "bad_line", "no_example"])
def test_preprocess_rerun_that_fails_leaves_the_previous_dataset_intact(capsys, tmp_path, fault):
    """Re-running preprocess over a good dataset used to delete it before checking the new inputs."""
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = _corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()
    if fault == "missing_src":
        argv = _preprocess_argv(str(tmp_path / "c" / "typo.txt"), tgt, save)
    elif fault == "bad_line":
        bad = tmp_path / "c" / "bad.src.txt"
        bad.write_bytes(open(src, "rb").read().replace(b"w1", b"\xff\xfe", 1))
        argv = _preprocess_argv(str(bad), tgt, save)
    else:
        argv = _preprocess_argv(src, tgt, save, "-tgt_seq_length", "1")
    one_line_error(capsys, preprocess_bin.main, argv)
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_shard_of_another_preprocessing_run_is_refused(capsys, tmp_path):
    import shutil

    from onmt.inputters.dataset import ShardedDataset
    from onmt.bin import preprocess as preprocess_bin
    from onmt.utils.cli import UserError
    src, tgt = _corpus(tmp_path / "c")
    a, b = str(tmp_path / "a" / "data"), str(tmp_path / "b" / "data")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, a))
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, b, "-seed", "7"))
    shutil.copy(f"{b}.train.0.pt", f"{a}.train.0.pt")              # same shape, another run
    data = ShardedDataset.from_data(a, "train", 4)
    with pytest.raises(UserError, match="written by another preprocessing run"):
        next(iter(data.iter_epoch(0)))


def test_preprocess_run_after_a_killed_one_removes_its_staging_folder(tmp_path):
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = _corpus(tmp_path / "c")
    dead = tmp_path / "p" / ".data.staging999999999"              # no such process
    dead.mkdir(parents=True)
    (dead / "data.train.0.pt").write_bytes(b"partial")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, str(tmp_path / "p" / "data")))
    assert not dead.exists() and (tmp_path / "p" / "data.meta.json").exists()
