"""An OpenNMT-py 3.x config's data: `build_vocab` (onmt_build_vocab's counts) and `ensure_dataset`
(preprocessed once, found again by the corpora's content and the settings)."""
import os

import pytest

from onmt.errors import UserError
from onmt.inputters.upstream_data import build_vocab, ensure_dataset


def corpus(tmp_path, name, src, tgt):
    s, t = tmp_path / f"{name}.src", tmp_path / f"{name}.tgt"
    s.write_text("".join(line + "\n" for line in src))
    t.write_text("".join(line + "\n" for line in tgt))
    return [str(s), str(t)]


def test_build_vocab_counts_most_frequent_first(tmp_path):
    train = [corpus(tmp_path, "a", ["b a a", "c"], ["a d"]), corpus(tmp_path, "b", ["d d"], ["a"])]
    spec = {"train": train, "src_vocab": str(tmp_path / "v" / "src.vocab"), "tgt_vocab": str(tmp_path / "tgt.vocab")}
    assert build_vocab(spec, n_sample=-1) == [spec["src_vocab"], spec["tgt_vocab"]]
    assert (tmp_path / "v" / "src.vocab").read_text() == "a\t2\nd\t2\nb\t1\nc\t1\n"   # ties by word
    assert (tmp_path / "tgt.vocab").read_text() == "a\t2\nd\t1\n"
    shared = dict(spec, share_vocab=True)
    assert build_vocab(shared, n_sample=1) == [spec["src_vocab"]]   # the first line of each file only
    assert (tmp_path / "v" / "src.vocab").read_text() == "a\t4\nd\t3\nb\t1\n"
    with pytest.raises(UserError, match="src_vocab"):
        build_vocab({"train": train})
    with pytest.raises(UserError, match="tgt_vocab is missing"):
        build_vocab({"train": train, "src_vocab": spec["src_vocab"]})


def test_the_dataset_is_built_once_per_content_and_settings(tmp_path):
    calls = []

    def preprocess_main(argv):
        calls.append(argv)
        prefix = argv[argv.index("-save_data") + 1]
        open(prefix + ".meta.json", "w").close()
    train = [corpus(tmp_path, "a", ["x y"], ["x"]), corpus(tmp_path, "b", ["z"], ["z z"])]
    spec = {"train": train, "valid": corpus(tmp_path, "v", ["x"], ["x"]), "save_data": str(tmp_path / "run"),
            "share_vocab": True, "src_vocab_size": 50}
    prefix = ensure_dataset(spec, preprocess_main)
    assert os.path.dirname(os.path.dirname(prefix)) == str(tmp_path) and prefix.endswith("/data")
    argv = calls[0]
    src = argv[argv.index("-train_src") + 1]
    assert open(src).read() == "x y\nz\n"            # the two corpora, one after the other
    assert "-share_vocab" in argv and argv[argv.index("-src_vocab_size") + 1] == "50"
    assert argv[argv.index("-valid_src") + 1] == spec["valid"][0]
    assert ensure_dataset(dict(spec), preprocess_main) == prefix and len(calls) == 1   # found again
    with open(train[1][1], "a") as f:
        f.write("z\n")                                # a corpus changed: a new dataset beside the old
    assert ensure_dataset(spec, preprocess_main) != prefix and len(calls) == 2
    assert ensure_dataset(dict(spec, src_vocab_size=60), preprocess_main) not in (prefix,) and len(calls) == 3
    with pytest.raises(UserError, match="does not exist"):
        ensure_dataset(dict(spec, train=[[str(tmp_path / "none.src"), train[0][1]]]), preprocess_main)
