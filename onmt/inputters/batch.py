"""The Batch every model, loss and translator consumes (batch-first, padded with PAD)."""
from dataclasses import dataclass, fields, replace
from typing import List, Optional

import torch


@dataclass
class Batch:
    src: torch.Tensor                 # (B, S) source-vocabulary ids, PAD-padded, no <s> / </s>
    src_lengths: torch.Tensor         # (B,) true source lengths
    src_ex: torch.Tensor              # (B, S) ids in each example's extended vocabulary (copy targets)
    oovs: List[List[str]]             # per example, its OOV words; extended id of oovs[b][j] is V_tgt + j
    n_oov: int                        # max len(oovs[b]); the extended vocabulary has X = V_tgt + n_oov ids
    indices: torch.Tensor             # (B,) position of each example in its corpus
    tgt: Optional[torch.Tensor] = None     # (B, T) target-vocabulary ids, <s> ... </s>, PAD-padded
    tgt_ex: Optional[torch.Tensor] = None  # (B, T) like tgt, copyable OOVs get their extended id

    @property
    def batch_size(self):
        return self.src.size(0)

    @property
    def n_tgt_tokens(self):
        """Target tokens predicted by teacher forcing (everything after <s>, padding excluded)."""
        from onmt.constants import PAD
        return int((self.tgt[:, 1:] != PAD).sum()) if self.tgt is not None else 0

    def to(self, device):
        moved = {f.name: getattr(self, f.name).to(device, non_blocking=True)
                 for f in fields(self) if isinstance(getattr(self, f.name), torch.Tensor)}
        return replace(self, **moved)
