"""The softmax over allowed positions that every attention uses (global_attention.py, the reinforced
model's intra-temporal attention): a = softmax(e) over the real source positions, 0 on padding."""
import torch


def masked_softmax(scores, mask, dim=-1):
    """Softmax of `scores` over `dim` where `mask` is True; masked entries get exactly 0.

    A row whose entries are all masked gives all zeros (never NaN) and a zero gradient. Scores are
    handled in float32 at least, so large magnitudes (1e4) and half precision inputs are safe; what
    masked positions hold (inf, NaN) never reaches the result or the gradient.
    """
    dtype = scores.dtype if scores.dtype in (torch.float32, torch.float64) else torch.float32
    scores = scores.to(dtype).masked_fill(~mask, torch.finfo(dtype).min)
    probs = torch.softmax(scores, dim=dim)
    return probs * mask.to(dtype)
