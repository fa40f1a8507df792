"""The Batch every model, loss and translator consumes (batch-first, padded with PAD)."""
from dataclasses import dataclass, fields, replace
from typing import List, Optional

import torch

from onmt.constants import PAD


@dataclass
class Batch:
    src: torch.Tensor                 # (B, S) source-vocabulary ids, PAD-padded, no <s> / </s>
    src_lengths: torch.Tensor         # (B,) true source lengths
    # (B, S) ids in each example's extended vocabulary (copy targets)
    src_ex: torch.Tensor
    # per example, its OOV words; extended id of oovs[b][j] is V_tgt + j
    oovs: List[List[str]]
    # max len(oovs[b]); the extended vocabulary has X = V_tgt + n_oov ids
    n_oov: int
    indices: torch.Tensor             # (B,) position of each example in its corpus
    tgt: Optional[torch.Tensor] = None     # (B, T) target-vocabulary ids, <s> ... </s>, PAD-padded
    tgt_ex: Optional[torch.Tensor] = None  # (B, T) like tgt, copyable OOVs get their extended id

    @property
    def batch_size(self):
        return self.src.size(0)

    @property
    def n_tgt_tokens(self):
        """Target tokens predicted by teacher forcing (everything after <s>, padding excluded)."""
        return int((self.tgt[:, 1:] != PAD).sum()) if self.tgt is not None else 0

    def tensors(self):
        """{field name: tensor} of the batch's tensor fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if isinstance(getattr(self, f.name), torch.Tensor)}

    def pinned_for(self, device):
        """The batch with its host tensors in page-locked memory when it goes to a CUDA device (a
        non_blocking copy from pageable memory is synchronous; from pinned memory it runs beside the
        work queued before it); itself for any other device."""
        if not pins_memory(device):
            return self
        return replace(self, **{k: t.pin_memory() for k, t in self.tensors().items()
                                if t.device.type == "cpu" and not t.is_pinned()})

    def to(self, device):
        device = torch.device(device)
        moved = {k: t.to(device, non_blocking=True)
                 for k, t in self.pinned_for(device).tensors().items()}
        return replace(self, **moved)


def pins_memory(device):
    """Whether batches bound for `device` are pinned first: CUDA devices only."""
    return torch.device(device).type == "cuda"
