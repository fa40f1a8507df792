"""Raw text in: the text pipeline of prepare (PTB-style tokens, lowercasing) travels with the data and the
checkpoint, and translate.py / the API apply it to raw input, so that a raw article and its prepared
form give the same prediction."""
import argparse
import json

from helpers.e2e import read_lines, torch_threads
from onmt import Summarizer
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.prepare.output import write_text_record
from onmt.prepare.tokenize import ptb_tokenize

RAW = ['The U.S. isn\u2019t "ready," officials said (Reuters).', "Police can't find the dogs' owner, he said.",
       "It costs $5 -- they said: no way!"]


def test_raw_and_prepared_input_give_the_same_prediction(tmp_path):
    prepared = [" ".join(ptb_tokenize(line)).lower() for line in RAW]
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.src.txt").write_text("\n".join(prepared * 4) + "\n")
    (data / "train.tgt.txt").write_text("\n".join(" ".join(p.split()[:4]) for p in prepared * 4) + "\n")
    write_text_record(str(data), argparse.Namespace(tokenize="auto", lower=True))
    prefix = str(tmp_path / "prep" / "d")
    preprocess_bin.main(["-train_src", str(data / "train.src.txt"), "-train_tgt", str(data / "train.tgt.txt"),
                         "-save_data", prefix, "-share_vocab", "-dynamic_dict"])
    assert json.load(open(prefix + ".meta.json"))["text"] == {"tokenize": "ptb", "lower": True}
    with torch_threads(1):
        train_bin.main(["-data", prefix, "-save_model", str(tmp_path / "m"), "-copy_attn", "-rnn_size", "16",
                        "-word_vec_size", "8", "-layers", "1", "-train_steps", "30", "-valid_steps", "0",
                        "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "4"])
    ckpt = str(tmp_path / "m_step_30.pt")
    (tmp_path / "raw.txt").write_text("\n".join(RAW) + "\n")
    (tmp_path / "prepared.txt").write_text("\n".join(prepared) + "\n")
    for name in ("raw", "prepared"):
        translate_bin.main(["-model", ckpt, "-src", str(tmp_path / f"{name}.txt"), "-output",
                            str(tmp_path / f"{name}.pred"), "-beam_size", "2", "-max_length", "6"])
    assert read_lines(tmp_path / "raw.pred") == read_lines(tmp_path / "prepared.pred")
    assert any(line.strip() for line in read_lines(tmp_path / "raw.pred"))
    s = Summarizer.load(ckpt)
    assert s.summarize(RAW, beam_size=2, max_length=6, detokenize=False) == read_lines(tmp_path / "prepared.pred")
