"""Beam search against exhaustive search, teacher-forced re-scoring and naive n-gram checks."""
import itertools
import random

import pytest
import torch

from onmt.inputters.vocab import EOS, UNK
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import blocked_ngrams, length_penalty
from onmt.translate.greedy_search import greedy_search
from toy_models import ToyModel, toy_batches, toy_vocabs

VOCABS = toy_vocabs(n_src_words=8, n_tgt_words=3)    # V_tgt = 7: generable <unk>, w0, w1, w2, </s>


def one_batch(lines, copy=False, seed=0, sharp=2.0):
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=seed, sharp=sharp)
    return model, next(toy_batches(lines, None, VOCABS, len(lines)))


def rescore(model, batch, b, seqs):
    """Teacher-forced sum of log p over each of `seqs` (+ </s>) for example b, a loop over steps."""
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch)).reorder(torch.full((len(seqs),), b))
        full = [[2] + s + [EOS] for s in seqs]
        T = max(len(s) for s in full)
        total = torch.zeros(len(seqs))
        for t in range(T - 1):
            inp = torch.tensor([s[t] if t < len(s) - 1 else EOS for s in full])
            logp, state, _ = model.decode_step(inp, state)
            for i, s in enumerate(full):
                if t + 1 < len(s):
                    total[i] += logp[i, s[t + 1]]
    return total.tolist()


def has_repeat(tokens, n, ignore=()):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    grams = [g for g in grams if not set(g) & set(ignore)]
    return len(grams) != len(set(grams))


def brute_force(model, batch, b, generable, max_len, min_len=0, block=0, ignore=(), kind="none", alpha=0.0):
    seqs = [list(s) for L in range(min_len, max_len + 1) for s in itertools.product(generable, repeat=L)]
    if block:
        seqs = [s for s in seqs if not has_repeat(s, block, ignore)]
    raw = rescore(model, batch, b, seqs)
    scored = [(r / length_penalty(kind, len(s) + 1, alpha), s) for r, s in zip(raw, seqs)]
    return sorted(scored, key=lambda x: -x[0])


@pytest.mark.parametrize("kind,alpha,min_len,block,copy", [
    ("none", 0.0, 0, 0, False), ("avg", 0.0, 0, 0, False), ("wu", 1.5, 1, 0, False),
    ("none", 0.0, 2, 1, False), ("wu", 0.7, 0, 2, True), ("avg", 0.0, 1, 2, True)])
def test_beam_matches_exhaustive_search(kind, alpha, min_len, block, copy):
    model, batch = one_batch(["w0 w5 w1", "w2 w7 w7 w3 w4"], copy=copy, seed=3)
    max_len = 3
    out = beam_search(model, batch, beam_size=125 if copy else 64, n_best=3, min_length=min_len,
                      max_length=max_len, length_penalty_kind=kind, alpha=alpha, block_ngram_repeat=block)
    V = len(VOCABS.tgt)
    for b in range(2):
        generable = [UNK, 4, 5, 6] + ([V + j for j in range(len(batch.oovs[b]))] if copy else [])
        if copy:   # keep the exhaustive set small: an example with one OOV word
            generable = generable[:5]
        best = brute_force(model, batch, b, generable, max_len, min_len, block, (), kind, alpha)
        if copy and b == 1:
            continue   # the second example has 3 OOVs, too many for the enumeration above
        assert [h.tokens for h in out[b]] == [s for _, s in best[:3]]
        assert [h.score for h in out[b]] == pytest.approx([s for s, _ in best[:3]], abs=1e-4)


def test_scores_equal_teacher_forced_rescoring():
    """Backpointers reorder the state consistently: each hypothesis's score is its true log-prob."""
    lines = ["w0 w1 w2 w3", "w4", "w5 w6 w7 w0 w1 w2", "w3 w3"]
    for copy in (False, True):
        model, batch = one_batch(lines, copy=copy, seed=1, sharp=1.0)
        out = beam_search(model, batch, beam_size=4, n_best=4, max_length=8, block_ngram_repeat=2)
        for b, hyps in enumerate(out):
            assert len(hyps) == 4
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
            true = rescore(model, batch, b, [h.tokens for h in hyps])
            assert [h.log_prob for h in hyps] == pytest.approx(true, abs=1e-4)


def test_beam_size_one_is_greedy():
    rng = random.Random(0)
    lines = [" ".join(f"w{rng.randrange(8)}" for _ in range(rng.randint(1, 9))) for _ in range(12)]
    for copy in (False, True):
        model, batch = one_batch(lines, copy=copy, seed=2, sharp=1.0)
        for kw in ({}, {"min_length": 3, "block_ngram_repeat": 2, "length_penalty_kind": "wu", "alpha": 0.9}):
            g = greedy_search(model, batch, max_length=12, keep_attn=True, **kw)
            k1 = beam_search(model, batch, beam_size=1, max_length=12, keep_attn=True, **kw)
            for hg, hb in zip(g, k1):
                assert hg[0].tokens == hb[0].tokens
                assert hg[0].score == pytest.approx(hb[0].score, abs=1e-5)
                assert torch.allclose(hg[0].attn, hb[0].attn)


def test_length_limits_and_attention_shape():
    model, batch = one_batch(["w0 w1 w2", "w3 w4 w5 w6 w7"], seed=4)
    for lo, hi in ((0, 1), (4, 6), (5, 5), (7, 3)):
        for hyps in beam_search(model, batch, beam_size=3, n_best=2, min_length=lo, max_length=hi, keep_attn=True):
            for h in hyps:
                assert min(lo, hi) <= len(h.tokens) <= hi
                assert EOS not in h.tokens and h.attn.shape == (len(h.tokens), batch.src.size(1))


def test_ngram_blocking_changes_a_repeating_output():
    model, batch = one_batch(["w0 w1", "w2", "w3 w4 w5"], seed=5, sharp=4.0)
    free = beam_search(model, batch, beam_size=3, n_best=3, min_length=15, max_length=15)
    assert any(has_repeat(h.tokens, 2) for hyps in free for h in hyps)   # blocking has work to do
    for n in (1, 2, 3):
        out = beam_search(model, batch, beam_size=3, n_best=3, min_length=6, max_length=15, block_ngram_repeat=n)
        assert all(not has_repeat(h.tokens, n) for hyps in out for h in hyps)
    ign = beam_search(model, batch, beam_size=3, n_best=3, min_length=6, max_length=15, block_ngram_repeat=1,
                      ignore_ids=torch.tensor([4]))
    assert all(not has_repeat(h.tokens, 1, ignore=(4,)) for hyps in ign for h in hyps)


def test_length_penalties():
    assert length_penalty("none", 7) == 1.0 and length_penalty("avg", 7) == 7.0
    assert length_penalty("wu", 7, alpha=0.5) == pytest.approx((12 / 6) ** 0.5)
    t = length_penalty("wu", torch.tensor([1, 4]), alpha=2.0)
    assert torch.allclose(t, torch.tensor([1.0, 2.25]))


def naive_blocked(hist, n, X, ignore):
    out = set()
    L = len(hist)
    for i in range(L - n + 1):
        gram = hist[i:i + n]
        if gram[:-1] == hist[L - n + 1:] and not set(gram) & set(ignore) and gram[-1] != EOS:
            out.add(gram[-1])
    return out


def test_blocked_ngrams_matches_naive():
    g = torch.Generator().manual_seed(0)
    for n in (1, 2, 3):
        for ignore in ([], [4, 5]):
            hist = torch.randint(4, 8, (20, 9), generator=g)        # (R, L) few words: many repeats
            blocked = blocked_ngrams(hist, n, 10, torch.tensor(ignore, dtype=torch.long))
            for r in range(20):
                want = naive_blocked(hist[r].tolist(), n, 10, ignore)
                assert set(blocked[r].nonzero().flatten().tolist()) == want
