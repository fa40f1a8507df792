"""Greedy search (beam size 1) against plain argmax loops: one example at a time, and batched in every
model family (exact tokens and scores)."""
import random

import pytest
import torch

from helpers.checkpoints import VOCABS as FAMILY_VOCABS
from helpers.checkpoints import build_tiny
from helpers.search import search
from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.constants import BOS, EOS, PAD
from onmt.translate.decoding import LengthPenalty, apply_rules

VOCABS = toy_vocabs(n_src_words=10, n_tgt_words=5)


@torch.no_grad()
def naive_greedy(model, batch, b, max_length, min_length):
    state = model.init_state(batch, model.encode(batch)).reorder(torch.tensor([b]))
    tokens, total, inp = [], 0.0, BOS
    for step in range(max_length + 1):
        logp, state, _ = model.decode_step(torch.tensor([inp]), state)
        lp = logp[0].clone()
        lp[PAD] = lp[BOS] = float("-inf")
        if step < min_length:
            lp[EOS] = float("-inf")
        if step == max_length:
            return tokens, total + float(lp[EOS])
        tok = int(lp.argmax())
        total += float(lp[tok])
        if tok == EOS:
            return tokens, total
        tokens.append(tok)
        inp = tok


@torch.no_grad()
def batched_greedy(model, batch, min_length=0, max_length=10, block_ngram_repeat=0, length_penalty="none",
                   alpha=0.0):
    """The greedy loop written plainly: every row decodes until every row has produced </s>; per
    example (tokens, score, log_prob)."""
    B = batch.batch_size
    state = model.init_state(batch, model.encode(batch))
    inputs = torch.full((B,), BOS)
    history = torch.zeros(B, 0, dtype=torch.long)
    log_prob, lengths = torch.zeros(B), torch.zeros(B, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for step in range(max_length + 1):
        scores, state, _ = model.decode_step_scores(inputs, state)
        apply_rules(scores, history, step, min_length=min_length, max_length=max_length,
                    block_ngram_repeat=block_ngram_repeat)
        best, token = scores.best()
        log_prob += torch.where(finished, torch.zeros_like(best), best)
        lengths += (~finished).long()
        history = torch.cat([history, token.unsqueeze(1)], dim=1)
        finished |= token == EOS
        inputs = token
        if bool(finished.all()):
            break
    penalty = LengthPenalty(length_penalty, alpha)
    out = []
    for b in range(B):
        length = int(lengths[b])                                 # </s> included
        n = length - (1 if int(history[b, length - 1]) == EOS else 0)
        out.append((history[b, :n].tolist(), float(log_prob[b] / penalty(length)), float(log_prob[b])))
    return out


def test_greedy_matches_naive_loop():
    rng = random.Random(1)
    lines = [" ".join(f"w{rng.randrange(10)}" for _ in range(rng.randint(1, 8))) for _ in range(10)]
    for copy in (False, True):
        model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=7, sharp=1.5)
        batch = next(toy_batches(lines, None, VOCABS, len(lines)))
        for lo, hi in ((0, 10), (3, 5), (0, 0)):
            out = search(model, batch, beam_size=1, min_length=lo, max_length=hi)
            for b in range(len(lines)):
                tokens, score = naive_greedy(model, batch, b, hi, lo)
                assert out[b][0].tokens == tokens
                assert abs(out[b][0].score - score) < 1e-4
                assert lo <= len(tokens) <= hi or hi < lo


@pytest.mark.parametrize("family", ["reinforced", "copy", "rnn"])
def test_beam_one_is_the_greedy_loop_in_every_family(family, one_torch_thread):
    """Beam size 1 is greedy search: the same tokens, scores and sums of log-probabilities (to float32 rounding)."""
    rng = random.Random(3)
    lines = [" ".join(f"w{rng.randrange(14)}" for _ in range(rng.randint(1, 9))) for _ in range(9)]
    batch = next(toy_batches(lines, None, FAMILY_VOCABS, len(lines)))
    for seed in (0, 4):
        model, _ = build_tiny(family, seed=seed)
        for kw in ({}, {"min_length": 2, "block_ngram_repeat": 2, "length_penalty": "wu", "alpha": 0.9},
                   {"max_length": 4, "length_penalty": "avg"}):
            want = batched_greedy(model, batch, **kw)
            got = search(model, batch, beam_size=1, **{"max_length": 10, **kw})
            assert [h[0].tokens for h in got] == [w[0] for w in want], (seed, kw)
            # the same sums; the last bits may differ where the CPU's kernels differ by batch shape (AVX2)
            flat = [x for h in got for x in (h[0].score, h[0].log_prob)]
            assert flat == pytest.approx([x for w in want for x in w[1:]], rel=1e-6, abs=0), (seed, kw)


def test_copy_model_emits_extended_ids():
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=0, sharp=0.1)
    batch = next(toy_batches(["w7 w8 w9 w7 w8 w9"], None, VOCABS, 1))
    out = search(model, batch, beam_size=1, min_length=5, max_length=5)
    assert any(t >= len(VOCABS.tgt) for t in out[0][0].tokens)
