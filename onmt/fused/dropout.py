"""Dropout whose CPU mask is drawn with torch.rand: the fused kernels' nn.Dropout (kernels "fused":
execution.py).

On CPU, nn.Dropout draws its mask with bernoulli_, about 11 ns per element on this project's hosts
(PyTorch 2.13), while torch.rand draws about 4 ns per element: a (32, 37, 128) embedding batch
1.77 ms against 0.61 ms. Same distribution: an element is kept (and scaled by 1 / (1 - p)) when its
uniform draw in [0, 1) is >= p, which happens with probability 1 - p. Off CPU (CUDA's fused dropout
kernel), in evaluation, and for p = 0 or 1 it is nn.Dropout itself. The same distribution, not the
same draws: a model built with kernels "plain" uses nn.Dropout (the models choose the class when
they build their modules; onmt/modules/embeddings.py takes it as `dropout_cls`). `dropout_mask` also
gives the fused decoder pass (decoder_pass.py) its masks.
"""
import torch
import torch.nn as nn


def dropout_mask(shape, p, like):
    """A scaled dropout mask of `shape` (0 with probability p, else 1 / (1 - p)), dtype and device
    of `like`; 0 < p < 1."""
    return torch.rand(shape, device=like.device).ge_(p).to(like.dtype).div_(1.0 - p)


class Dropout(nn.Dropout):
    """nn.Dropout, the mask drawn by dropout_mask on CPU."""

    def forward(self, x):
        if not self.training or not 0 < self.p < 1 or x.device.type != "cpu" or self.inplace:
            return super().forward(x)
        return x * dropout_mask(x.shape, self.p, x)
