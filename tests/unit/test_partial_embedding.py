"""PartialEmbedding: the decoder's embedding is the first V_tgt rows of the encoder's one parameter."""
import pytest
import torch
import torch.nn as nn

from onmt.constants import PAD
from onmt.modules.partial_embedding import PartialEmbedding


def test_is_a_prefix_view_of_one_parameter_at_paper_sizes():
    torch.manual_seed(0)
    full = nn.Embedding(150000, 100, padding_idx=PAD)
    part = PartialEmbedding(full, 50000)
    container = nn.ModuleList([full, part])
    assert len(list(container.parameters())) == 1
    w = part.target_weight()
    assert w.shape == (50000, 100)
    assert w.data_ptr() == full.weight.data_ptr()
    ids = torch.tensor([[0, 1, 49999, 17]])
    assert torch.equal(part(ids), full(ids))  # same ids, no shifting


def test_gradients_from_both_sides_reach_the_shared_matrix():
    torch.manual_seed(0)
    full = nn.Embedding(30, 4, padding_idx=PAD)
    part = PartialEmbedding(full, 10)
    src_only, tgt_only, output_only = 25, 5, 7
    loss = full(torch.tensor([src_only, PAD])).sum() + part(torch.tensor([tgt_only, PAD])).sum()
    loss = loss + (part.target_weight()[output_only] ** 2).sum()  # as the tied output uses it
    loss.backward()
    g = full.weight.grad
    for row in (src_only, tgt_only, output_only):
        assert g[row].abs().sum() > 0
    assert g[PAD].abs().sum() == 0
    assert g[26].abs().sum() == 0


def test_rejects_a_prefix_longer_than_the_matrix():
    with pytest.raises(ValueError):
        PartialEmbedding(nn.Embedding(5, 2), 6)
