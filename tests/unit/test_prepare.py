"""tools/prepare_cnndm.py and tools/prepare_gigaword.py (onmt/prepare/): every accepted form on a fixture
written here (See et al.'s .bin encoded by a tiny protobuf encoder below), the exact output lines, the
detection and its log line, the one-line errors, nothing left behind on failure, and the tokenizer."""
import csv
import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT as REPO
from helpers.paths import SHARED_DATA
from onmt.errors import OptionError, UserError
from onmt.prepare import cnndm, gigaword
from onmt.prepare.tfexample import parse_example
from onmt.prepare.tokenize import ptb_tokenize

ROOT = Path(REPO)
SHARED_CNNDM = Path(SHARED_DATA) / "cnndm"


# ------------------------------------------------------------------------------------ helpers
def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def ld(number, data):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def tf_example(features):
    """Serialized tf.Example of {name: list of bytes | ("int64", [ints]) | ("float", [floats])}."""
    entries = b""
    for name, values in features.items():
        if isinstance(values, tuple) and values[0] == "int64":
            feature = ld(3, ld(1, b"".join(varint(v) for v in values[1])))
        elif isinstance(values, tuple):
            feature = ld(2, ld(1, struct.pack(f"<{len(values[1])}f", *values[1])))
        else:
            feature = ld(1, b"".join(ld(1, v) for v in values))
        entries += ld(1, ld(1, name.encode()) + ld(2, feature))
    return ld(1, entries)


def write_bin(path, examples):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for article, abstract in examples:
            rec = tf_example({"article": [article.encode()], "abstract": [abstract.encode()]})
            f.write(struct.pack("<q", len(rec)) + rec)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def lines(folder, name):
    return (folder / name).read_text(encoding="utf-8").split("\n")[:-1]


def cnndm_main(args):
    return cnndm.main([str(a) for a in args])


def gigaword_main(args):
    return gigaword.main([str(a) for a in args])


def prepare(tool, *args):
    return subprocess.run([sys.executable, str(ROOT / "tools" / tool), *map(str, args)],
                          capture_output=True, text=True)


def one_line_error(r):
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr


def tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


# ------------------------------------------------------------------------------------ tokenizer
@pytest.mark.parametrize("text, tokens", [
    ('(CNN) -- The U.S. isn\u2019t "ready," he said.',
     ["-lrb-", "CNN", "-rrb-", "--", "The", "U.S.", "is", "n't", '"', "ready", ",", '"', "he", "said", "."]),
    ("It cost $3.5 million, or 12% of 1,000 people's e-mails... Mr. Smith can't; they're O'Neill's.",
     ["It", "cost", "$", "3.5", "million", ",", "or", "12", "%", "of", "1,000", "people", "'s", "e-mails", "...",
      "Mr.", "Smith", "ca", "n't", ";", "they", "'re", "O'Neill", "'s", "."]),
    ("The 35-year-old said \u201cI'm done\u201d at 10:30 a.m. on 9/11 [sic] {x} \u2014 workers' rights\u2026",
     ["The", "35-year-old", "said", '"', "I", "'m", "done", '"', "at", "10:30", "a.m.", "on", "9/11", "-lsb-",
      "sic", "-rsb-", "-lcb-", "x", "-rcb-", "--", "workers", "'", "rights", "..."]),
    ("See CNN.com or www.cnn.com/news. Write to a.b@example.org! ``Yes,'' she'd say 'no' in 2010.",
     ["See", "CNN.com", "or", "www.cnn.com/news", ".", "Write", "to", "a.b@example.org", "!", '"', "Yes", ",",
      '"', "she", "'d", "say", "'", "no", "'", "in", "2010", "."]),
    ("#.## billion , ##-year-old UNK <unk> won't",
     ["#.##", "billion", ",", "##-year-old", "UNK", "<unk>", "wo", "n't"]),
])
def test_ptb_tokenizer(text, tokens):
    assert ptb_tokenize(text) == tokens
    assert ptb_tokenize(" ".join(tokens)) == tokens          # tokenized text stays as it is


def test_tokenizer_keeps_pretokenized_text():
    text = "-lrb- cnn -rrb- the u.s. is n't `` ready '' , it 's 3.5 % -- l.l. doungal said"
    assert ptb_tokenize(text) == ["-lrb-", "cnn", "-rrb-", "the", "u.s.", "is", "n't", '"', "ready", '"', ",",
                                  "it", "'s", "3.5", "%", "--", "l.l.", "doungal", "said"]


# ------------------------------------------------------------------------------------ tf.Example
def test_tf_example_decoder_reads_every_feature_kind():
    buf = tf_example({"article": [b"a b", "\u00e9t\u00e9".encode()], "ids": ("int64", [3, -1, 300]),
                      "w": ("float", [0.5, -2.0]), "empty": []})
    ex = parse_example(buf)
    assert ex == {"article": [b"a b", "\u00e9t\u00e9".encode()], "ids": [3, -1, 300], "w": [0.5, -2.0],
                  "empty": []}


# ------------------------------------------------------------------------------------ CNN/DM forms
ARTICLES = [("-lrb- CNN -rrb- The U.S. said it 's ready .", "<s> U.S. is ready . </s> <s> It said so . </s>"),
            ("Second   article , here .", "<s> one sentence . </s>")]
EXPECTED_SRC = ["-lrb- cnn -rrb- the u.s. said it 's ready .", "second article , here ."]
EXPECTED_TGT = ["u.s. is ready . it said so .", "one sentence ."]


def test_bin_whole_files(tmp_path, capsys):
    write_bin(tmp_path / "in" / "train.bin", ARTICLES)
    write_bin(tmp_path / "in" / "val.bin", ARTICLES[::-1])
    (tmp_path / "in" / "vocab").write_text("the 10\n")      # finished_files has a vocab file too
    out = tmp_path / "out"
    assert cnndm_main(["-input", tmp_path / "in", "-output", out]) == {"train": 2, "valid": 2}
    assert lines(out, "train.src.txt") == EXPECTED_SRC and lines(out, "train.tgt.txt") == EXPECTED_TGT
    assert lines(out, "valid.src.txt") == EXPECTED_SRC[::-1] and lines(out, "valid.tgt.txt") == EXPECTED_TGT[::-1]
    assert tree(out) == ["prepare.json", "train.src.txt", "train.tgt.txt", "valid.src.txt", "valid.tgt.txt"]
    assert json.loads((out / "prepare.json").read_text()) == {"tokenize": "ptb", "lower": True}
    log = capsys.readouterr().out
    assert "format: bin (See et al.'s finished_files .bin)" in log and "test: not in" in log


def test_bin_chunked_pieces_in_order(tmp_path, capsys):
    chunked = tmp_path / "in" / "chunked"
    write_bin(chunked / "test_001.bin", ARTICLES[1:])
    write_bin(chunked / "test_000.bin", ARTICLES[:1])
    write_bin(chunked / "train_000.bin", ARTICLES)
    write_bin(tmp_path / "in" / "train.bin", ARTICLES[::-1])    # the whole file wins over its pieces
    out = tmp_path / "out"
    cnndm_main(["-input", tmp_path / "in", "-output", out, "-no_lower"])
    assert lines(out, "test.src.txt") == ["-lrb- CNN -rrb- The U.S. said it 's ready .", "Second article , here ."]
    assert lines(out, "test.tgt.txt") == ["U.S. is ready . It said so .", "one sentence ."]
    assert lines(out, "train.tgt.txt") == ["one sentence .", "U.S. is ready . It said so ."]
    assert "chunked/train_NNN.bin ignored" in capsys.readouterr().out


def test_bin_missing_piece_and_bad_record(tmp_path):
    write_bin(tmp_path / "in" / "chunked" / "val_000.bin", ARTICLES)
    write_bin(tmp_path / "in" / "chunked" / "val_002.bin", ARTICLES)
    with pytest.raises(UserError, match="piece 1 of val_NNN.bin is missing"):
        cnndm_main(["-input", tmp_path / "in", "-output", tmp_path / "out"])
    bad = tmp_path / "bad"
    write_bin(bad / "train.bin", ARTICLES)
    with open(bad / "train.bin", "ab") as f:
        f.write(struct.pack("<q", 100) + b"short")
    with pytest.raises(UserError, match="record 3 is truncated"):
        cnndm_main(["-input", bad, "-output", tmp_path / "out"])
    assert not (tmp_path / "out").exists()


def test_opennmt_tagged_release(tmp_path, capsys):
    src = "-lrb- cnn -rrb- the u.s. said it 's ready .\nsecond article .\n"
    tgt = "<t> u.s. is ready . </t> <t> it said so . </t>\n<t> one sentence . </t>\n"
    for split in ("train", "val"):
        write(tmp_path / "in" / f"{split}.txt.src", src)
        write(tmp_path / "in" / f"{split}.txt.tgt.tagged", tgt)
    out = tmp_path / "out"
    cnndm_main(["-input", tmp_path / "in", "-output", out])
    assert tree(out) == ["prepare.json", "train.src.txt", "train.tgt.txt", "valid.src.txt", "valid.tgt.txt"]
    assert json.loads((out / "prepare.json").read_text()) == {"tokenize": "ptb", "lower": True}
    assert lines(out, "valid.src.txt") == ["-lrb- cnn -rrb- the u.s. said it 's ready .", "second article ."]
    assert lines(out, "valid.tgt.txt") == ["u.s. is ready . it said so .", "one sentence ."]
    assert "format: opennmt" in capsys.readouterr().out


HF_ROWS = [{"id": "a1", "article": "(CNN) -- The U.S. isn't ready, officials said Tuesday.",
            "highlights": "U.S. isn't ready\nOfficials spoke on \"Tuesday\""},
           {"id": "b2", "article": "LONDON, England (Reuters) -- It cost $3.5 million.\nMore text here.",
            "highlights": "It cost $3.5 million .\nWhy?"}]
HF_SRC = ["-lrb- cnn -rrb- -- the u.s. is n't ready , officials said tuesday .",
          "london , england -lrb- reuters -rrb- -- it cost $ 3.5 million . more text here ."]
HF_TGT = ['u.s. is n\'t ready . officials spoke on " tuesday "', "it cost $ 3.5 million . why ?"]


def write_hf(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if name.endswith(".parquet"):
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif name.endswith(".csv"):
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["id", "article", "highlights"])
            w.writeheader()
            w.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("ext", ["jsonl", "json", "csv", "parquet"])
def test_hugging_face_exports_are_tokenized(tmp_path, ext, capsys):
    write_hf(tmp_path / "in", f"train.{ext}", HF_ROWS)
    write_hf(tmp_path / "in", f"validation.{ext}", HF_ROWS[:1])
    out = tmp_path / "out"
    cnndm_main(["-input", tmp_path / "in", "-output", out])
    assert lines(out, "train.src.txt") == HF_SRC and lines(out, "train.tgt.txt") == HF_TGT
    assert lines(out, "valid.src.txt") == HF_SRC[:1] and lines(out, "valid.tgt.txt") == HF_TGT[:1]
    log = capsys.readouterr().out
    assert "format: hf (Hugging Face cnn_dailymail export)" in log and "PTB-style tokenizer" in log


def test_hugging_face_parquet_pieces_and_no_tokenize(tmp_path):
    write_hf(tmp_path / "in", "test-00001-of-00002.parquet", HF_ROWS[1:])
    write_hf(tmp_path / "in", "test-00000-of-00002.parquet", HF_ROWS[:1])
    out = tmp_path / "out"
    cnndm_main(["-input", tmp_path / "in", "-output", out, "-tokenize", "none", "-no_lower"])
    assert lines(out, "test.src.txt") == ["(CNN) -- The U.S. isn't ready, officials said Tuesday.",
                                          "LONDON, England (Reuters) -- It cost $3.5 million. More text here."]
    assert lines(out, "test.tgt.txt") == ["U.S. isn't ready . Officials spoke on \"Tuesday\"",
                                          "It cost $3.5 million . Why?"]


def test_hugging_face_errors(tmp_path, monkeypatch):
    write_hf(tmp_path / "a", "train-00000-of-00002.parquet", HF_ROWS)       # piece 1 of 2 missing
    with pytest.raises(UserError, match="not numbered 0 to 1 of 2"):
        cnndm_main(["-input", tmp_path / "a", "-output", tmp_path / "out"])
    write_hf(tmp_path / "b", "train.jsonl", [{"article": "x"}])
    with pytest.raises(UserError, match="line 1 has no 'highlights'"):
        cnndm_main(["-input", tmp_path / "b", "-output", tmp_path / "out"])
    write_hf(tmp_path / "c", "test.parquet", HF_ROWS)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)            # as if pyarrow were missing
    with pytest.raises(UserError, match=r"pip install \.\[parquet\]"):
        cnndm_main(["-input", tmp_path / "c", "-output", tmp_path / "out"])
    assert not (tmp_path / "out").exists()


def test_seed_layout_gz_and_eos(tmp_path, capsys):
    write(tmp_path / "in" / "train.src.txt.gz", "The  Source\t one\nsecond\n")
    write(tmp_path / "in" / "train.tgt.txt.gz", "First sentence </s> Second one\nx</s>y\n")
    write(tmp_path / "in" / "test.src.txt", "t\n")
    write(tmp_path / "in" / "test.tgt.txt", "<t> u </t>\n")
    out = tmp_path / "out"
    cnndm_main(["-input", tmp_path / "in", "-output", out, "-splits", "train", "test", "-format", "seed"])
    assert lines(out, "train.src.txt") == ["the source one", "second"]
    assert lines(out, "train.tgt.txt") == ["first sentence . second one", "x . y"]
    assert lines(out, "test.tgt.txt") == ["u"]
    assert "format: seed" in capsys.readouterr().out


def test_auto_detection_picks_the_one_form_present(tmp_path, capsys):
    write_bin(tmp_path / "bin" / "test.bin", ARTICLES)
    write_hf(tmp_path / "hf", "test.jsonl", HF_ROWS)
    write(tmp_path / "seed" / "test.src.txt", "a\n")
    write(tmp_path / "seed" / "test.tgt.txt", "b\n")
    write(tmp_path / "opennmt" / "test.txt.src", "a\n")
    write(tmp_path / "opennmt" / "test.txt.tgt.tagged", "<t> b </t>\n")
    for form in ("bin", "hf", "seed", "opennmt"):
        cnndm_main(["-input", tmp_path / form, "-output", tmp_path / f"out_{form}"])
        assert f"format: {form} (" in capsys.readouterr().out


def test_several_forms_need_format(tmp_path, capsys):
    write_bin(tmp_path / "in" / "test.bin", ARTICLES)
    write(tmp_path / "in" / "test.src.txt", "a\n")
    write(tmp_path / "in" / "test.tgt.txt", "b\n")
    with pytest.raises(UserError, match="several forms .*choose one with -format"):
        cnndm_main(["-input", tmp_path / "in", "-output", tmp_path / "out"])
    cnndm_main(["-input", tmp_path / "in", "-output", tmp_path / "out", "-format", "bin"])
    assert lines(tmp_path / "out", "test.src.txt") == EXPECTED_SRC


def test_misaligned_lines_rejected(tmp_path):
    write(tmp_path / "in" / "valid.src.txt", "a\nb\n")
    write(tmp_path / "in" / "valid.tgt.txt", "a\n")
    with pytest.raises(UserError, match="valid.src.txt has more lines than"):
        cnndm_main(["-input", tmp_path / "in", "-output", tmp_path / "out"])


def test_options_validated():
    with pytest.raises(OptionError, match="different folders"):
        cnndm_main(["-input", "x", "-output", "x/"])
    with pytest.raises(OptionError, match="-report_every"):
        cnndm_main(["-input", "x", "-output", "y", "-report_every", "0"])


# ------------------------------------------------------------------------------------ the command line
def test_cli_unrecognized_folder_one_line(tmp_path):
    (tmp_path / "in").mkdir()
    write(tmp_path / "in" / "notes.txt", "hello\n")
    err = one_line_error(prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", tmp_path / "out"))
    for name in ("cnndm.tar.gz", ".txt.tgt.tagged", "finished_files", "chunked/", "cnn_dailymail",
                 "to_parquet", "{src,tgt}.txt"):
        assert name in err
    assert not (tmp_path / "out").exists()
    err = one_line_error(prepare("prepare_cnndm.py", "-input", tmp_path / "missing", "-output", tmp_path / "out"))
    assert "no CNN/DailyMail folder" in err and "finished_files" in err


@pytest.mark.parametrize("files", [["train.src.txt"], ["val.txt.tgt.tagged"], ["train.src.txt", "train.tgt.txt",
                                                                                "valid.tgt.txt.gz"]])
def test_cli_partial_folder_rejected(tmp_path, files):
    for name in files:
        write(tmp_path / "in" / name, "a\n")
    err = one_line_error(prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", tmp_path / "out"))
    assert "incomplete" in err and "has no partner" in err and "accepted forms" in err
    assert not (tmp_path / "out").exists()


def test_cli_failure_leaves_nothing_behind(tmp_path):
    write(tmp_path / "in" / "train.src.txt", "fine\n" * 50)
    write(tmp_path / "in" / "train.tgt.txt", "fine\n" * 50)
    write(tmp_path / "in" / "valid.src.txt", "ok\n")
    (tmp_path / "in" / "valid.tgt.txt").write_bytes(b"\xff\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.src.txt").write_text("old\n")
    err = one_line_error(prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", out))
    assert "valid.tgt.txt: line 1: invalid UTF-8" in err
    assert tree(out) == ["train.src.txt"] and (out / "train.src.txt").read_text() == "old\n"
    one_line_error(prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", tmp_path / "new"))
    assert not (tmp_path / "new").exists()           # a folder it made is removed again


def test_cli_logs_format_on_stdout(tmp_path):
    write_bin(tmp_path / "in" / "chunked" / "val_000.bin", ARTICLES)
    r = prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", tmp_path / "out", "-report_every", "1")
    assert r.returncode == 0 and r.stderr == ""
    assert "format: bin" in r.stdout and "valid: 1 examples" in r.stdout and "valid: 2 examples" in r.stdout
    assert lines(tmp_path / "out", "valid.tgt.txt") == EXPECTED_TGT


@pytest.mark.skipif(not SHARED_CNNDM.is_dir(), reason="no shared CNN/DM data next to the checkout")
def test_shared_cnndm_valid_head(tmp_path):
    heads = {}
    for side in ("src", "tgt"):
        with gzip.open(SHARED_CNNDM / f"valid.{side}.txt.gz", "rt", encoding="utf-8") as f:
            heads[side] = [next(f) for _ in range(20)]
        write(tmp_path / "in" / f"valid.{side}.txt.gz", "".join(heads[side]))
    r = prepare("prepare_cnndm.py", "-input", tmp_path / "in", "-output", tmp_path / "out", "-splits", "valid")
    assert r.returncode == 0 and "format: seed" in r.stdout
    for side in ("src", "tgt"):
        got = lines(tmp_path / "out", f"valid.{side}.txt")
        assert got == [" ".join(s.replace("</s>", " . ").split()).lower() for s in heads[side]]
        assert all(t not in ln.split() for ln in got for t in ("<t>", "</t>", "</s>"))


# ------------------------------------------------------------------------------------ Gigaword
def test_gigaword_rush_release(tmp_path, capsys):
    sumdata = tmp_path / "sumdata"
    write(sumdata / "train" / "train.article.txt.gz", "police found UNK in #.## km cave .\nb UNK\n")
    write(sumdata / "train" / "train.title.txt.gz", "UNK cave found\nb\n")
    write(sumdata / "train" / "valid.article.filter.txt", "v src\n")
    write(sumdata / "train" / "valid.title.filter.txt", "v UNK\n")
    write(sumdata / "Giga" / "input.txt", "t ##-year-old\n")
    write(sumdata / "Giga" / "task1_ref0.txt", "T ref\n")
    out = tmp_path / "out"
    assert gigaword_main(["-input", sumdata, "-output", out]) == {"train": 2, "valid": 1, "test": 1}
    assert lines(out, "train.src.txt") == ["police found <unk> in #.## km cave .", "b <unk>"]
    assert lines(out, "train.tgt.txt") == ["<unk> cave found", "b"]
    assert lines(out, "valid.tgt.txt") == ["v <unk>"]
    assert lines(out, "test.src.txt") == ["t ##-year-old"] and lines(out, "test.tgt.txt") == ["t ref"]
    assert "format: rush" in capsys.readouterr().out


def test_gigaword_seed_ignores_extra(tmp_path, capsys):
    for split in ("train", "valid", "extra"):
        write(tmp_path / "in" / f"{split}.src.txt", f"{split} UNK source\n")
        write(tmp_path / "in" / f"{split}.tgt.txt", f"{split} <unk>\n")
    out = tmp_path / "out"
    gigaword_main(["-input", tmp_path / "in", "-output", out])
    assert tree(out) == ["prepare.json", "train.src.txt", "train.tgt.txt", "valid.src.txt", "valid.tgt.txt"]
    assert json.loads((out / "prepare.json").read_text()) == {"tokenize": "ptb", "lower": True, "digits": "#"}
    assert lines(out, "valid.src.txt") == ["valid <unk> source"] and lines(out, "valid.tgt.txt") == ["valid <unk>"]
    log = capsys.readouterr().out
    assert "format: seed" in log and "ignored (not a split): extra.src.txt, extra.tgt.txt" in log


def test_gigaword_cli_errors(tmp_path):
    write(tmp_path / "in" / "train.article.txt", "a\n")
    err = one_line_error(prepare("prepare_gigaword.py", "-input", tmp_path / "in", "-output", tmp_path / "out"))
    assert "train.article.txt has no partner train.title.txt" in err and "task1_ref0.txt" in err
    (tmp_path / "empty").mkdir()
    err = one_line_error(prepare("prepare_gigaword.py", "-input", tmp_path / "empty", "-output", tmp_path / "out"))
    assert "no Gigaword data" in err and "Rush et al." in err
    r = prepare("prepare_gigaword.py", "-input", tmp_path / "in", "-output", tmp_path / "out", "-format", "hf")
    assert r.returncode == 2 and "invalid choice: 'hf'" in r.stderr
    assert not (tmp_path / "out").exists()


def test_slow_corpora_show_progress_every_few_seconds(tmp_path, monkeypatch):
    """Raw articles tokenize slowly: with -report_every far away, a progress line still comes every
    PROGRESS_SECONDS (a fake clock advancing 4 s per example here: a line every 3 examples)."""
    import itertools
    import logging

    from onmt.prepare import output
    ticks = itertools.count(0, 4)
    monkeypatch.setattr(output.time, "monotonic", lambda: float(next(ticks)))
    corpus = output.Corpus("test", "a test corpus", {"valid": (["v"], lambda: iter([("a b", "a")] * 7))})
    seen = []
    logger = logging.getLogger("test_prepare_progress")
    monkeypatch.setattr(logger, "info", seen.append)
    output.write_corpus(corpus, ["valid"], str(tmp_path / "out"), 100000, logger)
    progress = [m for m in seen if m.startswith("valid: ") and "/s)" in m]
    assert [m.split(" (")[0] for m in progress] == ["valid: 3 examples", "valid: 6 examples"]
