"""-profile N (onmt/utils/profiling.py): N units under torch.profiler, then the tables logged and a
Chrome trace written; fewer units than N report what ran."""
import json
from types import SimpleNamespace

import pytest
import torch

from onmt.errors import UserError
from onmt.utils.profiling import Profiler, trace_path


def work():
    a = torch.ones(8, 8)
    return torch.mm(a, a).sum()


def test_n_units_then_tables_and_a_trace(tmp_path):
    logs, path = [], tmp_path / "t.json"
    prof = Profiler(2, str(path), "cpu", what="batches", log=logs.append)
    assert not prof.done_one() and not prof.active          # not started: nothing counted
    prof.start()
    work()
    assert not prof.done_one() and prof.active
    work()
    assert prof.done_one() and not prof.active             # the n-th unit: stopped and reported
    assert len(logs) == 3 and logs[-1] == f"Chrome trace of the profiled batches in {path}"
    assert logs[0].startswith("Profile of 2 batches: top 25 operators by self CPU time\n") and "aten::mm" in logs[0]
    assert logs[1].startswith("Profile of 2 batches: top 15 (operator, input shapes) by self CPU time")
    assert "[8, 8]" in logs[1]
    trace = json.loads(path.read_text())
    assert any(e.get("name") == "aten::mm" for e in trace["traceEvents"])
    prof.stop()                                            # stopping again does nothing
    assert len(logs) == 3


def test_fewer_units_than_asked_report_what_ran(tmp_path):
    logs = []
    prof = Profiler(5, str(tmp_path / "t.json"), "cpu", log=logs.append)
    prof.start()
    work()
    prof.done_one()
    prof.stop()
    assert logs[0].startswith("Profile of 1 steps:") and (tmp_path / "t.json").exists()


def test_trace_path_and_an_unwritable_one(tmp_path):
    assert trace_path(SimpleNamespace(profile_trace=""), "runs/m") == "runs/m_profile.json"
    assert trace_path(SimpleNamespace(profile_trace="p.json"), "runs/m") == "p.json"
    with pytest.raises(UserError, match="-profile_trace .*is a folder"):
        Profiler(1, str(tmp_path), "cpu")
