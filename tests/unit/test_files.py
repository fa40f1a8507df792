"""onmt/utils/files.py: the atomic writer leaves the target whole (old or new) and nothing else behind; a
stream (standard output, a FIFO, a device or a link to one) is written through; outputs never share a path."""
import errno
import os
import stat
import subprocess
import sys
import threading

import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT
from onmt.errors import UserError
from onmt.utils.files import (
    AtomicFile,
    check_distinct_outputs,
    check_output,
    is_stream,
    write_atomic,
    write_lines_atomic,
    write_text_atomic,
)


def _enospc(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_writes_text_bytes_and_by_name(tmp_path):
    write_lines_atomic(tmp_path / "a.txt", ["x", "é"])
    write_text_atomic(tmp_path / "b.txt", "no newline")
    write_atomic(tmp_path / "c.bin", lambda f: f.write(b"\x00\xff"), binary=True)
    write_atomic(tmp_path / "d.txt", lambda name: open(name, "w").write("by name"), by_name=True)
    assert (tmp_path / "a.txt").read_bytes() == "x\né\n".encode()
    assert (tmp_path / "b.txt").read_text() == "no newline"
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\xff"
    assert (tmp_path / "d.txt").read_text() == "by name"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.bin", "d.txt"]


def test_permissions_are_those_of_a_plain_open(tmp_path):
    write_text_atomic(tmp_path / "a.txt", "x")
    (tmp_path / "b.txt").write_text("x")
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == stat.S_IMODE(os.stat(tmp_path / "b.txt").st_mode)


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt(),
                                   ValueError("bad value")])
def test_an_error_while_writing_leaves_the_old_file_and_nothing_else(tmp_path, error):
    target = tmp_path / "out.txt"
    target.write_text("old\n")

    def write(f):
        f.write("half of the new")
        raise error
    expected = UserError if isinstance(error, OSError) else type(error)
    with pytest.raises(expected) as e:
        write_atomic(target, write, "-output out.txt")
    if isinstance(error, OSError):
        assert str(e.value) == f"-output out.txt: cannot write {target}: No space left on device"
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_full_disk_that_the_writer_reports_otherwise_is_still_one_line(tmp_path):
    """torch.save on a full disk raises RuntimeError("unexpected pos ...") while handling the ENOSPC."""
    def write(f):
        try:
            _enospc()
        except OSError:
            raise RuntimeError("unexpected pos 64 vs 0")
    with pytest.raises(UserError, match="shard: cannot write .*s.pt: No space left on device"):
        write_atomic(tmp_path / "s.pt", write, "shard", binary=True)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_or_close_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "new.txt"
    monkeypatch.setattr(os, "replace", _enospc)
    with pytest.raises(UserError, match="cannot write .*new.txt: No space left on device"):
        write_text_atomic(target, "x")
    monkeypatch.undo()
    out = AtomicFile(target)
    out.file.write("x")
    monkeypatch.setattr(out.file, "close", _enospc, raising=False)
    with pytest.raises(UserError, match="No space left on device"):
        out.close()
    assert list(tmp_path.iterdir()) == []


def test_with_block_commits_or_discards(tmp_path):
    with AtomicFile(tmp_path / "a.txt") as f:
        f.write("a\n")
    with pytest.raises(KeyboardInterrupt), AtomicFile(tmp_path / "b.txt") as f:
        f.write("b\n")
        raise KeyboardInterrupt
    out = AtomicFile(tmp_path / "c.txt")
    out.discard()
    out.discard()                                   # idempotent
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"] and (tmp_path / "a.txt").read_text() == "a\n"


def test_unwritable_folder_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"^vocabulary: cannot write .*: No such file or directory$"):
        write_text_atomic(tmp_path / "missing" / "v.txt", "x", "vocabulary")


# ---- outputs that are not regular files: written through, never renamed over

def test_what_is_written_through(tmp_path):
    fifo, link, plain = tmp_path / "fifo", tmp_path / "null_link", tmp_path / "plain.txt"
    os.mkfifo(fifo)
    os.symlink("/dev/null", link)
    plain.write_text("x")
    assert is_stream("-") and is_stream("/dev/null") and is_stream(fifo) and is_stream(link)
    assert not is_stream(plain) and not is_stream(tmp_path / "missing.txt") and not is_stream(tmp_path)


def test_a_fifo_gets_the_text_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    write_text_atomic(fifo, "one\ntwo\n", "-output")
    reader.join(10)
    assert got == ["one\ntwo\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["fifo"]          # no temporary file left beside it


def test_a_link_to_a_device_stays_a_link(tmp_path):
    link = tmp_path / "out"
    os.symlink("/dev/null", link)
    check_output(str(link), "-output")
    write_text_atomic(link, "gone\n")
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"


def test_two_outputs_on_one_path_are_refused(tmp_path):
    p = tmp_path / "p.txt"
    os.symlink(p, tmp_path / "alias.txt")
    with pytest.raises(UserError, match="-attn_debug and -output are both"):
        check_distinct_outputs({"-attn_debug": str(p), "-dump_beam": "", "-output": str(tmp_path / "alias.txt")})
    check_distinct_outputs({"-output": "-", "-json": "-", "-log_file": None, "-x": str(p)})


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    (d / "src.txt").write_text("w1 w2 w3\nw4 w5\n")
    return save_tiny_checkpoint(d / "m.pt", "reinforced"), d


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_translate_writes_its_predictions_to_standard_output(model, target):
    ckpt, d = model
    r = subprocess.run([sys.executable, os.path.join(ROOT, "translate.py"), "-model", ckpt, "-src", str(d / "src.txt"),
                        "-output", target, "-beam_size", "2", "-max_length", "4"], capture_output=True, text=True,
                       cwd=d, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2 and all(w.startswith("w") or w.startswith("<") for w in r.stdout.split())
    assert sorted(os.listdir(d)) == ["m.pt", "src.txt"]


def test_translate_refuses_its_log_on_its_output_before_writing_either(model, tmp_path):
    ckpt, d = model
    out = tmp_path / "p.txt"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "translate.py"), "-model", ckpt, "-src", str(d / "src.txt"),
                        "-output", str(out), "-log_file", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "-output and -log_file are both" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()

