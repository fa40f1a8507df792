"""Statistics (onmt/utils/statistics.py): the generic sums, their ratios, and the figures it leaves to
their owners (each loss names its own, onmt/losses; the update norms theirs, utils/update_norms.py)."""
import math
import re

import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.losses.ml import MLLoss
from onmt.losses.rl import MixedLoss
from onmt.utils import statistics, update_norms
from onmt.utils.statistics import Statistics


def test_sums_add_up_and_ratios():
    a = Statistics(loss=6.0, n_words=3, n_correct=1, n_examples=1, n_src_words=4, extra={"r": 1.0})
    b = Statistics(loss=2.0, n_words=1, n_correct=1, n_examples=2, n_src_words=5, extra={"r": 0.5, "s": 2.0})
    assert a.update(b) is a
    assert (a.loss, a.n_words, a.n_correct, a.n_examples, a.n_src_words) == (8.0, 4, 2, 3, 9)
    assert a.extra == {"r": 1.5, "s": 2.0}
    assert math.isclose(a.xent(), 2.0) and math.isclose(a.ppl(), math.exp(2.0))
    assert a.accuracy() == 50.0
    assert math.isfinite(Statistics(loss=1e6, n_words=1).ppl())
    assert Statistics().ppl() == 1.0


def test_scalars_are_the_token_figures_only():
    assert Statistics(loss=4.0, n_words=2, n_correct=1, extra={"p_copy": 1.0}).scalars() == \
        {"xent": 2.0, "ppl": math.exp(2.0), "accuracy": 50.0}
    assert Statistics(n_words=5, extra={"rl_examples": 2}).scalars() == {}   # no token loss (-rl_gamma 1)


def _owned_names():
    """Every sum the losses and the trainer put in Statistics.extra, and every name they report, from
    a training and a validation batch of the copy model with coverage and of the reinforced model."""
    names = {"sampled", "update_norm", "rouge", "reward", "copies", "coverage"}
    for family in (dict(copy_attn=True, coverage_attn=True, global_attention="mlp"),
                   dict(reinforced=True, rnn_size=12, word_vec_size=6, scheduled_sampling=0.5)):
        opt, vocabs = make_opt(**family), make_vocabs()
        model = build(opt, vocabs)
        model.train()
        batch = make_batch(vocabs, B=3, S=7, T=6)
        loss_fn = MixedLoss(MLLoss(lambda_coverage=0.5), gamma=0.5, max_length=5, valid_rouge=True)
        torch.manual_seed(0)
        stats = loss_fn(model, batch)[1].update(loss_fn.validate(model, batch))
        stats.extra.update(update_norms.as_sums({"ml": 1.0, "rl": 2.0}))
        names |= set(stats.extra) | set(loss_fn.scalars(stats)) | set(update_norms.scalars(stats.extra))
    assert {"sampled_inputs", "p_copy", "coverage_loss", "rl_examples", "valid_rougeL", "norm_rl"} <= names
    return names


def test_statistics_knows_no_loss_figure_by_name():
    source = open(statistics.__file__).read()
    code = re.sub(r'""".*?"""', "", source, flags=re.S)   # docstrings may say what others own
    code = "\n".join(line.split("#")[0] for line in code.splitlines())
    assert not [name for name in _owned_names() if name.lower() in code.lower()]
