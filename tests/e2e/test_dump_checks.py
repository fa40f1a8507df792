"""tools/plot_attention.py reads -attn_debug dumps through the explorer's checks (issue 53, item 8): a
wrongly shaped dump was drawn, a dump missing a key was a KeyError traceback; now each is one line naming
the file, the example's line and the key, exit 1. And onmt_explore -names '' (an empty name) is refused."""
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.explore_inputs import records, write_inputs
from helpers.paths import ROOT
from onmt.translate.records import write_dump

ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")


def plot(dump, out):
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "plot_attention.py"), "-attn_debug",
                           str(dump), "-attn_plot", str(out)], capture_output=True, text=True, env=ENV,
                          timeout=120)


def one_line(r):
    assert r.returncode not in (0, None) and "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("[20")]
    assert len(lines) == 1, r.stderr
    return lines[0]


def _damaged(tmp_path, change):
    good = tmp_path / "good.npz"
    write_dump(str(good), records())
    with np.load(good, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    return bad


@pytest.mark.parametrize("change,expected", [
    (lambda a: a.update(ex1_attn=a["ex1_attn"].T.copy()), "line 2: attn has shape"),
    (lambda a: a.update(ex0_p_copy=a["ex0_p_copy"][:2].copy()), "line 1: p_copy has shape (2,), expected (6,)"),
    (lambda a: a.pop("ex2_pred"), "not a complete -attn_debug dump: no ex2_pred"),
    (lambda a: a.pop("n_examples"), "not a complete -attn_debug dump: no n_examples"),
])
def test_plot_attention_refuses_a_damaged_dump_in_one_line(tmp_path, change, expected):
    bad = _damaged(tmp_path, change)
    line = one_line(plot(bad, tmp_path / "plots"))
    assert f"-attn_debug {bad}" in line and expected in line, line
    assert not list((tmp_path / "plots").glob("*.png")) if (tmp_path / "plots").exists() else True


def test_the_explorer_refuses_the_same_dump_alike(tmp_path):
    from onmt.bin import explore
    from onmt.errors import UserError
    paths = write_inputs(str(tmp_path))
    bad = _damaged(tmp_path, lambda a: a.update(ex1_attn=a["ex1_attn"].T.copy()))
    with pytest.raises(UserError, match=f"-system {bad}: line 2: attn has shape"):
        explore.main(["-src", paths["src"], "-ref", paths["ref"], "-system", str(bad), paths["b"],
                      "-output", str(tmp_path / "page.html")])


@pytest.mark.parametrize("names", [["", "b"], ["a", " "]])
def test_explore_refuses_an_empty_name(tmp_path, names):
    from onmt.bin import explore
    from onmt.opts import OptionError
    paths = write_inputs(str(tmp_path))
    with pytest.raises(OptionError, match="-names: an empty name"):
        explore.main(["-src", paths["src"], "-ref", paths["ref"], "-system", paths["a"], paths["b"],
                      "-names", *names, "-output", str(tmp_path / "page.html")])
    assert not (tmp_path / "page.html").exists()


# --------------------------------------------------------------------------- misleading messages
def test_an_opennmt_py_checkpoint_is_refused_in_one_plain_line(tmp_path):
    """It was refused with ANSI escapes and half of torch's sentence ("... you have two options, ")."""
    import argparse

    import torch

    from onmt.errors import UserError
    from onmt.utils.checkpoint import load_checkpoint
    torch.save({"opt": argparse.Namespace(rnn_size=500), "model": {}, "vocab": {}}, tmp_path / "upstream.pt")
    with pytest.raises(UserError) as e:
        load_checkpoint(str(tmp_path / "upstream.pt"))
    text = str(e.value)
    assert "\x1b" not in text and "\n" not in text and "weights_only" not in text and "two options" not in text
    assert "pickled Python objects (argparse.Namespace: an OpenNMT-py checkpoint?)" in text


@pytest.mark.parametrize("kind", ["pickled objects", "plain pickle"])
def test_a_pickled_shard_is_refused_in_one_line_without_torchs_advice(tmp_path, kind):
    """It was nine lines of torch's text advising weights_only=False."""
    import pickle

    import torch

    from onmt.errors import UserError
    from onmt.inputters.shards import load_shard
    path = tmp_path / "data.train.0.pt"
    if kind == "plain pickle":
        path.write_bytes(pickle.dumps({"src": [1, 2]}))
    else:
        torch.save({"src": torch.zeros(2), "why": argparse_namespace()}, path)
    with pytest.raises(UserError) as e:
        load_shard(str(path))
    text = str(e.value)
    assert "\n" not in text and "weights_only" not in text and text.startswith(f"cannot load shard {path}: it ")
    assert text.endswith("; run preprocess.py again")


def argparse_namespace():
    import argparse
    return argparse.Namespace(x=1)


def test_plots_of_an_earlier_run_are_not_left_beside_the_new_ones(tmp_path):
    """Issue 53: -attn_plot into a folder of an earlier run's plots left old plots 4-8 beside new 1-3."""
    pytest.importorskip("matplotlib")
    good = tmp_path / "good.npz"
    write_dump(str(good), records())
    plots = tmp_path / "plots"
    plots.mkdir()
    for i in range(1, 9):
        (plots / f"example_{i:05d}.png").write_bytes(b"old")
    (plots / "notes.txt").write_text("mine")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "plot_attention.py"), "-attn_debug", str(good),
                        "-attn_plot", str(plots), "-attn_plot_n", "3"], capture_output=True, text=True, env=ENV,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(plots)) == ["example_00001.png", "example_00002.png", "example_00003.png", "notes.txt"]
    assert (plots / "example_00001.png").read_bytes() != b"old"
