"""Float32 islands inside a mixed-precision (autocast, `-amp`) forward pass.

Under `torch.autocast` the matrix products run in a low precision (bfloat16 or float16) and so do
the element-wise ops that follow them. What must not: the tanh of W_out = tanh(E_tgt W_proj),
everything after the generator's logits (the switch, the copy mixture, log-sum-exp, log-softmax),
the losses and the rewards. bfloat16 keeps 8 significant bits: a logit of 16 is known to +-0.06, and
a loss summed over thousands of tokens in it loses whole nats. The vocabulary products themselves
(E_tgt W_proj, the logits and their two gradient products) do run low, their results widened at once
(`autocast_dtype`): each logit carries one rounding, unbiased, and no sum is rounded
(experiments/results/amp_parity/).

An island is `with float32_region(x):` (autocast off on x's device, so every op inside runs in the
dtype of its inputs) around code whose inputs were passed through `widen` (float32 for a
half-precision tensor). Without autocast both do nothing: `widen` returns float32 and float64
tensors themselves (the same object: no copy, no autograd node), so code without -amp runs bit for
bit as before. The island takes its device from a tensor, so the same code runs under CUDA and CPU
autocast (the tests run it under CPU bfloat16 autocast).
"""
import contextlib

import torch

_HALF = (torch.float16, torch.bfloat16)


def widen(t):
    """`t` in float32 if it is a half-precision tensor, else `t` itself (float32, float64, integers,
    None pass unchanged). Differentiable: the gradient goes back to `t` in its own dtype."""
    if t is not None and t.dtype in _HALF:
        return t.float()
    return t


def float32_region(like):
    """A context in which autocast is off on the device of tensor `like` (nothing to do, and a cheap
    no-op, where autocast is not on): ops there run in their inputs' dtype, float32 once the inputs
    are `widen`ed."""
    device_type = like.device.type
    if not (torch.amp.is_autocast_available(device_type)
            and torch.is_autocast_enabled(device_type)):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, enabled=False)


def autocast_dtype(like):
    """The low precision (bfloat16 / float16) autocast gives the matrix products on the device of
    tensor `like`, or None where autocast is not on there. Read before entering a float32 island, by
    the fused generator products that run low under -amp (onmt/fused/gold_softmax.py)."""
    device_type = like.device.type
    if not (torch.amp.is_autocast_available(device_type)
            and torch.is_autocast_enabled(device_type)):
        return None
    return torch.get_autocast_dtype(device_type)

