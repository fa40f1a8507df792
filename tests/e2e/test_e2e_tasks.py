"""The sanity tasks, one recipe per model family (slow: up to a few CPU minutes each on one thread).

tools/make_toy_data.py -> preprocess -> train -> translate (beam 5) through the real entry points,
scored by exact match (prediction line == reference line) on 500 held-out pairs. RECIPES is the
docs/user-guide.md's table "Sanity tasks": each family's sizes and steps on copy, reverse, sort and copy_oov, and
the floor each must reach (its measured exact match on this CPU, less a margin for another host's
arithmetic). copy_oov's target vocabulary holds only the 20 common words, so its rare words can only be
copied: without a pointer the same model stays <= 20 %.
"""
import os

import pytest

from helpers.e2e import exact_match, make_data, preprocess, read_lines, train, translate

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

COMMON = ["-layers", "1", "-rnn_size", "128", "-word_vec_size", "64", "-brnn", "-dropout", "0.0", "-optim", "adam",
          "-learning_rate", "0.003", "-batch_size", "64", "-seed", "1", "-report_every", "100",
          "-save_checkpoint_steps", "0"]
FAMILIES = {"rnn": ["-global_attention", "general"],                 # Luong et al.'s attention model
            "copy": ["-copy_attn", "-global_attention", "mlp"],       # See et al.'s pointer-generator
            # Paulus et al.'s, with their scheduled sampling (the floors were measured with it; the family's
            # default is 0 since 2026-11-29)
            "reinforced": ["-reinforced", "-max_grad_norm", "2", "-scheduled_sampling", "0.25"]}
DATA = {"copy": {}, "reverse": {}, "sort": {}, "copy_oov": {}}
PREP = {"copy_oov": ["-src_vocab_size", "24", "-tgt_vocab_size", "24"]}   # the 4 specials + w0 .. w19
# (family, task) -> (training steps, exact-match floor)
RECIPES = {
    ("rnn", "copy"): (500, 0.98), ("rnn", "reverse"): (500, 0.95), ("rnn", "sort"): (1500, 0.95),
    ("copy", "copy"): (500, 0.98), ("copy", "reverse"): (500, 0.98), ("copy", "sort"): (1500, 0.90),
    ("copy", "copy_oov"): (500, 0.95),
    ("reinforced", "copy"): (500, 0.98), ("reinforced", "reverse"): (500, 0.98),
    ("reinforced", "sort"): (4000, 0.88), ("reinforced", "copy_oov"): (500, 0.95),
}


def _run(root, task, family, steps, model_opts=None):
    data = make_data(task, root / "data", seed=1, train_size=5000, test_size=500, **DATA[task])
    prefix = preprocess(data, root / "prep" / "data", *PREP.get(task, []))
    opts = COMMON + (model_opts if model_opts is not None else FAMILIES[family])
    ckpt = train(prefix, root / "models" / "m", *opts, "-train_steps", steps, "-valid_steps", steps)
    pred = root / "pred.txt"
    translate(ckpt, os.path.join(data, "test.src.txt"), pred, "-beam_size", "5", "-batch_size", "64")
    em = exact_match(pred, os.path.join(data, "test.tgt.txt"))
    print(f"{task} ({family}, {steps} steps): exact match {em:.3f}")
    return em, read_lines(pred)


@pytest.mark.parametrize("family, task", sorted(RECIPES), ids=[f"{f}-{t}" for f, t in sorted(RECIPES)])
def test_each_family_reaches_its_figure(tmp_path, family, task):
    steps, floor = RECIPES[family, task]
    em, preds = _run(tmp_path, task, family, steps)
    assert em >= floor, f"{family} on {task}: exact match {em:.3f} < {floor}"
    if task == "copy_oov":
        assert sum("<unk>" in p.split() for p in preds) <= 0.05 * len(preds)


def test_without_pointer_oov_words_stay_unknown(tmp_path):
    em, preds = _run(tmp_path, "copy_oov", "rnn", 500)
    assert em <= 0.20, em
    assert sum("<unk>" in p.split() for p in preds) >= 0.5 * len(preds)
