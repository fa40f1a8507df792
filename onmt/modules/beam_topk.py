"""The beam's top K continuations without the (B, W*X) candidate scores.

Beam search keeps, for each example, the K best of its W*X continuations, scored by the row's
running score plus the token's log-probability: topk over (B, W*X) of logp + scores. Written plainly
that is an addition over every candidate and a topk, which on CPU copies each candidate into a
(value, index) pair before its partial sort: about 1 ns per candidate, the largest cost of a
decoding step after the vocabulary product (160 rows of a 17k vocabulary: 4 ms against a 0.4 ms
max).

Here each row is cut into chunks of C columns (the last one shorter) and only chunk maxima are taken
over the whole (R, X): the K best continuations of an example lie in the K chunks of its rows with
the largest maxima (plus the row score, constant along a row), since a candidate outside those K
chunks has at least K larger ones (each chunk's maximum). So one max pass over (R, X), a topk over
the (B, W*M) chunk maxima, and a topk over the (B, K*C) candidates of the chosen chunks give the
same values as the plain topk, and the same indices except where candidates tie (topk's order among
equal values is unspecified either way).

`chunk_candidates` is that selection alone, for a caller that adds candidates of its own before the
last topk (onmt/fused/mixture_scores.py: the copy mixture's source words, whose generation values it
hid).
"""
import torch

NEG_INF = float("-inf")
CHUNK = 128  # columns per chunk (bench: 64 to 256 equally fast; the two topk sizes balance there)


def beam_topk(logp, scores, k, chunk=CHUNK):
    """logp (B*W, X) log-probabilities of W rows per example, scores (B, W) their running scores ->
    (values (B, k), ids (B, k)) of the top k of (logp + scores per row).view(B, W*X), ids indexing
    that flattened W*X (row w, column x: w*X + x). `logp` is not changed."""
    R, X = logp.shape
    B, W = scores.shape
    if not chunks_suffice(X, W, k, chunk):   # too few chunks to choose from: the plain topk
        return (logp + scores.reshape(R, 1)).view(B, W * X).topk(k, dim=1)
    cand, w, col = chunk_candidates(logp, scores.reshape(R), B, k, chunk)  # (B, k*C) x3
    values, pos = cand.topk(k, dim=1)                                     # (B, k)
    return values, w.gather(1, pos) * X + col.gather(1, pos)              # (B, k) in W*X


def chunks_suffice(X, W, k, chunk=CHUNK):
    """Whether rows of X columns, W per example, hold at least k whole chunks to choose from."""
    m = X // chunk
    return m > 0 and W * m >= k


def chunk_candidates(values, row_add, B, k, chunk=CHUNK):
    """The candidates of the k chunks with the largest maxima in each example (module docstring).

    values (B*W, X): W rows per example; row_add (B*W,): added to every value of its row (a running
    score, a normalizer). Returns cand (B, k*C) the chosen chunks' values plus their row's row_add
    (-inf past the row's end), w (B, k*C) the row within the example and col (B, k*C) the column of
    each candidate. The top k of cand are the top k of (values + row_add).view(B, W*X). Needs
    chunks_suffice."""
    R, X = values.shape
    W = R // B
    m = X // chunk                                                        # whole chunks per row
    maxima = values[:, :m * chunk].view(R, m, chunk).amax(2)              # (R, m)
    if m * chunk < X:
        maxima = torch.cat([maxima, values[:, m * chunk:].amax(1, keepdim=True)], dim=1)  # (R, M)
    M = maxima.size(1)
    maxima = (maxima + row_add.unsqueeze(1)).view(B, W * M)               # (B, W*M)
    picked = maxima.topk(k, dim=1).indices                                # (B, k) chunks
    # (B, k) row within the example
    w = torch.div(picked, M, rounding_mode="floor")
    # (B, k, C)
    col = ((picked - w * M) * chunk).unsqueeze(2) + torch.arange(chunk, device=values.device)
    row = torch.arange(B, device=values.device).unsqueeze(1) * W + w      # (B, k) row of values
    # (B, k, C) into values.view(-1)
    flat = row.unsqueeze(2) * X + col.clamp_max(X - 1)
    cand = values.reshape(-1)[flat.view(B, k * chunk)].view(B, k, chunk)  # (B, k, C)
    cand = (cand + row_add[row].unsqueeze(2)).masked_fill_(col >= X, NEG_INF)  # (B, k, C)
    w = w.unsqueeze(2).expand(B, k, chunk)                                # (B, k, C)
    return cand.view(B, k * chunk), w.reshape(B, k * chunk), col.view(B, k * chunk)
