"""Hostile and broken inputs: each answered by a one-line message naming the option, file or line, a
non-zero exit, no traceback, and nothing half-written left behind (issue: every hostile input clean).

The entry points run in-process through `run_main` (what the console scripts call), so each row costs
milliseconds; the message is what a user sees on stderr.
"""
import re

import pytest

from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.checkpoint import prune_checkpoints
from onmt.utils.cli import run_main

LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+\] ")   # the progress log (stderr)


def one_line_error(capsys, main, argv):
    """Run `main(argv)` as the console script does; -> the single stderr line (exit status checked)
    besides the progress log of what ran before the error (train.py and translate.py log to stderr)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert "Traceback" not in err and len(lines) == 1 and err.endswith(lines[0]), err
    return lines[0]


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
    assert f"{tmp_path / 'd'} is a folder" in err


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

    from onmt.errors import UserError
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

    from helpers.e2e import random_pair_data
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


def _preprocess_argv(src, tgt, save, *more_args):
    return ["-train_src", src, "-train_tgt", tgt, "-save_data", save, "-share_vocab", "-dynamic_dict",
            "-src_vocab_size", "20", "-tgt_vocab_size", "10", *more_args]


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

    from onmt.bin import preprocess as preprocess_bin
    from onmt.errors import UserError
    from onmt.inputters.dataset import ShardedDataset
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


# --------------------------------------------------------------------------- shared toy data and checkpoint
TINY = ["-rnn_size", "8", "-word_vec_size", "8", "-layers", "1", "-batch_size", "8", "-seed", "3"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    from helpers.e2e import random_pair_data, torch_threads
    folder = tmp_path_factory.mktemp("tiny")
    prefix = random_pair_data(str(folder), seed=3, n_examples=24, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), *TINY, "-train_steps", "2"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_2.pt"), "src": str(folder / "src.txt")}


def _train_from(capsys, tiny, ckpt, tmp_path, *more_args):
    return one_line_error(capsys, train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"),
                                                   "-train_from", str(ckpt), "-train_steps", "3", *more_args])


def _translate(capsys, tiny, ckpt, out, *more_args):
    return one_line_error(capsys, translate_bin.main, ["-model", str(ckpt), "-src", tiny["src"], "-output", str(out),
                                                       "-beam_size", "1", "-max_length", "4", *more_args])


def _enospc(*a, **k):
    import errno
    raise OSError(errno.ENOSPC, "No space left on device")


# --------------------------------------------------------------------------- failing late: outputs checked first
@pytest.mark.parametrize("case", ["parent_is_a_file", "names_a_folder", "ends_with_slash", "read_only_folder"])
def test_unusable_save_model_fails_before_any_work(capsys, tmp_path, monkeypatch, case):
    """Found at the first checkpoint (hours in, with a traceback) before; now in the first second."""
    import os
    (tmp_path / "file").write_text("x")
    (tmp_path / "runs").mkdir()
    save, expect = {"parent_is_a_file": (tmp_path / "file" / "sub" / "m", "is a file, not a folder"),
                    "names_a_folder": (tmp_path / "runs", "is a folder; give a prefix of file names such as"),
                    "ends_with_slash": (f"{tmp_path / 'new'}/", "is a folder"),
                    "read_only_folder": (tmp_path / "runs" / "m", "is not writable")}[case]
    if case == "read_only_folder":
        os.chmod(tmp_path / "runs", 0o555)
        real = os.access           # root writes anywhere: say what a user's os.access says
        monkeypatch.setattr(os, "access", lambda p, m, **k: os.path.abspath(p) != str(tmp_path / "runs")
                            and real(p, m, **k))
    import onmt.inputters.vocab_builder as vb
    monkeypatch.setattr(vb, "load_vocabs", lambda *a: pytest.fail("the data was read"))
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"), "-save_model", str(save)])
    os.chmod(tmp_path / "runs", 0o755)
    assert "-save_model" in err and expect in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "runs"] and not list((tmp_path / "runs").iterdir())


def test_save_model_in_a_folder_no_file_can_be_created_in(capsys, tmp_path, monkeypatch):
    """What os.access cannot tell (a read-only mount, /proc, root's rights): a file is tried."""
    import tempfile
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: _erofs())
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"),
                                                  "-save_model", str(tmp_path / "runs" / "m")])
    assert f"cannot write into folder {tmp_path / 'runs'}: Read-only file system" in err
    assert not list((tmp_path / "runs").iterdir())


def _erofs():
    import errno
    raise OSError(errno.EROFS, "Read-only file system")


@pytest.mark.parametrize("case", ["missing_folder", "a_folder"])
def test_translate_output_checked_before_loading_anything(capsys, tmp_path, monkeypatch, case):
    (tmp_path / "out").mkdir()
    out, expect = {"missing_folder": (tmp_path / "nowhere" / "p.txt", "does not exist"),
                   "a_folder": (tmp_path / "out", "is a folder, not a file")}[case]
    monkeypatch.setattr(translate_bin, "load_session", lambda *a: pytest.fail("the checkpoint was loaded"))
    err = one_line_error(capsys, translate_bin.main, ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s"),
                                                      "-output", str(out)])
    assert f"-output {out}" in err and expect in err


# --------------------------------------------------------------------------- a full disk: one line, nothing partial
@pytest.mark.parametrize("which", ["-output", "-attn_debug"])
def test_full_disk_at_translation_output(capsys, tiny, tmp_path, monkeypatch, which):
    import os
    out, dump = tmp_path / "pred.txt", tmp_path / "dump.npz"
    out.write_text("previous\n")
    monkeypatch.setattr(os, "replace", _enospc)
    more_args = ["-attn_debug", str(dump)] if which == "-attn_debug" else []
    err = _translate(capsys, tiny, tiny["ckpt"], out, *more_args)
    path = dump if which == "-attn_debug" else out
    assert f"{which} {path}: cannot write {path}: No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.txt"] and out.read_text() == "previous\n"


def test_full_disk_at_checkpoint_save_leaves_no_partial_checkpoint(capsys, tiny, tmp_path, monkeypatch):
    """A real ENOSPC from the kernel: the temporary checkpoint is /dev/full."""
    import os
    import tempfile
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    real = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda prefix="", suffix="", dir=None:
                        (os.open("/dev/full", os.O_WRONLY), os.path.join(dir, prefix + "x" + suffix))
                        if prefix.startswith("m_step_") else real(prefix=prefix, suffix=suffix, dir=dir))
    err = one_line_error(capsys, train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                                  "-train_steps", "1"])
    assert f"checkpoint: cannot write {tmp_path / 'm_step_1.pt'}: No space left on device" in err
    assert list(tmp_path.iterdir()) == []


def test_full_disk_at_shard_write_keeps_the_previous_dataset(capsys, tmp_path, monkeypatch):
    import torch

    from onmt.bin import preprocess as preprocess_bin
    src, tgt = _corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()

    def half_then_full(obj, f, *a, **k):
        f.write(b"PK\x03\x04 partial")
        _enospc()
    monkeypatch.setattr(torch, "save", half_then_full)
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv(src, tgt, save, "-seed", "9"))
    assert "shard: cannot write" in err and "data.train.0.pt: No space left on device" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_full_disk_at_token_cache_keeps_the_previous_dataset(capsys, tmp_path, monkeypatch):
    """The cache between the passes (token_cache.py) written to /dev/full: the kernel's ENOSPC."""
    import builtins
    import os

    import onmt.inputters.token_cache as token_cache
    from onmt.bin import preprocess as preprocess_bin
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    src, tgt = _corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()
    monkeypatch.setattr(token_cache, "open", lambda path, mode="r", *a, **k:
                        builtins.open("/dev/full" if mode == "wb" else path, mode, *a, **k), raising=False)
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv(src, tgt, save))
    assert "token cache: cannot write" in err and "No space left on device" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_oserror_without_a_handler_is_still_one_line(capsys, tmp_path):
    """run_main's last resort: any OSError (here a folder read as a file) is one line naming the file."""
    def main(argv):
        open(tmp_path)
    err = one_line_error(capsys, main, [])
    assert str(tmp_path) in err and "Is a directory" in err


# --------------------------------------------------------------------------- tracebacks: broken input files
@pytest.mark.parametrize("option", ["-src", "-tgt"])
def test_translate_invalid_utf8_names_file_and_line(capsys, tiny, tmp_path, option):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"w1 w2\nw3 \xff\xfe w4\nw5\n")
    src = str(bad) if option == "-src" else tiny["src"]
    argv = ["-model", tiny["ckpt"], "-src", src, "-output", str(tmp_path / "p.txt")]
    if option == "-tgt":
        argv += ["-tgt", str(bad)]
    err = one_line_error(capsys, translate_bin.main, argv)
    assert f"{option}: {bad}: line 2: invalid UTF-8" in err
    assert not (tmp_path / "p.txt").exists()


def test_translate_src_that_is_a_folder(capsys, tiny, tmp_path):
    (tmp_path / "d").mkdir()
    err = one_line_error(capsys, translate_bin.main, ["-model", tiny["ckpt"], "-src", str(tmp_path / "d"),
                                                      "-output", str(tmp_path / "p.txt")])
    assert f"-src: {tmp_path / 'd'} is a folder" in err


def _damaged(tiny, tmp_path, kind):
    """A copy of the tiny checkpoint damaged as `kind` says; -> (path, expected words of the message)."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    if kind == "rnn_size_edited":
        ck["opt"]["rnn_size"] = 12
        expect = "does not fit"
    elif kind == "weight_missing":
        name = sorted(ck["model"])[0]
        del ck["model"][name]
        expect = f"missing {name}"
    elif kind == "weight_extra":
        ck["model"]["decoder.extra.weight"] = torch.zeros(2)
        expect = "unexpected decoder.extra.weight"
    elif kind == "weight_resized":
        name = sorted(ck["model"])[-1]
        ck["model"][name] = torch.zeros(3, 3)
        expect = f"{name} is 3x3 in the checkpoint"
    elif kind == "option_deleted":
        del ck["opt"]["rnn_size"]
        expect = "its options lack rnn_size"
    elif kind in ("nan", "inf"):
        name = sorted(ck["model"])[1]
        ck["model"][name].view(-1)[0] = float(kind)
        expect = f"has non-finite weights in {name}"
    elif kind == "model_not_a_dict":
        ck["model"] = [1, 2]
        expect = "is damaged: its model is a list"
    path = tmp_path / f"{kind}.pt"
    torch.save(ck, path)
    return path, expect


DAMAGE = ["rnn_size_edited", "weight_missing", "weight_extra", "weight_resized", "option_deleted", "nan", "inf",
          "model_not_a_dict"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_checkpoint_at_translate(capsys, tiny, tmp_path, kind):
    """Options and weights that disagree gave a size-mismatch or AttributeError traceback; NaN weights
    translated every line to an empty line."""
    path, expect = _damaged(tiny, tmp_path, kind)
    err = _translate(capsys, tiny, path, tmp_path / "p.txt")
    assert str(path) in err and expect in err
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("option, value, expect", [
    ("dropout", 1.5, "-dropout must be in [0, 1), got 1.5"),
    ("rnn_size", 0, "-rnn_size must be positive, got 0"),
    ("layers", 0, "-layers must be positive"),
    ("brnn", True, None),                   # a valid change: the weights then do not fit
    ("global_attention", "none", "-copy_attn needs attention"),
])
def test_checkpoint_with_impossible_options_is_refused_at_translate(capsys, tiny, tmp_path, option, value, expect):
    """translate.py validates a checkpoint's options as train.py did, before building its model."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    if option == "global_attention":   # a copy model (its -copy_attn alone would contradict its -model_family)
        ck["opt"].update(copy_attn=True, model_family="copy")
    ck["opt"][option] = value
    path = tmp_path / "bad.pt"
    torch.save(ck, path)
    err = _translate(capsys, tiny, path, tmp_path / "p.txt")
    assert str(path) in err and (expect or "does not fit") in err
    assert ("its options are invalid" in err) == (expect is not None)
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_checkpoint_at_train_from(capsys, tiny, tmp_path, kind):
    path, expect = _damaged(tiny, tmp_path, kind)
    err = _train_from(capsys, tiny, path, tmp_path)
    assert str(path) in err and expect in err
    assert not list(tmp_path.glob("r_step_*"))


@pytest.mark.parametrize("kind", ["truncated", "garbage", "empty", "folder"])
@pytest.mark.parametrize("program", ["translate", "train"])
def test_unreadable_checkpoint(capsys, tiny, tmp_path, kind, program):
    bad = tmp_path / f"{kind}.pt"
    if kind == "truncated":
        whole = open(tiny["ckpt"], "rb").read()
        bad.write_bytes(whole[: len(whole) // 3])
    elif kind == "garbage":
        bad.write_bytes(bytes(range(256)) * 8)
    elif kind == "empty":
        bad.write_bytes(b"")
    else:
        bad.mkdir()
    if program == "translate":
        err = _translate(capsys, tiny, bad, tmp_path / "p.txt")
    else:
        err = _train_from(capsys, tiny, bad, tmp_path)
    assert str(bad) in err
    assert not (tmp_path / "p.txt").exists() and not list(tmp_path.glob("r_step_*"))


def test_option_a_checkpoint_lacks_may_be_given_on_the_command_line(capsys, tiny, tmp_path):
    """A model option a (hand-made or older) checkpoint lacks is refused unless given: a default could
    silently change the model."""
    import torch
    ck = torch.load(tiny["ckpt"], weights_only=True)
    del ck["opt"]["dropout"]
    torch.save(ck, tmp_path / "old.pt")
    run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"), "-dropout", "0.1",
                              "-train_from", str(tmp_path / "old.pt"), "-train_steps", "3"])
    assert torch.load(tmp_path / "r_step_3.pt", weights_only=True)["opt"]["dropout"] == 0.1


# --------------------------------------------------------------------------- ^C during start-up
@pytest.mark.parametrize("where", ["train:load_vocabs", "train:build_model", "translate:load_session",
                                   "launch:imports"])
def test_ctrl_c_during_start_up_is_one_line_and_130(capsys, tiny, tmp_path, monkeypatch, where):
    import importlib

    import onmt.inputters.vocab_builder as vb
    import onmt.model_builder as mb
    from onmt.utils.cli import launch

    def interrupt(*a, **k):
        raise KeyboardInterrupt
    program, function = where.split(":")
    owner = {"load_vocabs": vb, "build_model": mb, "load_session": translate_bin, "imports": importlib}[function]
    monkeypatch.setattr(owner, "import_module" if function == "imports" else function, interrupt)
    with pytest.raises(SystemExit) as exc:
        if program == "launch":
            launch("onmt.bin.train")
        elif program == "train":
            run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY])
        else:
            run_main(translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"],
                                          "-output", str(tmp_path / "p.txt")])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 130 and err.endswith("interrupted") and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- a closed pipe
@pytest.mark.parametrize("tool", ["remove_eos"])
def test_writing_into_a_closed_pipe_exits_quietly(tmp_path, tool):
    """`tools/remove_eos.py < big | head -1`: no BrokenPipeError traceback; status 141 (SIGPIPE's)."""
    import os
    import subprocess
    import sys

    from helpers.e2e import ROOT
    big = tmp_path / "in.txt"
    big.write_text("a </s> b\n" * 200000)
    with open(big, "rb") as stdin:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", f"{tool}.py")], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout.readline() == b"a . b\n"
        proc.stdout.close()                                   # what head does after its line
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and err == b"", err.decode()


# --------------------------------------------------------------------------- prepare on an incomplete folder
def test_prepare_cnndm_on_a_folder_holding_only_train_src(capsys, tmp_path):
    from onmt.prepare import cnndm
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "train.src.txt").write_text("a b c\n")
    err = one_line_error(capsys, cnndm.main, ["-input", str(tmp_path / "in"), "-output", str(tmp_path / "out")])
    assert "incomplete" in err and "train.tgt.txt" in err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- hangs: the worker pool's error path
class Hung(Exception):
    pass


class deadline:
    """Raise Hung in the main thread if the block takes more than `seconds` (SIGALRM)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def _alarm(self, *a):
        raise Hung(f"still running after {self.seconds} s")

    def __enter__(self):
        import signal
        self.previous = signal.signal(signal.SIGALRM, self._alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        import signal
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


def _big_result(i):
    import time
    time.sleep((i * 7 % 5) / 1000)
    return bytes(300_000)              # larger than a pipe's buffer: its writer blocks until read


def _items_then_error(n):
    yield from range(n)
    raise ValueError("invalid UTF-8 at line so-and-so")


def _children():
    import multiprocessing as mp
    return [p for p in mp.active_children() if p.is_alive()]


def test_worker_pool_error_while_large_results_are_in_flight_never_hangs():
    """multiprocessing.Pool.terminate() hung here within ~10 runs (a worker killed while holding the
    result queue's lock); onmt/inputters/parallel.py shares no lock and kills its workers."""
    from onmt.inputters.parallel import ordered_map
    for run in range(40):
        with deadline(20):
            with pytest.raises(ValueError, match="invalid UTF-8"):
                for _ in ordered_map(_big_result, _items_then_error(2 + run % 7), workers=2):
                    pass
    assert _children() == []


def _fail_at_5(i):
    if i == 5:
        raise KeyError(f"bad item {i}")
    return i


def test_worker_pool_error_in_a_worker_is_raised_once_in_order():
    from onmt.inputters.parallel import ordered_map
    got = []
    with deadline(20), pytest.raises(KeyError, match="bad item 5") as exc:
        for x in ordered_map(_fail_at_5, range(40), workers=2, window=6):
            got.append(x)
    assert got == [0, 1, 2, 3, 4] and "in a worker process" in "".join(getattr(exc.value, "__notes__", []))
    assert _children() == []


def _kill_self_at_3(i):
    import os
    import signal
    if i == 3:
        os.kill(os.getpid(), signal.SIGKILL)      # as the out-of-memory killer would
    return i


def test_worker_pool_worker_killed_is_an_error_not_a_hang():
    from onmt.inputters.parallel import WorkerDied, ordered_map
    with deadline(20), pytest.raises(WorkerDied, match="killed by signal 9"):
        list(ordered_map(_kill_self_at_3, range(20), workers=2))
    assert _children() == []


def test_worker_pool_consumer_stopping_early_leaves_no_worker():
    from onmt.inputters.parallel import ordered_map
    with deadline(20):
        it = ordered_map(_big_result, range(50), workers=2)
        next(it)
        it.close()
    assert _children() == []


def test_preprocess_num_threads_2_on_invalid_utf8_never_hangs(capsys, tmp_path):
    """Once in 56 runs `preprocess.py -num_threads 2` hung on invalid UTF-8 (the Pool's terminate);
    40 runs with the bad line at different places (train source / target, valid), chunks in flight."""
    import random

    from onmt.bin import preprocess as preprocess_bin
    rng = random.Random(5)
    lines = [" ".join(f"w{rng.randrange(300)}" for _ in range(12)).encode() for _ in range(4500)]
    tgt = [b" ".join(line.split()[:4]) for line in lines]
    for run in range(40):
        which = ("src", "tgt", "valid")[run % 3]
        bad = rng.randrange(len(lines))
        files = {}
        for name, content in (("src", lines), ("tgt", tgt), ("valid", lines)):
            body = list(content)
            if name == which:
                body[bad] = body[bad].replace(b"w", b"\xff", 1)
            files[name] = tmp_path / f"{name}.txt"
            files[name].write_bytes(b"\n".join(body) + b"\n")
        argv = ["-train_src", str(files["src"]), "-train_tgt", str(files["tgt"]), "-valid_src", str(files["valid"]),
                "-valid_tgt", str(files["tgt"]), "-save_data", str(tmp_path / "p" / "data"), "-num_threads", "2"]
        with deadline(30):
            err = one_line_error(capsys, preprocess_bin.main, argv)
        assert f"{files[which].name}: line {bad + 1}: invalid UTF-8" in err, (run, err)
    assert _children() == [] and list((tmp_path / "p").iterdir()) == []


# --------------------------------------------------------------------------- signals during training
def _params(path):
    import torch
    return torch.load(path, weights_only=True)["model"]


def _same_params(a, b):
    import torch
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sigterm_during_training_saves_the_step_and_resumes_exactly(tiny, tmp_path):
    """Cluster preemption: SIGTERM once the first step is logged -> a checkpoint of the current step
    (with its data position and RNG), one line, exit 143; resuming it gives the uninterrupted run's
    parameters bit for bit."""
    import os
    import signal
    import subprocess
    import sys

    from helpers.e2e import ROOT, torch_threads
    steps = ["-train_steps", "60", "-report_every", "1", "-valid_steps", "0"]
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), "-data", tiny["prefix"],
                             "-save_model", str(tmp_path / "b"), *TINY, *steps], cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines = []
    try:
        with deadline(120):
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if "Step 1/60" in line:
                    proc.send_signal(signal.SIGTERM)
                    break
            lines += proc.stderr.read().splitlines()
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "\n".join(lines)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert [line for line in lines if not LOG_LINE.match(line)] == [lines[-1]]
    m = re.fullmatch(r"train\.py: stopped by SIGTERM at step (\d+); saved (.*_step_(\d+)\.pt)", lines[-1])
    assert m and m.group(1) == m.group(3) and 1 <= int(m.group(1)) < 60, lines[-1]
    saved = m.group(2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [os.path.basename(saved)]     # nothing partial
    with torch_threads(1):
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "b"), *TINY, *steps,
                                  "-train_from", saved])
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "a"), *TINY, *steps])
    assert _same_params(_params(tmp_path / "a_step_60.pt"), _params(tmp_path / "b_step_60.pt"))


def test_sigkill_mid_training_resumes_from_the_last_checkpoint_exactly(tiny, tmp_path):
    """SIGKILL (the out-of-memory killer, a lost node) cannot be caught: whatever moment it strikes,
    even during a checkpoint write, the newest complete checkpoint loads and resuming it gives the
    uninterrupted run's parameters bit for bit; no partial checkpoint is ever left under its final name."""
    import os
    import signal
    import subprocess
    import sys

    from helpers.e2e import ROOT, torch_threads
    steps = ["-train_steps", "60", "-report_every", "1", "-valid_steps", "0", "-save_checkpoint_steps", "3"]
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), "-data", tiny["prefix"],
                             "-save_model", str(tmp_path / "b"), *TINY, *steps], cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        with deadline(120):
            for line in proc.stderr:
                if "Step 7/60" in line:           # two checkpoints written, the third on its way
                    proc.send_signal(signal.SIGKILL)
                    break
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    saved = sorted(tmp_path.glob("b_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    assert saved
    for path in saved:                            # a killed write leaves at most a temporary file
        _params(path)
    newest = saved[-1]
    assert int(newest.stem.rsplit("_", 1)[1]) < 60
    with torch_threads(1):
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "b"), *TINY, *steps,
                                  "-train_from", str(newest)])
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "a"), *TINY, *steps])
    assert _same_params(_params(tmp_path / "a_step_60.pt"), _params(tmp_path / "b_step_60.pt"))


def _signal_at_step(monkeypatch, at, signum, times=1):
    """Make the training step `at` end with `times` signals `signum` sent to this process."""
    import os

    from onmt.trainer import Trainer
    real = Trainer.train_step

    def step(self, batches, n):
        stats = real(self, batches, n)
        if n == at:
            for _ in range(times):
                os.kill(os.getpid(), signum)
        return stats
    monkeypatch.setattr(Trainer, "train_step", step)


def test_ctrl_c_during_training_saves_the_step(capsys, tiny, tmp_path, monkeypatch):
    import signal

    from helpers.e2e import torch_threads
    before = signal.getsignal(signal.SIGINT)
    _signal_at_step(monkeypatch, 3, signal.SIGINT)
    with torch_threads(1), pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                  "-train_steps", "50"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 130 and err[-1].endswith(f"stopped by SIGINT at step 3; saved {tmp_path / 'm_step_3.pt'}")
    assert [p.name for p in tmp_path.iterdir()] == ["m_step_3.pt"] and _params(tmp_path / "m_step_3.pt")
    assert signal.getsignal(signal.SIGINT) is before          # the handlers are given back


def test_a_second_signal_stops_at_once_without_saving(capsys, tiny, tmp_path, monkeypatch):
    import signal

    from helpers.e2e import torch_threads
    _signal_at_step(monkeypatch, 3, signal.SIGTERM, times=2)
    with torch_threads(1), pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                  "-train_steps", "50"])
    assert exc.value.code == 130 and capsys.readouterr().err.strip().endswith("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_min_length_above_the_checkpoints_max_length_is_refused(capsys, tiny, tmp_path):
    """-min_length alone, above the maximum length the checkpoint's data allows (its rule when
    -max_length is not given), was silently ignored: max_length wins in the search."""
    out = tmp_path / "pred.txt"
    err = one_line_error(capsys, translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"],
                                                      "-output", str(out), "-min_length", "60"])
    assert "-min_length 60 is above the maximum prediction length 50" in err and not out.exists()



def test_a_word_list_or_a_config_that_is_not_utf8_is_one_line(capsys, tmp_path):
    from onmt.bin import preprocess as preprocess_bin
    (tmp_path / "s.txt").write_text("a b\n")
    (tmp_path / "t.txt").write_text("a\n")
    (tmp_path / "words.txt").write_bytes(b"a\n\xff\xfe b\n")
    (tmp_path / "c.yaml").write_bytes(b"batch_size: 3\n# \xff\n")
    err = one_line_error(capsys, preprocess_bin.main, ["-train_src", str(tmp_path / "s.txt"), "-train_tgt",
                                                       str(tmp_path / "t.txt"), "-save_data", str(tmp_path / "p" / "d"),
                                                       "-src_vocab", str(tmp_path / "words.txt"), "-share_vocab"])
    assert "words.txt is not UTF-8 text" in err and not list((tmp_path / "p").iterdir())   # no dataset written
    with pytest.raises(SystemExit) as exc:
        run_main(train_bin.main, ["-config", str(tmp_path / "c.yaml"), "-data", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert exc.value.code != 0 and "c.yaml is not UTF-8 text" in err and "Traceback" not in err


def test_a_50k_token_source_translates_in_bounded_memory(tmp_path):
    """No (S, S) tensor: a 50,000-token line (an (S, S) table alone would be 2.5 GB) translates within 1 GB."""
    import os
    import random
    import subprocess
    import sys

    from helpers.checkpoints import save_tiny_checkpoint
    from helpers.paths import ROOT
    ckpt = save_tiny_checkpoint(tmp_path / "m.pt", "reinforced")
    rng = random.Random(0)
    (tmp_path / "src.txt").write_text(" ".join(f"w{rng.randint(0, 13)}" for _ in range(50_000)) + "\n")
    argv = ["translate.py", "-model", ckpt, "-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / "out.txt"),
            "-max_length", "5"]
    code = (f"import resource, runpy, sys; sys.argv = {argv!r}; sys.path.insert(0, {ROOT!r})\n"
            f"try:\n    runpy.run_path({ROOT + '/translate.py'!r}, run_name='__main__')\n"
            "finally:\n    print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-1000:]
    peak_kb = int(r.stdout.split("peak")[-1])
    assert peak_kb < 1_000_000, peak_kb
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 1
