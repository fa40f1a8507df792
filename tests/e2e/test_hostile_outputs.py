"""Hostile outputs: unusable paths checked before any work, a full disk (one line, nothing partial), streams
and links as outputs, a closed pipe, an output that is a link into the input (docs/hostile-inputs.md)."""
import os
import subprocess
import sys
import threading

import pytest

from helpers.hostile import (
    TINY,
    corpus,
    enospc,
    erofs,
    evaluate_error,
    make_tiny,
    one_line_error,
    preprocess_argv,
    translate_error,
)
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main
from onmt.utils.files import write_atomic, write_text_atomic


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Preprocessed toy data, a source file, and a checkpoint trained 2 steps on the data."""
    return make_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("case", ["parent_is_a_file", "names_a_folder", "ends_with_slash", "read_only_folder"])
def test_unusable_save_model_fails_before_any_work(capsys, tmp_path, monkeypatch, case):
    """Found at the first checkpoint (hours in, with a traceback) before; now in the first second."""
    import os
    (tmp_path / "file").write_text("x")
    (tmp_path / "runs").mkdir()
    save, expect = {"parent_is_a_file": (tmp_path / "file" / "sub" / "m", "is a file, not a folder"),
                    "names_a_folder": (tmp_path / "runs", "is a folder; give a prefix of file names such as"),
                    "ends_with_slash": (f"{tmp_path / 'new'}/", "is a folder"),
                    "read_only_folder": (tmp_path / "runs" / "m", "is not writable")}[case]
    if case == "read_only_folder":
        os.chmod(tmp_path / "runs", 0o555)
        real = os.access           # root writes anywhere: say what a user's os.access says
        monkeypatch.setattr(os, "access", lambda p, m, **k: os.path.abspath(p) != str(tmp_path / "runs")
                            and real(p, m, **k))
    import onmt.inputters.vocab_builder as vb
    monkeypatch.setattr(vb, "load_vocabs", lambda *a: pytest.fail("the data was read"))
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"), "-save_model", str(save)])
    os.chmod(tmp_path / "runs", 0o755)
    assert "-save_model" in err and expect in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "runs"] and not list((tmp_path / "runs").iterdir())


def test_save_model_in_a_folder_no_file_can_be_created_in(capsys, tmp_path, monkeypatch):
    """What os.access cannot tell (a read-only mount, /proc, root's rights): a file is tried."""
    import tempfile
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: erofs())
    err = one_line_error(capsys, train_bin.main, ["-data", str(tmp_path / "none"),
                                                  "-save_model", str(tmp_path / "runs" / "m")])
    assert f"cannot write into folder {tmp_path / 'runs'}: Read-only file system" in err
    assert not list((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("case", ["missing_folder", "a_folder"])
def test_translate_output_checked_before_loading_anything(capsys, tmp_path, monkeypatch, case):
    (tmp_path / "out").mkdir()
    out, expect = {"missing_folder": (tmp_path / "nowhere" / "p.txt", "does not exist"),
                   "a_folder": (tmp_path / "out", "is a folder, not a file")}[case]
    monkeypatch.setattr(translate_bin, "load_session", lambda *a: pytest.fail("the checkpoint was loaded"))
    err = one_line_error(capsys, translate_bin.main, ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "s"),
                                                      "-output", str(out)])
    assert f"-output {out}" in err and expect in err


@pytest.mark.parametrize("target", ["missing/x.json", "d"])
def test_evaluate_json_checked_before_scoring(capsys, tmp_path, target):
    (tmp_path / "a.txt").write_text("x y\n")
    (tmp_path / "d").mkdir()
    err = evaluate_error(capsys, ["-pred", str(tmp_path / "a.txt"), "-ref", str(tmp_path / "a.txt"),
                             "-json", str(tmp_path / target)])
    assert "-json" in err and ("does not exist" in err or "is a folder" in err)
    assert "ROUGE-1" not in capsys.readouterr().out      # nothing was scored


def test_atomic_text_write_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    import errno
    import os

    from onmt.errors import UserError
    from onmt.utils.files import write_text_atomic
    target = tmp_path / "out.json"
    target.write_text("old\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError, match="-json out.json: cannot write .*No space left on device"):
        write_text_atomic(str(target), "new\n", "-json out.json")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize("which", ["-output", "-attn_debug"])
def test_full_disk_at_translation_output(capsys, tiny, tmp_path, monkeypatch, which):
    import os
    out, dump = tmp_path / "pred.txt", tmp_path / "dump.npz"
    out.write_text("previous\n")
    monkeypatch.setattr(os, "replace", enospc)
    more_args = ["-attn_debug", str(dump)] if which == "-attn_debug" else []
    err = translate_error(capsys, tiny, tiny["ckpt"], out, *more_args)
    path = dump if which == "-attn_debug" else out
    assert f"{which} {path}: cannot write {path}: No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.txt"] and out.read_text() == "previous\n"


def test_full_disk_at_checkpoint_save_leaves_no_partial_checkpoint(capsys, tiny, tmp_path, monkeypatch):
    """A real ENOSPC from the kernel: the temporary checkpoint is /dev/full."""
    import os
    import tempfile
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    real = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda prefix="", suffix="", dir=None:
                        (os.open("/dev/full", os.O_WRONLY), os.path.join(dir, prefix + "x" + suffix))
                        if prefix.startswith("m_step_") else real(prefix=prefix, suffix=suffix, dir=dir))
    err = one_line_error(capsys, train_bin.main, ["-data", tiny["prefix"], "-save_model", str(tmp_path / "m"), *TINY,
                                                  "-train_steps", "1"])
    assert f"checkpoint: cannot write {tmp_path / 'm_step_1.pt'}: No space left on device" in err
    assert list(tmp_path.iterdir()) == []


def test_full_disk_at_shard_write_keeps_the_previous_dataset(capsys, tmp_path, monkeypatch):
    import torch

    from onmt.bin import preprocess as preprocess_bin
    src, tgt = corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()

    def half_then_full(obj, f, *a, **k):
        f.write(b"PK\x03\x04 partial")
        enospc()
    monkeypatch.setattr(torch, "save", half_then_full)
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv(src, tgt, save, "-seed", "9"))
    assert "shard: cannot write" in err and "data.train.0.pt: No space left on device" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_full_disk_at_token_cache_keeps_the_previous_dataset(capsys, tmp_path, monkeypatch):
    """The cache between the passes (token_cache.py) written to /dev/full: the kernel's ENOSPC."""
    import builtins
    import os

    import onmt.inputters.token_cache as token_cache
    from onmt.bin import preprocess as preprocess_bin
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    src, tgt = corpus(tmp_path / "c")
    save = str(tmp_path / "p" / "data")
    run_main(preprocess_bin.main, preprocess_argv(src, tgt, save))
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    capsys.readouterr()
    monkeypatch.setattr(token_cache, "open", lambda path, mode="r", *a, **k:
                        builtins.open("/dev/full" if mode == "wb" else path, mode, *a, **k), raising=False)
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv(src, tgt, save))
    assert "token cache: cannot write" in err and "No space left on device" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before


def test_save_config_on_a_full_disk_keeps_the_previous_file(capsys, tmp_path, monkeypatch):
    """-save_config was opened with open(path, "w"): a failed write left a truncated config."""
    import errno
    (tmp_path / "c.yaml").write_text("old: 1\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    err = one_line_error(capsys, preprocess_bin.main, preprocess_argv("s.txt", "t.txt", str(tmp_path / "p" / "d"),
                                                                       "-save_config", str(tmp_path / "c.yaml")))
    assert "-save_config" in err and "No space left on device" in err
    assert (tmp_path / "c.yaml").read_text() == "old: 1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_oserror_without_a_handler_is_still_one_line(capsys, tmp_path):
    """run_main's last resort: any OSError (here a folder read as a file) is one line naming the file."""
    def main(argv):
        open(tmp_path)
    err = one_line_error(capsys, main, [])
    assert str(tmp_path) in err and "Is a directory" in err


def _fifo_reader(path):
    """A FIFO at `path` read to its end by a thread: (thread, list that receives the bytes)."""
    os.mkfifo(path)
    got = []

    def read():
        with open(path, "rb") as f:
            got.append(f.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def _renaming_writer(name):
    """A writer that, as torch's Chrome trace export does, writes a temporary file and renames it onto the
    name it is given."""
    with open(f"{name}.part", "w") as f:
        f.write('{"trace": 1}')
    os.replace(f"{name}.part", name)


def test_a_by_name_writer_into_a_fifo_writes_through_it(tmp_path):
    """-profile_trace /dev/null (any stream) once replaced the device by a regular file."""
    import stat
    path = str(tmp_path / "trace")
    thread, got = _fifo_reader(path)
    write_atomic(path, _renaming_writer, "-profile_trace", by_name=True)
    thread.join(10)
    assert stat.S_ISFIFO(os.stat(path).st_mode) and got == [b'{"trace": 1}']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace"]


def test_a_link_to_this_process_s_descriptor_is_written_through_when_it_is_a_regular_file(tmp_path):
    """-dump_beam /dev/stdout with stdout redirected into a file: /dev/stdout (a link to /proc/self/fd/1)
    was renamed over, turning the machine's /dev/stdout into a regular file."""
    out = open(tmp_path / "redirected.txt", "w")
    out.write("before\n")
    out.flush()
    link, target = tmp_path / "stdout", f"/proc/self/fd/{out.fileno()}"
    os.symlink(target, link)
    write_text_atomic(str(link), "dump\n", "-dump_beam")
    out.write("after\n")
    out.close()
    assert os.path.islink(link) and os.readlink(link) == target
    assert (tmp_path / "redirected.txt").read_text() == "before\ndump\nafter\n"     # at the stream's position
    assert sorted(p.name for p in tmp_path.iterdir()) == ["redirected.txt", "stdout"]


def test_a_link_to_a_regular_file_stays_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "pred.txt").write_text("old\n")
    os.symlink(tmp_path / "real" / "pred.txt", tmp_path / "pred.txt")
    write_text_atomic(str(tmp_path / "pred.txt"), "new\n")
    assert os.path.islink(tmp_path / "pred.txt") and (tmp_path / "real" / "pred.txt").read_text() == "new\n"


def test_log_file_dash_is_standard_output_not_a_file_named_dash(tmp_path, monkeypatch, capsys):
    from onmt.utils.logging import init_logger
    monkeypatch.chdir(tmp_path)
    init_logger("-").info("hello")
    assert "hello" in capsys.readouterr().out and not (tmp_path / "-").exists()
    init_logger("")


def test_explore_to_standard_output_keeps_its_status_line_out_of_the_page(tmp_path, monkeypatch, capfd):
    """onmt_explore -output - printed its status line into the page, and its size was that of a file
    named `-` in the working folder (or an error when there was none)."""
    from onmt.bin import explore as explore_bin
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.txt").write_text("a b c\n")
    (tmp_path / "r.txt").write_text("a b\n")
    (tmp_path / "-").write_text("not the page\n")
    size = explore_bin.main(["-src", "s.txt", "-ref", "r.txt", "-system", "r.txt", "-output", "-"])
    out, err = capfd.readouterr()
    assert out.rstrip().endswith("</html>") and len(out.encode()) == size and f"-: {size:,} bytes" in err
    assert (tmp_path / "-").read_text() == "not the page\n"


@pytest.mark.parametrize("tool", ["remove_eos"])
def test_writing_into_a_closed_pipe_exits_quietly(tmp_path, tool):
    """`tools/remove_eos.py < big | head -1`: no BrokenPipeError traceback; status 141 (SIGPIPE's)."""
    import os

    from helpers.e2e import ROOT
    big = tmp_path / "in.txt"
    big.write_text("a </s> b\n" * 200000)
    with open(big, "rb") as stdin:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", f"{tool}.py")], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout.readline() == b"a . b\n"
        proc.stdout.close()                                   # what head does after its line
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and err == b"", err.decode()


def test_prepare_output_that_is_a_link_into_the_input_is_refused(capsys, tmp_path):
    """The link's target, a file of the corpus, was replaced by the prepared text."""
    from onmt.prepare.cnndm import main
    from onmt.utils.cli import run_main
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir(), out.mkdir()
    for split in ("train", "valid", "test"):
        (src / f"{split}.src.txt").write_text("Hello World . </s> more .\n")
        (src / f"{split}.tgt.txt").write_text("Hi .\n")
    os.symlink(src / "test.tgt.txt", out / "test.tgt.txt")
    with pytest.raises(SystemExit):
        run_main(main, ["-input", str(src), "-output", str(out)])
    err = capsys.readouterr().err
    assert "is a link to" in err and "inside -input" in err and "Traceback" not in err
    assert (src / "test.tgt.txt").read_text() == "Hi .\n" and os.listdir(out) == ["test.tgt.txt"]
