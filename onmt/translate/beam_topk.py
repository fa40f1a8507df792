"""The beam's top K continuations without the (B, W*X) candidate scores.

Beam search keeps, for each example, the K best of its W*X continuations, scored by the row's running
score plus the token's log-probability: topk over (B, W*X) of logp + scores. Written plainly that is an
addition over every candidate and a topk, which on CPU copies each candidate into a (value, index) pair
before its partial sort: about 1 ns per candidate, the largest cost of a decoding step after the
vocabulary product (160 rows of a 17k vocabulary: 4 ms against a 0.4 ms max).

Here each row is cut into chunks of C columns (the last one shorter) and only chunk maxima are taken
over the whole (R, X): the K best continuations of an example lie in the K chunks of its rows with the
largest maxima (plus the row score, constant along a row), since a candidate outside those K chunks has
at least K larger ones (each chunk's maximum). So one max pass over (R, X), a topk over the (B, W*M)
chunk maxima, and a topk over the (B, K*C) candidates of the chosen chunks give the same values as the
plain topk, and the same indices except where candidates tie (topk's order among equal values is
unspecified either way).
"""
import torch

from onmt.translate.decoding import NEG_INF

CHUNK = 128  # columns per chunk (bench: 64 to 256 equally fast; the two topk sizes balance there)


def beam_topk(logp, scores, k, chunk=CHUNK):
    """logp (B*W, X) log-probabilities of W rows per example, scores (B, W) their running scores ->
    (values (B, k), ids (B, k)) of the top k of (logp + scores per row).view(B, W*X), ids indexing
    that flattened W*X (row w, column x: w*X + x). `logp` is not changed."""
    R, X = logp.shape
    B, W = scores.shape
    m = X // chunk                                                        # whole chunks per row
    if m == 0 or W * m < k:   # too few chunks to choose from: the plain topk
        return (logp + scores.reshape(R, 1)).view(B, W * X).topk(k, dim=1)
    maxima = logp[:, :m * chunk].view(R, m, chunk).amax(2)               # (R, m)
    if m * chunk < X:
        maxima = torch.cat([maxima, logp[:, m * chunk:].amax(1, keepdim=True)], dim=1)  # (R, M)
    M = maxima.size(1)
    maxima = (maxima.view(B, W, M) + scores.unsqueeze(2)).view(B, W * M)   # (B, W*M)
    picked = maxima.topk(k, dim=1).indices                                # (B, k) chunks
    w = torch.div(picked, M, rounding_mode="floor")                        # (B, k) row within the example
    col = ((picked - w * M) * chunk).unsqueeze(2) + torch.arange(chunk, device=logp.device)  # (B, k, C)
    row = torch.arange(B, device=logp.device).unsqueeze(1) * W + w       # (B, k) row of logp
    flat = row.unsqueeze(2) * X + col.clamp_max(X - 1)                    # (B, k, C) into logp.view(-1)
    cand = logp.reshape(-1)[flat.view(B, k * chunk)].view(B, k, chunk)     # (B, k, C)
    cand = (cand + scores.gather(1, w).unsqueeze(2)).masked_fill_(col >= X, NEG_INF)  # (B, k, C)
    values, pos = cand.view(B, k * chunk).topk(k, dim=1)                  # (B, k)
    within = torch.div(pos, chunk, rounding_mode="floor")                 # (B, k) which chosen chunk
    ids = w.gather(1, within) * X + col.view(B, k * chunk).gather(1, pos)  # (B, k) in W*X
    return values, ids
