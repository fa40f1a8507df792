"""Behaviour snapshots: every case of helpers/snapshots.py (each model family, GRU and 2-layer decoders, ML
and mixed training steps, beam 3 / greedy / int8 translation) recomputed and compared BIT FOR BIT with
this host's file under tests/data/snapshots/ (one per PyTorch build and CPU kernel set), first recorded
from the code before the execution selector (onmt/execution.py)
replaced the kernels strings, the precision marks and -compile's patching; recorded again on an AVX-512 +
AMX host (2026-12-02) from commit d80829f's model code, which matched the first recording bit for bit on
the host that made it; on an AVX2 host (AMD EPYC, 2026-12-02) from commit dbd25be's.

Exact comparison: on one machine, one thread, float32 on the CPU, every path here is deterministic (the
fused kernels included: no atomics, fixed summation orders; dropout masks and scheduled sampling drawn
from the seeded generator). Each file records the PyTorch version and the CPU's kernel set; where no file
matches this host the test is skipped, saying so (oneDNN and MKL choose their kernels, and so their
rounding, by instruction set): record this host's file from a trusted commit (helpers/snapshots.py --write).
"""
import pytest

from helpers.snapshots import CASES, environment, load_expected, record_case, recorded_environments, toy_data

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def expected():
    snapshot = load_expected()
    if snapshot is None:
        pytest.skip(f"no snapshot recorded for {environment()} (recorded: {recorded_environments()}): the rounding "
                    "of the CPU's kernels may differ (record one with helpers/snapshots.py --write)")
    assert snapshot["environment"] == environment()
    return snapshot["cases"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    return (str(root),) + toy_data(str(root))


def test_every_case_is_recorded(expected):
    assert sorted(expected) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_snapshot_unchanged(name, expected, data):
    root, prefix, src = data
    got = record_case(name, root, prefix, src)
    want = expected[name]
    assert sorted(got) == sorted(want), f"{name}: recorded {sorted(got)}, expected {sorted(want)}"
    differ = [key for key in sorted(want) if got[key] != want[key]]
    assert not differ, f"{name}: {differ} differ: " + "; ".join(f"{k}: {got[k]!r} != {want[k]!r}"[:400]
                                                                  for k in differ)
