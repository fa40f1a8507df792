"""beam_topk against the plain topk over (B, W*X) of logp + scores."""
import pytest
import torch

from onmt.modules.beam_topk import beam_topk
from onmt.translate.decoding import NEG_INF


def plain_topk(logp, scores, k):
    """The reference: every candidate's score, one topk per example."""
    B, W = scores.shape
    cand = torch.empty(B, W * logp.size(1))
    for b in range(B):
        for w in range(W):
            row = logp[b * W + w] + scores[b, w]
            cand[b, w * logp.size(1):(w + 1) * logp.size(1)] = row
    return cand.topk(k, dim=1)


@pytest.mark.parametrize("B,W,X,k,chunk", [
    (3, 5, 1000, 5, 128),      # a short last chunk (1000 = 7 * 128 + 104)
    (4, 1, 1024, 5, 128),      # the first step: one row per example, whole chunks only
    (2, 4, 300, 4, 32),
    (2, 5, 90, 5, 128),        # fewer columns than a chunk: the plain topk
    (2, 2, 260, 5, 128),       # W * m = 4 chunks < k: the plain topk
])
def test_equals_the_plain_topk(B, W, X, k, chunk):
    g = torch.Generator().manual_seed(B * 1000 + X)
    logp = torch.log_softmax(torch.randn(B * W, X, generator=g) * 4, dim=1)
    scores = torch.randn(B, W, generator=g) * 3
    before = logp.clone()
    values, ids = beam_topk(logp, scores, k, chunk=chunk)
    ref = plain_topk(logp, scores, k)
    assert torch.equal(values, ref.values)
    assert torch.equal(ids, ref.indices)
    assert torch.equal(logp, before)  # the input is not changed


def test_the_best_candidates_gathered_in_one_chunk_of_one_row():
    # all of an example's best continuations in one chunk of one row: the other chunks' maxima are
    # below them, and the k chosen chunks must still hold them all
    B, W, X, k = 2, 3, 512, 4
    logp = torch.full((B * W, X), -20.0)
    logp[1, 130:134] = torch.tensor([-1.0, -2.0, -3.0, -4.0])   # example 0, row 1, chunk 1
    logp[0, 5] = -1.5                                            # example 0, row 0: second best overall
    logp[5, 511] = -0.5                                          # example 1, row 2, last column
    scores = torch.zeros(B, W)
    values, ids = beam_topk(logp, scores, k, chunk=64)
    assert values[0].tolist() == [-1.0, -1.5, -2.0, -3.0]
    assert ids[0].tolist() == [1 * X + 130, 0 * X + 5, 1 * X + 131, 1 * X + 132]
    assert values[1, 0].item() == -0.5 and ids[1, 0].item() == 2 * X + 511


def test_rows_with_minus_infinity_scores_come_last():
    # emptied beam slots (score -inf) and rules that set tokens to -inf: the finite candidates first
    B, W, X, k = 2, 5, 700, 5
    g = torch.Generator().manual_seed(3)
    logp = torch.log_softmax(torch.randn(B * W, X, generator=g), dim=1)
    logp[:, 2:] = NEG_INF   # only two tokens allowed per row
    scores = torch.randn(B, W, generator=g)
    scores[0, 1:] = NEG_INF  # example 0: one live row, two finite candidates
    values, ids = beam_topk(logp, scores, k, chunk=64)
    ref = plain_topk(logp, scores, k)
    assert torch.equal(values, ref.values)
    assert torch.isfinite(values[0, :2]).all() and torch.isneginf(values[0, 2:]).all()
    assert sorted(ids[0, :2].tolist()) == [0, 1]
    assert torch.equal(ids[1], ref.indices[1])
