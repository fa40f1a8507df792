"""End-to-end learning on toy tasks (slow: about a CPU minute each on one thread).

tools/make_toy_data.py -> preprocess -> train -> translate (beam 5) through the real entry points,
scored by exact match (prediction line == reference line) on the test set:
- reverse: the attention model (-brnn, -global_attention general) reaches >= 98%;
- copy_oov: with target vocabularies of the 20 common words, the rare words can only be copied, so
  the pointer-generator (-copy_attn) reaches >= 95% and the same model without it stays <= 20%;
- the reinforced model (-reinforced, scheduled sampling 0.25) reaches >= 95% on copy_oov and
  >= 90% on sort.
"""
import os

import pytest

from helpers.e2e import exact_match, make_data, preprocess, read_lines, train, translate

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

ATTN_MODEL = ["-layers", "1", "-rnn_size", "128", "-word_vec_size", "64", "-brnn", "-global_attention", "general",
              "-dropout", "0.0", "-optim", "adam", "-learning_rate", "0.003", "-batch_size", "64", "-seed", "1",
              "-report_every", "100", "-save_checkpoint_steps", "0"]



def _run(root, task, data_opts, prep_opts, model_opts, steps):
    data = make_data(task, root / "data", seed=1, **data_opts)
    prefix = preprocess(data, root / "prep" / "data", *prep_opts)
    ckpt = train(prefix, root / "models" / "m", *model_opts, "-train_steps", steps, "-valid_steps", steps)
    pred = root / "pred.txt"
    translate(ckpt, os.path.join(data, "test.src.txt"), pred, "-beam_size", "5", "-batch_size", "64")
    em = exact_match(pred, os.path.join(data, "test.tgt.txt"))
    family = "reinforced" if "-reinforced" in model_opts else "copy" if "-copy_attn" in model_opts else "rnn"
    print(f"{task} ({family}): exact match {em:.3f}")
    return em, read_lines(pred)


def test_attention_model_learns_reverse(tmp_path):
    em, _ = _run(tmp_path, "reverse", dict(train_size=5000, test_size=500), [], ATTN_MODEL, 500)
    assert em >= 0.98, em


OOV_DATA = dict(train_size=5000, test_size=500)
OOV_PREP = ["-src_vocab_size", "24", "-tgt_vocab_size", "24"]   # the 4 specials + w0 .. w19


def test_pointer_generator_copies_oov_words(tmp_path):
    em, preds = _run(tmp_path, "copy_oov", OOV_DATA, OOV_PREP, ATTN_MODEL + ["-copy_attn"], 500)
    assert em >= 0.95, em
    assert sum("<unk>" in p.split() for p in preds) <= 0.05 * len(preds)


def test_without_pointer_oov_words_stay_unknown(tmp_path):
    em, preds = _run(tmp_path, "copy_oov", OOV_DATA, OOV_PREP, ATTN_MODEL, 500)
    assert em <= 0.20, em
    assert sum("<unk>" in p.split() for p in preds) >= 0.5 * len(preds)


# The reinforced model (Paulus et al.) through the same entry points; -scheduled_sampling as the paper.
REINFORCED_MODEL = ["-reinforced", "-layers", "1", "-rnn_size", "128", "-word_vec_size", "64", "-brnn",
                    "-dropout", "0.0", "-optim", "adam", "-learning_rate", "0.003", "-batch_size", "64",
                    "-seed", "1", "-report_every", "100", "-save_checkpoint_steps", "0",
                    "-scheduled_sampling", "0.25", "-max_grad_norm", "2"]


def test_reinforced_model_copies_oov_words(tmp_path):
    em, preds = _run(tmp_path, "copy_oov", OOV_DATA, OOV_PREP, REINFORCED_MODEL, 500)
    assert em >= 0.95, em


def test_reinforced_model_learns_sort(tmp_path):
    em, _ = _run(tmp_path, "sort", dict(train_size=5000, test_size=500), [], REINFORCED_MODEL, 2500)
    assert em >= 0.90, em
