"""The row blocking of the fused kernels' cache-sized passes.

Whether a fused kernel may run now (the grad-mode check, the dtype / autocast condition) is
onmt/execution.py's; this module keeps what the kernels share about their own layout:

    block_rows         the rows of one cache-sized block of a row-blocked pass: on the CPU only (on
                       CUDA and any other device one block, so a step's kernel count does not grow
                       with its rows)
"""
import torch


def block_rows(device, n_rows, n_cols, budget):
    """Rows per block of a pass over an (n_rows, n_cols) tensor on `device`: about `budget` elements
    (a block that stays in the CPU's cache) on the CPU; all n_rows (one block) on any other device,
    where blocking would only multiply kernel launches."""
    if torch.device(device).type != "cpu":
        return max(1, n_rows)
    return max(1, budget // max(1, n_cols))
