"""Hostile and broken inputs: each answered by a one-line message naming the option, file or line, a
non-zero exit, no traceback, and nothing half-written left behind (issue: every hostile input clean).

The entry points run in-process through `run_main` (what the console scripts call), so each row costs
milliseconds; the message is what a user sees on stderr.
"""
import pytest

from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.checkpoint import prune_checkpoints
from onmt.utils.cli import run_main


def one_line_error(capsys, main, argv):
    """Run `main(argv)` as the console script does; -> the single stderr line (exit status checked)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


TRAIN_NUMBERS = [
    (["-learning_rate", "nan"], "-learning_rate must be positive, got nan"),
    (["-learning_rate", "-0.1"], "-learning_rate must be positive"),
    (["-learning_rate", "inf"], "-learning_rate must be positive, got inf"),
    (["-report_every", "0"], "-report_every must be positive"),
    (["-pool_factor", "0"], "-pool_factor must be positive"),
    (["-valid_batch_size", "0"], "-valid_batch_size must be positive"),
    (["-batch_size", "-3"], "-batch_size must be positive"),
    (["-rnn_size", "0"], "-rnn_size must be positive"),
    (["-word_vec_size", "0"], "-word_vec_size must be positive"),
    (["-layers", "0"], "-layers must be positive"),
    (["-enc_layers", "0"], "-enc_layers must be positive"),
    (["-dropout", "1.5"], "-dropout must be in [0, 1)"),
    (["-dropout", "-0.1"], "-dropout must be in [0, 1)"),
    (["-max_grad_norm", "-1"], "-max_grad_norm must be >= 0"),
    (["-adam_beta2", "1.0"], "-adam_beta2 must be in [0, 1)"),
    (["-param_init", "nan"], "-param_init must be >= 0, got nan"),
]


@pytest.mark.parametrize("extra,message", TRAIN_NUMBERS, ids=[" ".join(a) for a, _ in TRAIN_NUMBERS])
def test_impossible_training_numbers(capsys, tmp_path, extra, message):
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"), *extra])
    assert message in err
    assert list(tmp_path.iterdir()) == []          # refused before anything was written


TRANSLATE_NUMBERS = [
    (["-max_length", "0"], "-max_length must be positive"),
    (["-max_length", "-5"], "-max_length must be positive"),
    (["-min_length", "-1"], "-min_length must be >= 0"),
    (["-min_length", "20", "-max_length", "10"], "-min_length 20 is above -max_length 10"),
    (["-block_ngram_repeat", "-2"], "-block_ngram_repeat must be >= 0"),
    (["-alpha", "nan"], "-alpha must be >= 0, got nan"),
    (["-batch_size", "0"], "-batch_size must be positive"),
    (["-beam_size", "0"], "-beam_size must be >= 1"),
]


@pytest.mark.parametrize("extra,message", TRANSLATE_NUMBERS, ids=[" ".join(a) for a, _ in TRANSLATE_NUMBERS])
def test_impossible_translation_numbers(capsys, tmp_path, extra, message):
    out = tmp_path / "pred.txt"
    err = one_line_error(capsys, translate_bin.main,
                         ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s.txt"), "-output", str(out),
                          *extra])
    assert message in err
    assert not out.exists()


@pytest.mark.parametrize("keep", [0, -1])
def test_keep_checkpoint_zero_or_negative_deletes_nothing(tmp_path, keep):
    """OpenNMT-py reads -keep_checkpoint 0 as 'delete nothing'; it once deleted every checkpoint here."""
    paths = []
    for step in (1, 2, 3):
        p = tmp_path / f"m_step_{step}.pt"
        p.write_bytes(b"x")
        paths.append(str(p))
        paths = prune_checkpoints(paths, keep)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m_step_1.pt", "m_step_2.pt", "m_step_3.pt"]


def test_keep_checkpoint_n_keeps_the_newest_n(tmp_path):
    paths = []
    for step in (1, 2, 3):
        p = tmp_path / f"m_step_{step}.pt"
        p.write_bytes(b"x")
        paths = prune_checkpoints(paths + [str(p)], 2)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m_step_2.pt", "m_step_3.pt"]


# --------------------------------------------------------------------------- evaluate
def _evaluate(capsys, argv):
    from onmt.bin import evaluate as evaluate_bin
    return one_line_error(capsys, evaluate_bin.main, argv)


def test_evaluate_two_empty_files_is_an_error_not_a_table_of_zeros(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("")
    (tmp_path / "r.txt").write_text("")
    err = _evaluate(capsys, ["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "r.txt")])
    assert "empty" in err and "p.txt" in err


@pytest.mark.parametrize("which", ["pred", "ref"])
def test_evaluate_folder_as_input(capsys, tmp_path, which):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    args = {"pred": str(tmp_path / "a.txt"), "ref": str(tmp_path / "a.txt"), which: str(tmp_path / "d")}
    err = _evaluate(capsys, ["-pred", args["pred"], "-ref", args["ref"]])
    assert "d: cannot read" in err


@pytest.mark.parametrize("target", ["missing/x.json", "d"])
def test_evaluate_json_checked_before_scoring(capsys, tmp_path, target):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    err = _evaluate(capsys, ["-pred", str(tmp_path / "a.txt"), "-ref", str(tmp_path / "a.txt"),
                             "-json", str(tmp_path / target)])
    assert "-json" in err and ("does not exist" in err or "is a folder" in err)
    assert "ROUGE-1" not in capsys.readouterr().out      # nothing was scored


def test_atomic_text_write_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    import errno
    import os

    from onmt.utils.cli import UserError
    from onmt.utils.files import write_text_atomic
    target = tmp_path / "out.json"
    target.write_text("old\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError, match="-json out.json: cannot write .*No space left on device"):
        write_text_atomic(str(target), "new\n", "-json out.json")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
