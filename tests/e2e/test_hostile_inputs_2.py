"""Hostile and careless inputs, round two (issue 38, the siblings of the fixed cases; docs/hostile-inputs.md):
outputs that are streams or links, two outputs on one file, an output that is a file the run itself
writes or removes. Each is one line naming the option, a non-zero exit, no traceback, nothing lost.
"""
import os
import re
import threading

import pytest

from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.utils.cli import run_main
from onmt.utils.files import write_atomic, write_text_atomic

LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+\] ")


def one_line_error(capsys, main, argv):
    """Run `main(argv)` as the console script does; -> its one-line error (test_hostile_inputs.py's)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert "Traceback" not in err and len(lines) == 1 and err.endswith(lines[0]), err
    return lines[0]


def _corpus(folder, n=12):
    os.makedirs(folder, exist_ok=True)
    src = [" ".join(f"w{(i + j) % 9}" for j in range(3 + i % 4)) for i in range(n)]
    paths = []
    for name, lines in (("train.src.txt", src), ("train.tgt.txt", [" ".join(s.split()[:2]) for s in src])):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(os.path.join(folder, name))
    return paths


def _preprocess_argv(src, tgt, save, *more_args):
    return ["-train_src", src, "-train_tgt", tgt, "-save_data", save, "-share_vocab", "-dynamic_dict",
            "-src_vocab_size", "20", "-tgt_vocab_size", "10", *more_args]


# --------------------------------------------------------------------------- streams and links as outputs
def _fifo_reader(path):
    """A FIFO at `path` read to its end by a thread: (thread, list that receives the bytes)."""
    os.mkfifo(path)
    got = []

    def read():
        with open(path, "rb") as f:
            got.append(f.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def _renaming_writer(name):
    """A writer that, as torch's Chrome trace export does, writes a temporary file and renames it onto the
    name it is given."""
    with open(f"{name}.part", "w") as f:
        f.write('{"trace": 1}')
    os.replace(f"{name}.part", name)


def test_a_by_name_writer_into_a_fifo_writes_through_it(tmp_path):
    """-profile_trace /dev/null (any stream) once replaced the device by a regular file."""
    import stat
    path = str(tmp_path / "trace")
    thread, got = _fifo_reader(path)
    write_atomic(path, _renaming_writer, "-profile_trace", by_name=True)
    thread.join(10)
    assert stat.S_ISFIFO(os.stat(path).st_mode) and got == [b'{"trace": 1}']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace"]


def test_a_link_to_this_process_s_descriptor_is_written_through_when_it_is_a_regular_file(tmp_path):
    """-dump_beam /dev/stdout with stdout redirected into a file: /dev/stdout (a link to /proc/self/fd/1)
    was renamed over, turning the machine's /dev/stdout into a regular file."""
    out = open(tmp_path / "redirected.txt", "w")
    out.write("before\n")
    out.flush()
    link, target = tmp_path / "stdout", f"/proc/self/fd/{out.fileno()}"
    os.symlink(target, link)
    write_text_atomic(str(link), "dump\n", "-dump_beam")
    out.write("after\n")
    out.close()
    assert os.path.islink(link) and os.readlink(link) == target
    assert (tmp_path / "redirected.txt").read_text() == "before\ndump\nafter\n"     # at the stream's position
    assert sorted(p.name for p in tmp_path.iterdir()) == ["redirected.txt", "stdout"]


def test_a_link_to_a_regular_file_stays_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "pred.txt").write_text("old\n")
    os.symlink(tmp_path / "real" / "pred.txt", tmp_path / "pred.txt")
    write_text_atomic(str(tmp_path / "pred.txt"), "new\n")
    assert os.path.islink(tmp_path / "pred.txt") and (tmp_path / "real" / "pred.txt").read_text() == "new\n"


def test_log_file_dash_is_standard_output_not_a_file_named_dash(tmp_path, monkeypatch, capsys):
    from onmt.utils.logging import init_logger
    monkeypatch.chdir(tmp_path)
    init_logger("-").info("hello")
    assert "hello" in capsys.readouterr().out and not (tmp_path / "-").exists()
    init_logger("")


def test_explore_to_standard_output_keeps_its_status_line_out_of_the_page(tmp_path, monkeypatch, capfd):
    """onmt_explore -output - printed its status line into the page, and its size was that of a file
    named `-` in the working folder (or an error when there was none)."""
    from onmt.bin import explore as explore_bin
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.txt").write_text("a b c\n")
    (tmp_path / "r.txt").write_text("a b\n")
    (tmp_path / "-").write_text("not the page\n")
    size = explore_bin.main(["-src", "s.txt", "-ref", "r.txt", "-system", "r.txt", "-output", "-"])
    out, err = capfd.readouterr()
    assert out.rstrip().endswith("</html>") and len(out.encode()) == size and f"-: {size:,} bytes" in err
    assert (tmp_path / "-").read_text() == "not the page\n"


# --------------------------------------------------------------------------- two outputs on one file
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
    src, tgt = _corpus(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv(src, tgt, "p/data", *more_args))
    assert message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "p"] and not list((tmp_path / "p").iterdir())


def test_a_log_beside_the_dataset_is_fine(tmp_path, monkeypatch):
    src, tgt = _corpus(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, "p/data", "-log_file", "p/data.log"))
    assert (tmp_path / "p" / "data.log").stat().st_size > 0 and (tmp_path / "p" / "data.meta.json").exists()


def test_save_config_on_a_full_disk_keeps_the_previous_file(capsys, tmp_path, monkeypatch):
    """-save_config was opened with open(path, "w"): a failed write left a truncated config."""
    import errno
    (tmp_path / "c.yaml").write_text("old: 1\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv("s.txt", "t.txt", str(tmp_path / "p" / "d"),
                                                                       "-save_config", str(tmp_path / "c.yaml")))
    assert "-save_config" in err and "No space left on device" in err
    assert (tmp_path / "c.yaml").read_text() == "old: 1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


# --------------------------------------------------------------------------- numbers
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
    src, tgt = _corpus(tmp_path / "c")
    err = one_line_error(capsys, preprocess_bin.main, _preprocess_argv(src, tgt, str(tmp_path / "p" / "d"), *more_args))
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


# --------------------------------------------------------------------------- damaged files
META_DAMAGE = [
    (lambda m: [1, 2], "a JSON list, not an object"),
    (lambda m: {**m, "shard_sizes": "x"}, '"shard_sizes" should be an object of lists of example counts'),
    (lambda m: {**m, "share_vocab": "yes"}, '"share_vocab" should be true or false'),
    (lambda m: {k: v for k, v in m.items() if k != "shards"}, 'no "shards"'),
    (lambda m: {**m, "shards": {"train": ["../x.pt"]}}, '"shards" should be an object of lists of file names'),
    (lambda m: {**m, "src_vocab_size": 3.5}, '"src_vocab_size" should be a positive integer'),
]


@pytest.mark.parametrize("damage,message", META_DAMAGE, ids=[m for _, m in META_DAMAGE])
def test_meta_json_of_the_wrong_shape_is_one_line(capsys, tmp_path, damage, message):
    """A meta.json that is JSON but not preprocess.py's (a hand edit): a TypeError / AttributeError traceback."""
    import json
    src, tgt = _corpus(tmp_path / "c")
    run_main(preprocess_bin.main, _preprocess_argv(src, tgt, str(tmp_path / "p" / "d")))
    meta = tmp_path / "p" / "d.meta.json"
    meta.write_text(json.dumps(damage(json.loads(meta.read_text()))))
    capsys.readouterr()
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "p" / "d"), "-save_model",
                                                  str(tmp_path / "m"), "-rnn_size", "8", "-word_vec_size", "8",
                                                  "-train_steps", "1"])
    assert f"{meta} is damaged ({message}" in err and not list(tmp_path.glob("m*"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint trained 1 step on toy data."""
    from helpers.e2e import random_pair_data, torch_threads
    folder = tmp_path_factory.mktemp("ckpt")
    prefix = random_pair_data(str(folder), seed=3, n_examples=16, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), "-rnn_size", "8",
                                  "-word_vec_size", "8", "-layers", "1", "-batch_size", "8", "-train_steps", "1"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_1.pt")}


RESUME_DAMAGE = [("rng", "x", "its rng is 'x', not an RNG state"),
                 ("rng", {"torch": 1, "python": 2}, "not an RNG state"),
                 ("rng_ranks", [1], "not a list of RNG states"),
                 ("world_size", 0, "its world_size is 0, not a positive integer"),
                 ("saved_checkpoints", 5, "its saved_checkpoints is 5, not a list of paths"),
                 ("early_stopping", "x", "not an early-stopping state"),
                 ("early_stopping", {"criteria": ["ppl"], "best": {"ppl": "low"}}, "not an early-stopping state")]


@pytest.mark.parametrize("key,value,message", RESUME_DAMAGE, ids=[f"{k}={v!r}" for k, v, _ in RESUME_DAMAGE])
def test_checkpoint_with_a_damaged_resume_state_is_one_line(capsys, tmp_path, checkpoint, key, value, message):
    """-train_from a checkpoint whose RNG state was not one: a TypeError traceback after building the model;
    a damaged early-stopping state or list of checkpoints was trained on (exit 0) or failed at the end."""
    import torch
    ckpt = torch.load(checkpoint["ckpt"], weights_only=True)
    ckpt[key] = value
    torch.save(ckpt, tmp_path / "c.pt")
    err = one_line_error(capsys, train_bin.main, ["-data", checkpoint["prefix"], "-save_model", str(tmp_path / "m"),
                                                  "-train_from", str(tmp_path / "c.pt"), "-train_steps", "3"])
    assert f"checkpoint {tmp_path / 'c.pt'} is damaged: " in err and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt"]
