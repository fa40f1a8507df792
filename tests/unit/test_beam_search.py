"""Beam search against exhaustive search, teacher-forced re-scoring and naive n-gram checks."""
import itertools
import math

import pytest
import torch

from helpers.rescoring import rescore
from helpers.search import search
from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.constants import EOS, UNK
from onmt.translate.decoding import CoverageScorer, LengthPenalty, block_ngrams_

VOCABS = toy_vocabs(n_src_words=8, n_tgt_words=3)    # V_tgt = 7: generable <unk>, w0, w1, w2, </s>


def one_batch(lines, copy=False, seed=0, sharp=2.0):
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=seed, sharp=sharp)
    return model, next(toy_batches(lines, None, VOCABS, len(lines)))


def has_repeat(tokens, n, ignore=()):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    grams = [g for g in grams if not set(g) & set(ignore)]
    return len(grams) != len(set(grams))


def brute_force(model, batch, b, generable, max_len, min_len=0, block=0, ignore=(), kind="none", alpha=0.0):
    seqs = [list(s) for L in range(min_len, max_len + 1) for s in itertools.product(generable, repeat=L)]
    if block:
        seqs = [s for s in seqs if not has_repeat(s, block, ignore)]
    raw = rescore(model, batch, b, seqs)
    scored = [(r / LengthPenalty(kind, alpha)(len(s) + 1), s) for r, s in zip(raw, seqs)]
    return sorted(scored, key=lambda x: -x[0])


@pytest.mark.parametrize("kind,alpha,min_len,block,copy", [
    ("none", 0.0, 0, 0, False), ("avg", 0.0, 0, 0, False), ("wu", 1.5, 1, 0, False),
    ("none", 0.0, 2, 1, False), ("wu", 0.7, 0, 2, True), ("avg", 0.0, 1, 2, True)])
def test_beam_matches_exhaustive_search(kind, alpha, min_len, block, copy):
    model, batch = one_batch(["w0 w5 w1", "w2 w7 w7 w3 w4"], copy=copy, seed=3)
    max_len = 3
    out = search(model, batch, beam_size=125 if copy else 64, n_best=3, min_length=min_len,
                 max_length=max_len, length_penalty=kind, alpha=alpha, block_ngram_repeat=block)
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
        out = search(model, batch, beam_size=4, n_best=4, max_length=8, block_ngram_repeat=2)
        for b, hyps in enumerate(out):
            assert len(hyps) == 4
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
            true = rescore(model, batch, b, [h.tokens for h in hyps])
            assert [h.log_prob for h in hyps] == pytest.approx(true, abs=1e-4)


def test_length_limits_and_attention_shape():
    model, batch = one_batch(["w0 w1 w2", "w3 w4 w5 w6 w7"], seed=4)
    for lo, hi in ((0, 1), (4, 6), (5, 5), (7, 3)):
        for hyps in search(model, batch, beam_size=3, n_best=2, min_length=lo, max_length=hi, keep_attn=True):
            for h in hyps:
                assert min(lo, hi) <= len(h.tokens) <= hi
                assert EOS not in h.tokens and h.attn.shape == (len(h.tokens), batch.src.size(1))


def test_ngram_blocking_changes_a_repeating_output():
    model, batch = one_batch(["w0 w1", "w2", "w3 w4 w5"], seed=5, sharp=4.0)
    free = search(model, batch, beam_size=3, n_best=3, min_length=15, max_length=15)
    assert any(has_repeat(h.tokens, 2) for hyps in free for h in hyps)   # blocking has work to do
    for n in (1, 2, 3):
        out = search(model, batch, beam_size=3, n_best=3, min_length=6, max_length=15, block_ngram_repeat=n)
        assert all(not has_repeat(h.tokens, n) for hyps in out for h in hyps)
    ign = search(model, batch, beam_size=3, n_best=3, min_length=6, max_length=15, block_ngram_repeat=1,
                 ignore_ids=torch.tensor([4]))
    assert all(not has_repeat(h.tokens, 1, ignore=(4,)) for hyps in ign for h in hyps)


def test_length_penalties():
    """Each kind's divisor, of a number or a tensor; an unknown kind is refused when the penalty is chosen."""
    assert LengthPenalty("none")(7) == 1.0 and LengthPenalty("avg")(7) == 7.0
    assert LengthPenalty("wu", alpha=0.5)(7) == pytest.approx((12 / 6) ** 0.5)
    t = LengthPenalty("wu", alpha=2.0)(torch.tensor([1, 4]))
    assert torch.allclose(t, torch.tensor([1.0, 2.25]))
    assert LengthPenalty("wu", alpha=2.0).largest_ahead(3) == pytest.approx([(8 / 6) ** 2] * 4 + [2.25])
    assert LengthPenalty("avg").largest_ahead(2) == [2.0, 2.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="unknown length penalty 'ww'"):
        LengthPenalty("ww")
    with pytest.raises(ValueError, match="unknown coverage penalty 'ww'"):
        CoverageScorer("ww")


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
            logp = torch.zeros(20, 10)
            blocked = torch.isneginf(block_ngrams_(logp, hist, n, torch.tensor(ignore, dtype=torch.long)))
            for r in range(20):
                want = naive_blocked(hist[r].tolist(), n, 10, ignore)
                assert set(blocked[r].nonzero().flatten().tolist()) == want


# ---------------------------------------------------------------- coverage penalty, -dump_beam
from onmt.translate.decoding import coverage_penalty  # noqa: E402


def wu_pen(cov, beta):        # GNMT: -beta * sum_i log(min(cov_i, 1)) over the real positions
    return -beta * sum(math.log(max(min(c, 1.0), 1e-20)) for c in cov)


def summary_pen(cov, beta):   # beta * (sum_i max(cov_i, 1) - S) over the S real positions
    return beta * (sum(max(c, 1.0) for c in cov) - len(cov))


PEN = {"wu": wu_pen, "summary": summary_pen}


def test_coverage_penalty_formulas():
    cov = torch.tensor([[0.2, 1.5, 0.9, 3.0], [0.0, 0.5, 2.0, 7.0]])
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    for kind, f in PEN.items():
        got = coverage_penalty(kind, cov, 0.7, mask)
        want = [f(cov[0].tolist(), 0.7), f(cov[1, :3].tolist(), 0.7)]
        assert got.tolist() == pytest.approx(want, rel=1e-5)
    assert coverage_penalty("none", cov, 0.7).tolist() == [0.0, 0.0]


def rescore_cov(model, batch, b, seqs):
    """Per seq: (teacher-forced sum of log p, attention summed over its steps, </s> step included,
    on the example's real source positions)."""
    n = int(batch.src_lengths[b])
    out = []
    with torch.no_grad():
        for s in seqs:
            state = model.init_state(batch, model.encode(batch)).reorder(torch.tensor([b]))
            full = [2] + s + [EOS]
            lp, cov = 0.0, torch.zeros(batch.src.size(1))
            for t in range(len(full) - 1):
                logp, state, attns = model.decode_step(torch.tensor([full[t]]), state)
                lp += float(logp[0, full[t + 1]])
                cov += attns["std"][0].float()
            out.append((lp, cov[:n].tolist()))
    return out


@pytest.mark.parametrize("cov_kind,beta,kind,alpha", [("wu", 0.3, "none", 0.0), ("summary", 0.8, "wu", 1.0),
                                                      ("wu", 1.0, "avg", 0.0)])
def test_coverage_penalty_beam_matches_exhaustive_search(cov_kind, beta, kind, alpha):
    """Without -stepwise_penalty: score = log_prob / lp(len + 1) - pen(cov); exact with a wide beam."""
    model, batch = one_batch(["w0 w5 w1", "w2 w7 w7 w3 w4"], seed=3)
    max_len = 3
    out = search(model, batch, beam_size=64, n_best=3, max_length=max_len, length_penalty=kind,
                 alpha=alpha, coverage_penalty=cov_kind, beta=beta)
    for b in range(2):
        seqs = [list(s) for L in range(max_len + 1) for s in itertools.product([UNK, 4, 5, 6], repeat=L)]
        scored = sorted(((lp / LengthPenalty(kind, alpha)(len(s) + 1) - PEN[cov_kind](cov, beta), s, lp)
                         for s, (lp, cov) in zip(seqs, rescore_cov(model, batch, b, seqs))), key=lambda x: -x[0])
        assert [h.tokens for h in out[b]] == [s for _, s, _ in scored[:3]]
        assert [h.score for h in out[b]] == pytest.approx([x for x, _, _ in scored[:3]], abs=1e-4)
        assert [h.log_prob for h in out[b]] == pytest.approx([lp for _, _, lp in scored[:3]], abs=1e-4)


@pytest.mark.parametrize("cov_kind", ["wu", "summary"])
def test_stepwise_coverage_penalty_scores(cov_kind):
    """-stepwise_penalty: a finished hypothesis scores (log_prob - pen(cov)) / lp(len + 1), with beam size 1
    (greedy search) too."""
    lines = ["w0 w1 w2 w3", "w4", "w5 w6 w7 w0 w1 w2"]
    model, batch = one_batch(lines, seed=1, sharp=1.0)
    kw = dict(max_length=8, length_penalty="wu", alpha=0.6, coverage_penalty=cov_kind, beta=0.5)
    for stepwise, beam_size in itertools.product((False, True), (4, 1)):   # beam size 1: greedy search
        out = search(model, batch, beam_size=beam_size, n_best=beam_size, stepwise_penalty=stepwise, **kw)
        for b, hyps in enumerate(out):
            for h, (lp, cov) in zip(hyps, rescore_cov(model, batch, b, [h.tokens for h in hyps])):
                pen, lpen = PEN[cov_kind](cov, 0.5), LengthPenalty("wu", 0.6)(len(h.tokens) + 1)
                assert h.log_prob == pytest.approx(lp, abs=1e-4)
                assert h.score == pytest.approx((lp - pen) / lpen if stepwise else lp / lpen - pen, abs=1e-4)


def test_stepwise_penalty_changes_the_ranking():
    lines = ["w0 w1 w2 w3", "w4", "w5 w6 w7 w0 w1 w2"]
    model, batch = one_batch(lines, seed=1, sharp=1.0)
    plain = search(model, batch, beam_size=3, n_best=3, max_length=8)
    step = search(model, batch, beam_size=3, n_best=3, max_length=8, coverage_penalty="summary",
                  beta=5.0, stepwise_penalty=True)
    assert [[h.tokens for h in x] for x in plain] != [[h.tokens for h in x] for x in step]


def test_beam_history_traces_the_hypotheses():
    lines = ["w0 w1 w2 w3", "w4", "w5 w6 w7 w0 w1 w2"]
    model, batch = one_batch(lines, seed=1, sharp=1.0)
    plain = search(model, batch, beam_size=3, n_best=3, max_length=8)
    hist = []
    out = search(model, batch, beam_size=3, n_best=3, max_length=8, beam_history=hist)
    assert [[h.tokens for h in x] for x in plain] == [[h.tokens for h in x] for x in out]   # unchanged
    assert len(hist) == len(lines)
    for b, steps in enumerate(hist):
        assert all(len(s["tokens"]) == len(s["backpointers"]) == len(s["scores"]) == 3 for s in steps)
        for h in out[b]:   # each finished hypothesis: an </s> at step len(tokens), traced back through the pointers
            step = steps[len(h.tokens)]
            ks = [k for k in range(3) if step["tokens"][k] == EOS and step["scores"][k] is not None
                  and abs(step["scores"][k] - h.log_prob) < 1e-4]
            traced = []
            for k in ks:
                seq, t, j = [], len(h.tokens), k
                while t > 0:
                    j = steps[t]["backpointers"][j]
                    t -= 1
                    seq.append(steps[t]["tokens"][j])
                traced.append(seq[::-1])
            assert h.tokens in traced
