from collections import Counter

import pytest

from onmt.constants import BOS, EOS, PAD, SPECIALS, UNK
from onmt.errors import UserError
from onmt.inputters.vocab_builder import build_vocabs, load_vocabs, save_vocabs, write_json_atomic


def test_shared_prefix_specials_and_ties():
    src = Counter({"b": 3, "a": 3, "c": 5, "<unk>": 9, "</s>": 2, "d": 1})
    tgt = Counter({"e": 4, "a": 1, "<s>": 7})
    vocabs, counts = build_vocabs(src, tgt, 8, 6, True)
    # c=5, a=3+1, e=4 (tie with a, broken by the word), b=3; d cut; specials never counted
    assert vocabs.src.itos == SPECIALS + ["c", "a", "e", "b"]
    assert vocabs.tgt.itos == vocabs.src.itos[:6]
    assert (vocabs.src.stoi["<unk>"], vocabs.src.stoi["<blank>"], vocabs.src.stoi["<s>"],
            vocabs.src.stoi["</s>"]) == (UNK, PAD, BOS, EOS)
    assert counts["src"] == [0, 0, 0, 0, 5, 4, 4, 3]


def test_shared_order_independent_of_input_order():
    words = [f"w{i % 37}" for i in range(500)]
    a, _ = build_vocabs(Counter(words), Counter(), 20, 10, True)
    b, _ = build_vocabs(Counter(reversed(words)), Counter(), 20, 10, True)
    assert a == b


def test_unshared_and_min_frequency():
    src = Counter({"a": 5, "b": 2, "c": 1})
    tgt = Counter({"x": 3, "y": 1})
    v, _ = build_vocabs(src, tgt, 100, 100, False, src_min_freq=2, tgt_min_freq=2)
    assert v.src.itos == SPECIALS + ["a", "b"] and v.tgt.itos == SPECIALS + ["x"] and not v.shared
    v, _ = build_vocabs(src + tgt, None, 100, 100, True, src_min_freq=2, tgt_min_freq=3)
    assert v.src.itos == SPECIALS + ["a", "x", "b"] and v.tgt.itos == SPECIALS + ["a", "x"]


@pytest.mark.parametrize("shared", [True, False])
def test_save_load_round_trip(tmp_path, shared):
    v, counts = build_vocabs(Counter("a a b c d d d".split()), Counter("x y y a".split()), 7, 6, shared)
    prefix = str(tmp_path / "p")
    save_vocabs(prefix, v, counts)
    write_json_atomic(prefix + ".meta.json", {"share_vocab": shared, "src_vocab_size": len(v.src),
                                              "tgt_vocab_size": len(v.tgt), "shards": {}})
    loaded, meta = load_vocabs(prefix)
    assert loaded == v and meta["share_vocab"] == shared


def test_load_missing_says_run_preprocess(tmp_path):
    with pytest.raises(UserError, match="run preprocess.py first"):
        load_vocabs(str(tmp_path / "nothing"))


@pytest.mark.parametrize("shared", [True, False])
def test_a_vocabulary_edited_after_preprocessing_is_refused(tmp_path, shared):
    """meta.json records each vocabulary file's SHA-1: a word renamed in place would train a model whose
    ids mean other words than the shards'."""
    from onmt.bin import preprocess as preprocess_bin
    (tmp_path / "s.txt").write_text("police said the man\nthe man said\n")
    (tmp_path / "t.txt").write_text("police said\nman said\n")
    prefix = str(tmp_path / "p" / "d")
    preprocess_bin.main(["-train_src", str(tmp_path / "s.txt"), "-train_tgt", str(tmp_path / "t.txt"),
                         "-save_data", prefix, "-dynamic_dict"] + (["-share_vocab"] if shared else []))
    load_vocabs(prefix)   # untouched: fine
    vocab = tmp_path / "p" / ("d.vocab.txt" if shared else "d.tgt.vocab.txt")
    vocab.write_text(vocab.read_text().replace("police", "polite"))
    with pytest.raises(UserError, match="was changed after preprocessing"):
        load_vocabs(prefix)
