"""A UTF-8 byte-order mark is never part of a word, wherever text is read (training text, translate -src,
word lists, the API), and the API refuses what is not text (issue: "Nothing lost, ever", item 3)."""
import re

import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.e2e import read_lines
from onmt import Summarizer
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import translate as translate_bin
from onmt.inputters.corpus import read_lines as corpus_lines
from onmt.inputters.vocab_builder import load_vocabs, read_word_list

BOM = "\ufeff"


def test_training_text_and_word_lists_drop_the_mark(tmp_path):
    src, tgt, words = tmp_path / "s.txt", tmp_path / "t.txt", tmp_path / "words.txt"
    src.write_text(BOM + "according to police\npolice said\n", encoding="utf-8")
    tgt.write_text(BOM + "according police\npolice\n", encoding="utf-8")
    words.write_text(BOM + "according\npolice\n", encoding="utf-8")
    assert list(corpus_lines(str(src)))[0] == "according to police"
    assert read_word_list(str(words))[0] == ("according", 0)
    prefix = str(tmp_path / "p" / "d")
    preprocess_bin.main(["-train_src", str(src), "-train_tgt", str(tgt), "-save_data", prefix, "-share_vocab",
                         "-dynamic_dict", "-src_vocab", str(words)])
    vocabs, _ = load_vocabs(prefix)
    assert "according" in vocabs.src.itos and not any(BOM in w for w in vocabs.src.itos)


def test_translate_src_with_a_mark_predicts_as_without(tmp_path):
    ckpt = save_tiny_checkpoint(tmp_path / "m.pt", "reinforced", seed=2)
    lines = ["w1 w2 w9 w3", "w7 w7 w3"]
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    marked.write_text(BOM + "\n".join(lines) + "\n", encoding="utf-8")
    for name in ("plain", "marked"):
        translate_bin.main(["-model", ckpt, "-src", str(tmp_path / f"{name}.txt"), "-output",
                            str(tmp_path / f"{name}.pred"), "-beam_size", "2", "-max_length", "5"])
    assert read_lines(tmp_path / "marked.pred") == read_lines(tmp_path / "plain.pred")
    s = Summarizer.load(ckpt)
    assert s.summarize(BOM + lines[0], max_length=5) == s.summarize(lines[0], max_length=5)


@pytest.mark.parametrize("texts, message", [([None], "texts[0] is NoneType, not str"),
                                            (["a b", 5], "texts[1] is int, not str"),
                                            ([b"a b"], "decode bytes first"), (b"a b", "got bytes"),
                                            (7, "got int")])
def test_summarize_refuses_what_is_not_text(tmp_path, texts, message):
    s = Summarizer.load(save_tiny_checkpoint(tmp_path / "m.pt", "copy", seed=2))
    with pytest.raises(TypeError, match=re.escape(message)):
        s.summarize(texts)
