"""onmt_average_models (onmt/bin/average_models.py): one checkpoint is itself bit for bit, two the
per-tensor mean; checkpoints of another family, vocabulary or shape are refused in one line."""
import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint
from onmt.bin import average_models
from onmt.errors import UserError
from onmt.utils.checkpoint import load_checkpoint


def test_one_checkpoint_is_itself_bit_for_bit(tmp_path):
    a = save_tiny_checkpoint(tmp_path / "a.pt", "reinforced", seed=1)
    out = str(tmp_path / "avg.pt")
    average_models.main(["-models", a, "-output", out])
    src, avg = load_checkpoint(a), load_checkpoint(out)
    assert set(src["model"]) == set(avg["model"])
    for k, t in src["model"].items():
        assert avg["model"][k].dtype == t.dtype and torch.equal(avg["model"][k], t), k
    assert avg["vocab"] == src["vocab"] and avg["opt"] == src["opt"]
    assert "optim" not in avg and "rng" not in avg
    assert avg["averaged_from"] == [{"path": a, "step": 0}]


@pytest.mark.parametrize("family", ["reinforced", "copy", "rnn"])
def test_two_checkpoints_are_the_per_tensor_mean(tmp_path, family):
    a = save_tiny_checkpoint(tmp_path / "a.pt", family, seed=1)
    b = save_tiny_checkpoint(tmp_path / "b.pt", family, seed=2)
    out = str(tmp_path / "avg.pt")
    average_models.main(["-models", a, b, "-output", out])
    ta, tb, avg = (load_checkpoint(p)["model"] for p in (a, b, out))
    for k in ta:
        want = ((ta[k].double() + tb[k].double()) / 2).to(ta[k].dtype)
        assert torch.equal(avg[k], want), k
        assert torch.allclose(avg[k], (ta[k] + tb[k]) / 2, atol=1e-7)


def test_the_average_translates(tmp_path):
    from onmt.translate.session import load_session
    a = save_tiny_checkpoint(tmp_path / "a.pt", "copy", seed=1)
    b = save_tiny_checkpoint(tmp_path / "b.pt", "copy", seed=2)
    out = str(tmp_path / "avg.pt")
    average_models.main(["-m", a, b, "-o", out])
    session = load_session(out, torch.device("cpu"))
    assert session.vocabs.to_dict() == load_checkpoint(a)["vocab"]


def test_another_family_is_refused_in_one_line(tmp_path):
    a = save_tiny_checkpoint(tmp_path / "a.pt", "reinforced")
    b = save_tiny_checkpoint(tmp_path / "b.pt", "copy")
    with pytest.raises(UserError, match=r"b.pt is a copy model, .*a.pt a reinforced one") as e:
        average_models.main(["-models", a, b, "-output", str(tmp_path / "o.pt")])
    assert "\n" not in str(e.value)
    assert not (tmp_path / "o.pt").exists()


def test_another_vocabulary_is_refused(tmp_path):
    a = save_tiny_checkpoint(tmp_path / "a.pt", "rnn")
    b = save_tiny_checkpoint(tmp_path / "b.pt", "rnn")
    ckpt = torch.load(b, weights_only=True)
    ckpt["vocab"]["src"][-1] = "other"
    torch.save(ckpt, b)
    with pytest.raises(UserError, match="the vocabulary of .*b.pt differs"):
        average_models.main(["-models", a, b, "-output", str(tmp_path / "o.pt")])


def test_other_shapes_are_refused(tmp_path):
    a = save_tiny_checkpoint(tmp_path / "a.pt", "rnn")
    b = save_tiny_checkpoint(tmp_path / "b.pt", "rnn")
    ckpt = torch.load(b, weights_only=True)
    name = next(k for k, t in ckpt["model"].items() if t.dim() == 2)
    ckpt["model"][name] = torch.zeros(3, 3)
    torch.save(ckpt, b)
    with pytest.raises(UserError, match=f"parameter {name} of .*b.pt is \\(3, 3\\)"):
        average_models.main(["-models", a, b, "-output", str(tmp_path / "o.pt")])


def test_output_over_an_input_and_a_repeated_input_are_refused(tmp_path):
    a = save_tiny_checkpoint(tmp_path / "a.pt", "rnn")
    with pytest.raises(UserError, match="-output .*a.pt is this command's -models"):
        average_models.main(["-models", a, "-output", a])
    with pytest.raises(UserError, match="given twice"):
        average_models.main(["-models", a, a, "-output", str(tmp_path / "o.pt")])


def test_upstream_names_and_short_flags():
    from onmt.opts.release import average_models_parser
    p = average_models_parser()
    for a, b in (("-models", "-output"), ("-m", "-o"), ("--models", "--output")):
        opt = p.parse_args([a, "x.pt", "y.pt", b, "z.pt"])
        assert opt.models == ["x.pt", "y.pt"] and opt.output == "z.pt"


def test_the_command_line_says_one_line(tmp_path):
    import subprocess
    import sys

    from helpers.paths import ROOT
    a = save_tiny_checkpoint(tmp_path / "a.pt", "reinforced")
    b = save_tiny_checkpoint(tmp_path / "b.pt", "rnn")
    r = subprocess.run([sys.executable, "-m", "onmt.bin.average_models", "-models", a, b,
                        "-output", str(tmp_path / "o.pt")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "error: -models:" in r.stderr, r.stderr
