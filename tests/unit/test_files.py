"""onmt/utils/files.py: the atomic writer leaves the target whole (old or new) and nothing else behind."""
import errno
import os
import stat

import pytest

from onmt.errors import UserError
from onmt.utils.files import AtomicFile, write_atomic, write_lines_atomic, write_text_atomic


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
