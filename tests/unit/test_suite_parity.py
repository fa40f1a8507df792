"""bench/suite_parity.py: bench/gpu_suite.sh's loss parity of each -amp run against the float32 run."""
import os

import pytest

from helpers.paths import load_module

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "suite_parity.py")


@pytest.fixture(scope="module")
def mod():
    return load_module(_PATH, "suite_parity")


def _log(path, *ppls):
    lines = ["[2026-11-26 02:14:52 INFO] Step 100/300; acc: 13.02; ppl: 352.98; xent: 5.87"]
    lines += [f"[2026-11-26 02:15:00 INFO] Validation perplexity: {p}" for p in ppls]
    path.write_text("\n".join(lines) + "\n")


def test_validation_perplexities_in_order(mod):
    assert mod.valid_ppls("Validation perplexity: 9.5\nStep 3\nValidation perplexity: 1.25\n") == [9.5, 1.25]
    assert mod.valid_ppls("Validation perplexity: 3.1e+02\n") == [310.0]
    assert mod.valid_ppls("Step 100/300; ppl: 352.98\n") == []   # a training ppl is not a validation's


def test_parity_is_relative_to_fp32_within_the_tolerance(mod):
    assert mod.parity(1.0199, 1.0, 0.02) == (True, pytest.approx(0.0199))
    assert mod.parity(0.9801, 1.0, 0.02)[0]
    ok, rel = mod.parity(1.03, 1.0, 0.02)
    assert not ok and rel == pytest.approx(0.03)
    assert not mod.parity(0.97, 1.0, 0.02)[0]           # lower by more than the tolerance fails too
    assert mod.parity(101.9, 100.0, 0.02)[0] and not mod.parity(102.1, 100.0, 0.02)[0]
    assert mod.parity(float("nan"), 1.0) == (False, None)
    assert mod.parity(float("inf"), 1.0) == (False, None)
    assert mod.parity(None, 1.0) == (False, None)


def test_rows_and_exit_status(mod, tmp_path, capsys):
    _log(tmp_path / "train_rnn_fp32.log", 20.0, 10.0)
    _log(tmp_path / "train_rnn_bf16.log", 20.2, 14.0)     # +1 % at the first validation: passes
    _log(tmp_path / "train_rnn_fp16.log", 21.0, 10.0)     # +5 % at the first validation: fails
    _log(tmp_path / "train_copy_fp32.log", 5.0)
    _log(tmp_path / "train_copy_bf16.log")                 # no validation: the run failed
    rc = mod.main(["-work", str(tmp_path), "-families", "rnn", "copy", "-amps", "fp32", "bf16", "fp16"])
    rows = capsys.readouterr().out.strip().splitlines()
    assert rc == 1
    assert len(rows) == 4   # fp32 against itself is no row
    assert rows[0] == ("| loss parity rnn -amp bf16 vs fp32 (first val ppl within 2%) | PASS: 20.2 vs 20 (+1.00%); "
                       "last validation 14 vs 10 |")
    assert "| FAIL: 21 vs 20 (+5.00%); last validation 10 vs 10 |" in rows[1]
    assert rows[2].endswith(f"| FAIL: no validation perplexity in {tmp_path / 'train_copy_bf16.log'} |")
    assert rows[3].endswith(f"| FAIL: no log {tmp_path / 'train_copy_fp16.log'} |")
    args = ["-work", str(tmp_path), "-families", "rnn", "-amps"]
    assert mod.main(args + ["bf16"]) == 0
    assert mod.main(args + ["bf16", "-tolerance", "0.005"]) == 1
    assert mod.main(args + ["fp16", "-validation", "last"]) == 0    # equal at the last validation
    assert mod.main(args + ["bf16", "-validation", "last"]) == 1    # +40 % there
    assert "(last val ppl within 2%) | FAIL: 14 vs 10 (+40.00%) |" in capsys.readouterr().out
