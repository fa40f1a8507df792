"""Hostile input data: empty or broken corpora, text that is not UTF-8, folders given as files, damaged
dataset files, a worker pool's error paths (never a hang), very long sources; each one line or a clean
refusal, the previous dataset kept (docs/hostile-inputs.md)."""
import gzip
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.hostile import (
    ENV,
    PY,
    corpus,
    deadline,
    evaluate_error,
    make_tiny,
    one_line_error,
    one_line_of,
    preprocess_argv,
)
from helpers.paths import ROOT
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    return make_tiny(tmp_path_factory.mktemp("tiny"))


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


def test_preprocess_keeping_no_example_fails_and_names_the_option(capsys, tmp_path):
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = corpus(tmp_path / "c")
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv(src, tgt, str(tmp_path / "p" / "data"),
                                                                       "-src_seq_length", "2"))
    assert "no training example kept" in err and "-src_seq_length 2" in err and "-src_seq_length_trunc" in err
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == []       # nothing written, no staging folder


@pytest.mark.parametrize("fault", ["missing_src", "bad_line", "no_example"])
def test_preprocess_rerun_that_fails_leaves_the_previous_dataset_intact(capsys, tmp_path, fault):
    """Re-running preprocess over a good dataset used to delete it before checking the new inputs."""
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()
    if fault == "missing_src":
        argv = preprocess_argv(str(tmp_path / "c" / "typo.txt"), tgt, save)
    elif fault == "bad_line":
        bad = tmp_path / "c" / "bad.src.txt"
        bad.write_bytes(open(src, "rb").read().replace(b"w1", b"\xff\xfe", 1))
        argv = preprocess_argv(str(bad), tgt, save)
    else:
        argv = preprocess_argv(src, tgt, save, "-tgt_seq_length", "1")
    one_line_error(capsys, preprocess_bin.main, argv)
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_shard_of_another_preprocessing_run_is_refused(capsys, tmp_path):
    import shutil

    from onmt.bin import preprocess as preprocess_bin
    from onmt.errors import UserError
    from onmt.inputters.dataset import ShardedDataset
    src, tgt = corpus(tmp_path / "c")
    a, b = str(tmp_path / "a" / "data"), str(tmp_path / "b" / "data")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, a))
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, b, "-seed", "7"))
    shutil.copy(f"{b}.train.0.pt", f"{a}.train.0.pt")              # same shape, another run
    data = ShardedDataset.from_data(a, "train", 4)
    with pytest.raises(UserError, match="written by another preprocessing run"):
        next(iter(data.iter_epoch(0)))


def test_preprocess_run_after_a_killed_one_removes_its_staging_folder(tmp_path):
    from onmt.bin import preprocess as preprocess_bin
    src, tgt = corpus(tmp_path / "c")
    dead = tmp_path / "p" / ".data.staging999999999"              # no such process
    dead.mkdir(parents=True)
    (dead / "data.train.0.pt").write_bytes(b"partial")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, str(tmp_path / "p" / "data")))
    assert not dead.exists() and (tmp_path / "p" / "data.meta.json").exists()


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
    src, tgt = corpus(tmp_path / "c")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, str(tmp_path / "p" / "d")))
    meta = tmp_path / "p" / "d.meta.json"
    meta.write_text(json.dumps(damage(json.loads(meta.read_text()))))
    capsys.readouterr()
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "p" / "d"), "-save_model",
                                                  str(tmp_path / "m"), "-rnn_size", "8", "-word_vec_size", "8",
                                                  "-train_steps", "1"])
    assert f"{meta} is damaged ({message}" in err and not list(tmp_path.glob("m*"))


def test_evaluate_two_empty_files_is_an_error_not_a_table_of_zeros(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("")
    (tmp_path / "r.txt").write_text("")
    err = evaluate_error(capsys, ["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "r.txt")])
    assert "empty" in err and "p.txt" in err


@pytest.mark.parametrize("which", ["pred", "ref"])
def test_evaluate_folder_as_input(capsys, tmp_path, which):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    args = {"pred": str(tmp_path / "a.txt"), "ref": str(tmp_path / "a.txt"), which: str(tmp_path / "d")}
    err = evaluate_error(capsys, ["-pred", args["pred"], "-ref", args["ref"]])
    assert f"{tmp_path / 'd'} is a folder" in err


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


def test_prepare_cnndm_on_a_folder_holding_only_train_src(capsys, tmp_path):
    from onmt.prepare import cnndm
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "train.src.txt").write_text("a b c\n")
    err = one_line_error(capsys, cnndm.main, ["-input", str(tmp_path / "in"), "-output", str(tmp_path / "out")])
    assert "incomplete" in err and "train.tgt.txt" in err
    assert not (tmp_path / "out").exists()


def test_remove_eos_on_a_damaged_gzip_is_one_line(tmp_path):
    path = tmp_path / "p.txt.gz"
    path.write_bytes(gzip.compress(b"a b </s> c\n" * 100)[:30])
    r = subprocess.run([PY, os.path.join(ROOT, "tools", "remove_eos.py"), str(path)], capture_output=True,
                       text=True, env=ENV, timeout=60)
    assert one_line_of(r).startswith(f"remove_eos.py: error: {path}: damaged or truncated")


def test_make_toy_data_dir_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("keep")
    r = subprocess.run([PY, os.path.join(ROOT, "tools", "make_toy_data.py"), "-task", "copy", "-dir",
                        str(tmp_path / "f")], capture_output=True, text=True, env=ENV, timeout=60)
    assert one_line_of(r) == f"make_toy_data.py: error: -dir {tmp_path / 'f'} exists and is not a folder"


def _big_result(i):
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


def test_a_50k_token_source_translates_in_bounded_memory(tmp_path):
    """No (S, S) tensor: a 50,000-token line (an (S, S) table alone would be 2.5 GB) translates within 1 GB."""
    import os
    import random
    import subprocess

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
