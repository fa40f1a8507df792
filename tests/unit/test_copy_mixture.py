"""onmt/modules/copy_mixture.py's first_occurrence against the obvious (S, S) table, and its memory: linear
in the source length (a 200k-token source line)."""

import pytest
import torch

from onmt.modules.copy_mixture import first_occurrence


def reference(src_ex):
    """For each position, the first position holding the same id, by looking at every earlier one."""
    out = torch.empty_like(src_ex)
    for n, row in enumerate(src_ex.tolist()):
        for i, x in enumerate(row):
            out[n, i] = row.index(x)
    return out


@pytest.mark.parametrize("S, V", [(1, 1), (2, 1), (7, 3), (50, 20), (50, 1000), (0, 5)])
def test_first_occurrence_against_the_reference(S, V):
    g = torch.Generator().manual_seed(S * 31 + V)
    src_ex = torch.randint(0, V, (6, S), generator=g)
    assert torch.equal(first_occurrence(src_ex), reference(src_ex))


def test_first_occurrence_of_a_200k_token_source_takes_linear_memory():
    src_ex = torch.randint(0, 5000, (1, 200_000), generator=torch.Generator().manual_seed(1))
    first = first_occurrence(src_ex)                     # an (S, S) table would be 40 GB
    assert torch.equal(src_ex.gather(1, first), src_ex) and bool((first <= torch.arange(200_000)).all())
    assert int(first[0, 0]) == 0
