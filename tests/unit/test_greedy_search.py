"""Greedy search against a naive one-example-at-a-time argmax loop."""
import random

import torch

from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.constants import BOS, EOS, PAD
from onmt.translate.greedy_search import greedy_search

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


def test_greedy_matches_naive_loop():
    rng = random.Random(1)
    lines = [" ".join(f"w{rng.randrange(10)}" for _ in range(rng.randint(1, 8))) for _ in range(10)]
    for copy in (False, True):
        model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=7, sharp=1.5)
        batch = next(toy_batches(lines, None, VOCABS, len(lines)))
        for lo, hi in ((0, 10), (3, 5), (0, 0)):
            out = greedy_search(model, batch, min_length=lo, max_length=hi)
            for b in range(len(lines)):
                tokens, score = naive_greedy(model, batch, b, hi, lo)
                assert out[b][0].tokens == tokens
                assert abs(out[b][0].score - score) < 1e-4
                assert lo <= len(tokens) <= hi or hi < lo


def test_copy_model_emits_extended_ids():
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=0, sharp=0.1)
    batch = next(toy_batches(["w7 w8 w9 w7 w8 w9"], None, VOCABS, 1))
    out = greedy_search(model, batch, min_length=5, max_length=5)
    assert any(t >= len(VOCABS.tgt) for t in out[0][0].tokens)
