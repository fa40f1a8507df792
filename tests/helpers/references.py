"""Slow, obviously-correct references shared by several test files."""
import math

import torch


def masked_softmax_reference(scores, mask):
    """Row by row in Python floats: exp(s_i - max) / sum over the allowed entries, 0 elsewhere and on
    rows with no allowed entry."""
    out = torch.zeros(scores.shape, dtype=torch.float64)
    for b in range(scores.size(0)):
        idx = [i for i in range(scores.size(1)) if mask[b, i]]
        if not idx:
            continue
        top = max(float(scores[b, i]) for i in idx)
        e = [math.exp(float(scores[b, i]) - top) for i in idx]
        for i, x in zip(idx, e):
            out[b, i] = x / sum(e)
    return out
