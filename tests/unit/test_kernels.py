"""onmt/execution.py's checks that say where a fused kernel runs (the plain / fused setting, the grad mode, the
dtype) and onmt/fused/kernels.py's row blocking."""
import pytest
import torch

from onmt.execution import KERNELS, check_kernels, decoding_only, fast_dtype, gradients_wanted, training_pass
from onmt.fused.kernels import block_rows


def test_check_kernels_takes_the_two_settings_only():
    assert KERNELS == ("plain", "fused")
    for k in KERNELS:
        assert check_kernels(k) == k
    for bad in ("Fused", "", None, "fast"):
        with pytest.raises(ValueError, match="kernels must be one of"):
            check_kernels(bad)


def test_gradients_wanted_is_the_grad_mode_and_the_tensors():
    leaf, const = torch.zeros(2, requires_grad=True), torch.zeros(2)
    assert gradients_wanted() and gradients_wanted(leaf) and gradients_wanted(const, leaf, None)
    assert not gradients_wanted(const) and not gradients_wanted(None, const)
    with torch.no_grad():
        assert not gradients_wanted() and not gradients_wanted(leaf)


def test_decoding_only_is_fused_without_gradients():
    assert not decoding_only("fused") and not decoding_only("plain")   # grad mode on
    with torch.no_grad():
        assert decoding_only("fused") and not decoding_only("plain")


def test_fast_dtype_wants_one_listed_dtype_and_no_autocast():
    f32, f64, bf = torch.zeros(2), torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.bfloat16)
    assert fast_dtype(f32, None, f32) and not fast_dtype(f32, f64) and not fast_dtype(bf)
    assert fast_dtype(f64, dtypes=(torch.float32, torch.float64))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not fast_dtype(f32)


def test_training_pass_is_fused_with_gradients_and_a_fast_dtype():
    x = torch.zeros(3, requires_grad=True)
    assert training_pass("fused", x) and not training_pass("plain", x)
    assert not training_pass("fused", x.detach().double())
    with torch.no_grad():
        assert not training_pass("fused", x)


def test_block_rows_is_a_cpu_budget_and_one_block_elsewhere():
    assert block_rows("cpu", 1000, 100, 1 << 12) == 40 and block_rows("cpu", 5, 1 << 20, 1 << 12) == 1
    assert block_rows("cuda", 1000, 100, 1 << 12) == 1000 and block_rows(torch.device("meta"), 0, 9, 8) == 1
