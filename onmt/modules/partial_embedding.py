"""The decoder's view of a shared embedding: the first V_tgt rows of the encoder's matrix.

With a shared vocabulary the target vocabulary is a prefix of the source vocabulary (same ids), so
the decoder embedding is literally `full.weight[:V_tgt]`: one parameter, no id shifting. Gradients
from the encoder inputs, the decoder inputs and the tied output projection all land on that one
parameter.
"""
import torch.nn as nn
import torch.nn.functional as F


class PartialEmbedding(nn.Module):
    """Embeds target ids (< `tgt_vocab_size`) with the first `tgt_vocab_size` rows of `full` (an
    nn.Embedding).

    `full` is registered as a submodule so that device moves follow it; `parameters()` deduplicates,
    so the matrix is still one parameter of the whole model.
    """

    def __init__(self, full, tgt_vocab_size):
        super().__init__()
        if tgt_vocab_size > full.num_embeddings:
            raise ValueError(f"a partial embedding of {tgt_vocab_size} rows needs a full embedding "
                             f"at least that large, got {full.num_embeddings}")
        self.full = full
        self.tgt_vocab_size = tgt_vocab_size

    @property
    def embedding_dim(self):
        return self.full.embedding_dim

    def target_weight(self):
        """E_tgt: the first `tgt_vocab_size` rows of the shared matrix, a view that carries
        gradients."""
        return self.full.weight[: self.tgt_vocab_size]  # (V, E)

    def forward(self, ids):
        """ids: (...) target ids, all < tgt_vocab_size.  Returns (..., E)."""
        return F.embedding(ids, self.target_weight(), padding_idx=self.full.padding_idx)
