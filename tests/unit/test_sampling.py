"""onmt/modules/sampling.py: one draw per row."""
import torch

from onmt.modules.sampling import sample_rows


def test_sample_rows_draws_in_proportion_and_never_a_zero_weight():
    torch.manual_seed(0)
    weights = torch.tensor([[0.0, 1.0, 3.0, 0.0], [5.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    draws = torch.stack([sample_rows(weights) for _ in range(4000)])  # (4000, 3)
    freq = torch.stack([torch.bincount(draws[:, r], minlength=4) for r in range(3)]).double() / 4000
    assert torch.allclose(freq, (weights / weights.sum(1, keepdim=True)).double(), atol=0.03)
    assert (freq[weights == 0] == 0).all()
