import gzip
import os
import re
import subprocess
import sys

import pytest
import torch

from helpers.paths import ROOT, SHARED_DATA
from helpers.shards import example_fields
from onmt.bin.preprocess import main
from onmt.errors import OptionError, UserError
from onmt.inputters import shards as shards_mod
from onmt.inputters.numericalize import Numericalizer, oov_lists
from onmt.inputters.vocab_builder import load_vocabs, shard_paths

SRC = ["the cat sat on the mat", "a dog barked at the cat", "   ", "zorp the cat",
       "the mat is red", "one two three four five six seven eight nine ten eleven", "cat <unk> dog", "x y"]
TGT = ["cat sat", "dog barked", "empty source", "zorp", "", "long source", "cat dog </s>", "x y z w v u t s"]


def corpus(tmp_path, src=SRC, tgt=TGT, gz=False):
    paths = []
    os.makedirs(tmp_path, exist_ok=True)
    for name, lines in (("src", src), ("tgt", tgt)):
        p = str(tmp_path / (f"train.{name}.txt" + (".gz" if gz else "")))
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        if gz:
            with gzip.open(p, "wb") as f:
                f.write(data)
        else:
            with open(p, "wb") as f:
                f.write(data)
        paths.append(p)
    return paths


def run(tmp_path, *more_args, gz=False, save=None):
    s, t = corpus(tmp_path, gz=gz)
    save = save or str(tmp_path / "out" / "data")
    main(["-train_src", s, "-train_tgt", t, "-save_data", save, "-src_seq_length", "10",
          "-tgt_seq_length", "5", "-src_vocab_size", "12", "-tgt_vocab_size", "8", *more_args])
    return save, load_vocabs(save)[1]


@pytest.mark.parametrize("gz", [False, True])
def test_shard_round_trip_and_filters(tmp_path, gz):
    save, meta = run(tmp_path, "-share_vocab", "-dynamic_dict", "-shard_size", "2", gz=gz)
    summary = meta["summary"]["train"]
    assert summary["read"] == 8 and summary["kept"] == 4
    assert summary["drops"] == {"empty_src": 1, "empty_tgt": 1, "src_too_long": 1, "tgt_too_long": 1}
    assert meta["shard_sizes"]["train"] == [2, 2]
    vocabs, meta2 = load_vocabs(save)
    assert meta2["share_vocab"] and len(vocabs.src) == 12 and vocabs.tgt.itos == vocabs.src.itos[:8]
    assert "<unk>" not in vocabs.src.itos[4:] and "</s>" not in vocabs.src.itos[4:]
    nz = Numericalizer(vocabs)
    kept = [0, 1, 3, 6]
    got = []
    for path in shard_paths(save, meta, "train"):
        d = torch.load(path, weights_only=True)
        assert d["src"].dtype == torch.int32 and d["src_offsets"].dtype == torch.int64
        for i in range(len(d["indices"])):
            line = int(d["indices"][i])
            assert example_fields(d, i) == nz.numericalize(SRC[line].split(), TGT[line].split())
            got.append(line)
    assert got == kept
    assert not [f for f in os.listdir(os.path.dirname(save)) if "tmp" in f]


def test_truncation_then_filter_lower_and_unshared(tmp_path):
    save, meta = run(tmp_path, "-src_seq_length_trunc", "3", "-tgt_seq_length_trunc", "2", "-lower")
    assert meta["summary"]["train"]["kept"] == 6            # only the two empty sides are dropped
    assert os.path.exists(save + ".src.vocab.txt") and os.path.exists(save + ".tgt.vocab.txt")
    d = torch.load(shard_paths(save, meta, "train")[0], weights_only=True)
    assert "src_ex" not in d and int((d["src_offsets"][1:] - d["src_offsets"][:-1]).max()) == 3
    with open(save + ".src.vocab.txt", encoding="utf-8") as f:
        first = [line.rstrip("\n").split("\t") for line in f][:5]
    assert first[0] == ["<unk>", "0"] and first[4] == ["cat", "3"]  # cat and the: 3 each, tie by word


def test_threads_give_identical_output(tmp_path):
    a, meta_a = run(tmp_path / "a", "-share_vocab", "-dynamic_dict", "-num_threads", "1")
    b, meta_b = run(tmp_path / "b", "-share_vocab", "-dynamic_dict", "-num_threads", "2")
    assert meta_a.pop("run_id") != meta_b.pop("run_id")      # each run has its own id, nothing else differs
    assert meta_a == meta_b and load_vocabs(a)[0] == load_vocabs(b)[0]
    for pa, pb in zip(shard_paths(a, meta_a, "train"), shard_paths(b, meta_b, "train")):
        da, db = torch.load(pa, weights_only=True), torch.load(pb, weights_only=True)
        assert da.keys() == db.keys()
        assert all(torch.equal(da[k], db[k]) for k in da if k != "run_id")


def test_save_data_folder_created_or_unwritable(tmp_path):
    save, _ = run(tmp_path, save=str(tmp_path / "new" / "deeper" / "data"))
    assert os.path.exists(save + ".meta.json")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot write"):
        run(tmp_path, save=str(blocker / "data"))


def test_vocab_smaller_than_specials(tmp_path):
    s, t = corpus(tmp_path)
    with pytest.raises(OptionError, match="special"):
        main(["-train_src", s, "-train_tgt", t, "-save_data", str(tmp_path / "d"), "-tgt_vocab_size", "3"])


def test_interrupted_run_leaves_no_partial_shard(tmp_path, monkeypatch):
    real_save = torch.save
    calls = []

    def failing_save(obj, f, *a, **k):           # f: the open temporary file (write_shard)
        calls.append(f)
        if len(calls) == 2:
            f.write(b"partial")                   # half a file under the temporary name, then die
            raise KeyboardInterrupt
        return real_save(obj, f, *a, **k)

    run(tmp_path, "-shard_size", "2", "-dynamic_dict", "-share_vocab")      # a complete earlier run
    out = tmp_path / "out"
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    monkeypatch.setattr(shards_mod.torch, "save", failing_save)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, "-shard_size", "1", "-dynamic_dict", "-share_vocab")
    # the new run wrote aside and never swapped in: the earlier dataset is intact, nothing is left over
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before
    assert "data.meta.json" in before and len([n for n in before if n.endswith(".pt")]) > 1


def cli(*args):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "preprocess.py"), *args],
                       capture_output=True, text=True, cwd=ROOT)
    return r.returncode, r.stderr


@pytest.mark.parametrize("case", ["mismatch", "missing", "utf8"])
def test_cli_bad_inputs_one_line(tmp_path, case):
    s, t = corpus(tmp_path)
    if case == "mismatch":
        with open(t, "a") as f:
            f.write("one more\n")
        want = [s, t, "8", "9"]
    elif case == "missing":
        t = str(tmp_path / "missing.txt")
        want = [t]
    else:
        with open(s, "ab") as f:
            f.write(b"\xff\n")
        with open(t, "a") as f:
            f.write("fine\n")
        want = [s, "line 9"]
    rc, err = cli("-train_src", s, "-train_tgt", t, "-save_data", str(tmp_path / "o" / "d"))
    assert rc != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in want), err
    out = tmp_path / "o"
    assert not out.exists() or not [n for n in os.listdir(out) if "tmp" in n]   # no cache or partial file left


GIGA = os.path.join(SHARED_DATA, "gigaword")


@pytest.mark.skipif(not os.path.exists(f"{GIGA}/valid.src.txt"), reason="real data not available in ../shared/data")
def test_real_gigaword_with_literal_unk(tmp_path):
    save = str(tmp_path / "g")
    main(["-train_src", f"{GIGA}/valid.src.txt", "-train_tgt", f"{GIGA}/valid.tgt.txt",
          "-save_data", save, "-share_vocab", "-dynamic_dict", "-src_vocab_size", "5000",
          "-tgt_vocab_size", "3000", "-src_seq_length", "100", "-tgt_seq_length", "40"])
    vocabs, meta = load_vocabs(save)
    assert vocabs.src.itos.count("<unk>") == 1 and meta["summary"]["train"]["kept"] > 3900
    d = torch.load(shard_paths(save, meta, "train")[0], weights_only=True)
    assert int(d["src"].max()) < 5000 and int(d["tgt"].max()) < 3000
    oovs = oov_lists(d["oov_bytes"], d["oov_byte_offsets"], range(len(d["indices"])))
    assert not any(w in ("<unk>", "<s>", "</s>", "<blank>") for o in oovs for w in o)


def _run_on_terminal(args, timeout=60):
    """Run preprocess.py with stderr on a pseudo-terminal (100 columns); returns (rc, terminal text)."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    import time
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "preprocess.py"), *args], cwd=ROOT,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:              # the child closed the terminal (Linux: EIO)
                    break
                if not data:
                    break
                out += data
            elif p.poll() is not None:
                break
    finally:
        os.close(master)
    return p.wait(timeout=timeout), out.decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_log_lines_through_a_pipe(tmp_path):
    s, t = corpus(tmp_path)
    args = ["-train_src", s, "-train_tgt", t, "-valid_src", s, "-valid_tgt", t]
    rc, term = _run_on_terminal(args + ["-save_data", str(tmp_path / "a" / "d")])
    assert rc == 0, term
    for desc in ("pass 1: counting words", "pass 2: numericalizing train", "numericalizing valid"):
        assert f"{desc}: 100%|" in term, term
    r = subprocess.run([sys.executable, os.path.join(ROOT, "preprocess.py"), *args,
                        "-save_data", str(tmp_path / "b" / "d")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stderr == "" and "%|" not in r.stdout
    assert "pass 2: numericalizing train: 8/8 line (100%)" in r.stdout


@pytest.mark.parametrize("record, message", [
    ('{"tokenize": "ptb", "lower": tr', "cannot be read"),
    ('{"tokenize": "spacy", "lower": true}', 'expected {"tokenize": "ptb" or "none"'),
    ('["ptb"]', 'expected {"tokenize"'),
    ('{"tokenize": "ptb", "lower": "yes"}', 'expected {"tokenize"'),
])
def test_a_prepare_record_that_cannot_be_read_is_refused_not_dropped(tmp_path, record, message):
    """Dropped, the model would be given raw text untokenized and uncased at translation."""
    (tmp_path / "prepare.json").write_text(record)
    with pytest.raises(UserError, match=re.escape(message)):
        run(tmp_path, "-share_vocab")
    assert not (tmp_path / "out" / "data.meta.json").exists()
    (tmp_path / "prepare.json").write_text('{"tokenize": "ptb", "lower": true}')
    _, meta = run(tmp_path, "-share_vocab")
    assert meta["text"] == {"tokenize": "ptb", "lower": True}
