"""No hidden host-device synchronization in a training or decoding step (counted on the CPU with
helpers.syncs.counting_syncs: .item / .tolist / .cpu / nonzero / unique / bool, int, float of a tensor /
boolean-mask indexing). Each one left is pinned here with why it is there; a new one fails the test.

Training step (Trainer.train_step, one batch), every family:
    inputters/batch.py      n_tgt_tokens: int() of the HOST batch, before it moves (no device sync)
    trainer.py  (int)       the step's source tokens, of the HOST batch before the move (no device sync)
    trainer.py  (item)      isfinite(loss): once per batch, to stop on a NaN before the update
    losses/ml.py (tolist)   the statistics: ONE copy of all the figures (onmt/losses/ml.py `_statistics`)
    models/rnn_encoder.py   pack_padded_sequence's lengths on the host (.cpu, and pad_packed's own): once
                            per encoder pass
    fused/gold_mixture.py   See et al.'s gold pass gathers the real target rows (nonzero): once per pass
  mixed objective (-rl_gamma), in addition:
    a second encoder pass for the rollouts (2 more .cpu), losses/rl.py: ONE copy of the RL figures,
    utils/update_norms.py: the two terms' norms (2), reinforced/rollout.py: whether every rollout has
    ended, once per rollout step (bool; the loop stops early instead of running max_gen_length steps)
Decoding: `decode_step` has none, in every family, nor the searches' `decode_step_scores`. A beam-search
step has two: whether a hypothesis ended (bool, to set it aside on the host) and how many examples are
still live (int, to shrink the batch).
"""
import collections

import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from helpers.search import search
from helpers.syncs import counting_syncs
from onmt.losses import build_loss
from onmt.trainer import Trainer

FAMILIES = {
    "rnn": dict(brnn=True, global_attention="general"),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp"),
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6),
}
COMMON = {("__int__", "inputters/batch.py"): 1, ("__int__", "trainer.py"): 1, ("item", "trainer.py"): 1,
          ("tolist", "losses/ml.py"): 1, ("cpu", "models/rnn_encoder.py"): 2}
TRAIN = {
    "rnn": COMMON,
    "copy": {**COMMON, ("nonzero", "models/fused.py"): 1},
    "reinforced": COMMON,
}
ROLLOUT_STEPS = 5   # -max_gen_length: the rollouts' steps (none ends early: the model is untrained)
# the mixed step of a dropout-free model encodes once for both terms (onmt/losses/rl.py): the encoder's
# syncs are the ML step's
MIXED = {**COMMON, ("tolist", "losses/rl.py"): 1,
         ("__float__", "utils/update_norms.py"): 2, ("__bool__", "reinforced/rollout.py"): ROLLOUT_STEPS}
BEAM_STEP = {("__bool__", "translate/beam_search.py"): 1, ("__int__", "translate/beam_search.py"): 1}


def _by_file(counts):
    out = collections.Counter()
    for (name, where), n in counts.items():
        out[(name, where.rsplit(":", 1)[0])] += n
    return dict(out)


def _one_train_step(family, **more):
    torch.manual_seed(0)
    opt, vocabs = make_opt(**FAMILIES[family], **more), make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=3, S=7, T=6, copy_source=True)
    trainer = Trainer(model, build_loss(opt), torch.optim.SGD(model.parameters(), lr=0.1), save_model="unused")
    trainer.train_step(batch, 1)   # warm: first-call work is not a step's
    with counting_syncs() as counts:
        trainer.train_step(batch, 2)
    return _by_file(counts)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_training_step_syncs(family):
    assert _one_train_step(family) == TRAIN[family]


def test_mixed_objective_step_syncs():
    assert _one_train_step("reinforced", rl_gamma=0.5, max_gen_length=ROLLOUT_STEPS) == MIXED


@pytest.mark.parametrize("family", list(FAMILIES))
def test_decoding_step_has_no_sync_and_a_beam_step_two(family):
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build(make_opt(**FAMILIES[family]), vocabs).eval()
    batch = make_batch(vocabs, B=3, S=7, T=6, copy_source=True)
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch))
        inputs = torch.full((3,), 2)
        model.decode_step(inputs, state)
        with counting_syncs() as counts:
            model.decode_step(inputs, state)
            model.decode_step_scores(inputs, state)   # the searches' step (the reinforced model's MixtureScores)
    assert _by_file(counts) == {}
    per_length = []
    for length in (3, 4):   # no hypothesis can end before max_length: the same work per step
        with counting_syncs() as counts:
            search(model, batch, beam_size=3, min_length=length, max_length=length)
        per_length.append(collections.Counter(_by_file(counts)))
    assert dict(per_length[1] - per_length[0]) == BEAM_STEP


def test_the_counter_sees_what_it_should():
    x = torch.arange(4)
    with counting_syncs(under="tests") as counts:
        x.sum().item(), x.tolist(), bool(x.any()), x[x > 1], torch.unique(x), x.nonzero()
    assert sum(counts.values()) == 6
