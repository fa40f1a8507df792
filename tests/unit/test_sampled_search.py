"""Test-time sampling in the search (onmt/translate/beam_search.py with a decoding.Sampler): top-k 1 is the
greedy search bit for bit, a seed repeats, -n_best samples per line, the token rules hold, the scores are the
model's."""
import pytest
import torch

from helpers.rescoring import rescore
from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.constants import BOS, EOS, PAD, UNK
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings

VOCABS = toy_vocabs(n_src_words=8, n_tgt_words=5)
LINES = ["w0 w1 w2", "w3 w1", "w4 w4 w2 w0", "w5"]


def setup(copy=False, sharp=1.0):
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=1, sharp=sharp)
    return model, next(toy_batches(LINES, None, VOCABS, len(LINES)))


def run(model, batch, seed=None, **settings):
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    return beam_search(model, batch, SearchSettings(**{"max_length": 8, **settings}), generator=generator)


def as_lists(hyps):
    return [[(h.tokens, h.score, h.log_prob) for h in nbest] for nbest in hyps]


@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("extra", [{}, {"random_sampling_temp": 0.5}, {"random_sampling_topp": 0.9}])
def test_top_k_1_is_the_greedy_search_bit_for_bit(copy, extra):
    model, batch = setup(copy)
    greedy = as_lists(run(model, batch, beam_size=1))
    assert SearchSettings(random_sampling_topk=1, **extra).sampler is None
    assert as_lists(run(model, batch, seed=0, beam_size=1, random_sampling_topk=1, **extra)) == greedy
    # a temperature of 0 is the argmax too (upstream's rule)
    assert as_lists(run(model, batch, seed=0, beam_size=1, random_sampling_topk=0, random_sampling_temp=0.0)) == greedy


@pytest.mark.parametrize("copy", [False, True])
def test_a_nucleus_of_one_token_draws_the_greedy_tokens(copy):
    """The sampling path itself (sampler not None) with only the most likely token kept: the greedy search's
    predictions and scores."""
    model, batch = setup(copy)
    greedy = as_lists(run(model, batch, beam_size=1))
    sampled = as_lists(run(model, batch, seed=5, beam_size=1, random_sampling_topk=0, random_sampling_topp=1e-6))
    for g, s in zip(greedy, sampled):
        assert g[0][0] == s[0][0]
        assert g[0][1] == pytest.approx(s[0][1], abs=1e-5)


@pytest.mark.parametrize("copy", [False, True])
def test_a_seed_repeats_and_n_best_samples_per_line(copy):
    model, batch = setup(copy, sharp=0.5)
    settings = dict(beam_size=1, n_best=4, random_sampling_topk=0, random_sampling_temp=1.5, length_penalty="avg")
    first = as_lists(run(model, batch, seed=7, **settings))
    assert first == as_lists(run(model, batch, seed=7, **settings))
    assert all(len(nbest) == 4 for nbest in first)
    assert any(len({tuple(t) for t, _, _ in nbest}) > 1 for nbest in first), "4 samples per line, some different"
    others = [as_lists(run(model, batch, seed=s, **settings)) for s in range(3)]
    assert any(o != first for o in others)
    for nbest in first:   # best first
        assert [s for _, s, _ in nbest] == sorted((s for _, s, _ in nbest), reverse=True)


def test_a_sample_scores_the_model_s_own_log_probabilities_and_keeps_the_rules():
    model, batch = setup(True, sharp=0.3)
    hyps = run(model, batch, seed=2, beam_size=1, n_best=3, random_sampling_topk=0, random_sampling_temp=2.0,
               min_length=2, block_ngram_repeat=1, ban_unk_token=True, max_length=5)
    for b, nbest in enumerate(hyps):
        for h in nbest:
            assert 2 <= len(h.tokens) <= 5 and EOS not in h.tokens and UNK not in h.tokens
            assert len(set(h.tokens)) == len(h.tokens)              # no repeated 1-gram
            assert h.log_prob == pytest.approx(rescore(model, batch, b, [h.tokens])[0], abs=1e-4)
            assert h.score == pytest.approx(h.log_prob)              # length penalty none


def test_top_k_draws_only_among_the_k_most_likely_tokens():
    """Top-k 2: every sample starts with one of the two most likely first tokens of its line (the rules' bans
    aside)."""
    model, batch = setup(False, sharp=0.5)
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch))
        logp, _, _ = model.decode_step(torch.full((batch.batch_size,), 2, dtype=torch.long), state)
    logp[:, PAD] = logp[:, BOS] = float("-inf")     # banned by the rules
    top2 = logp.topk(2, dim=1).indices.tolist()
    for seed in range(5):
        hyps = run(model, batch, seed=seed, beam_size=1, n_best=3, random_sampling_topk=2)
        for b, nbest in enumerate(hyps):
            for h in nbest:
                first = h.tokens[0] if h.tokens else EOS
                assert first in top2[b]
