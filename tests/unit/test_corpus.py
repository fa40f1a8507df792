import gzip

import pytest

from onmt.errors import UserError
from onmt.inputters.corpus import count_lines, read_lines, read_parallel, read_parallel_chunks


def write(path, text, gz=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return str(path)


def test_plain_and_gz_read_the_same(tmp_path):
    text = "a b\n\nc \r d\nlast"
    plain = write(tmp_path / "x.txt", text)
    gz = write(tmp_path / "x.txt.gz", text, gz=True)
    assert list(read_lines(plain)) == list(read_lines(gz)) == ["a b", "", "c \r d", "last"]
    assert count_lines(gz) == 4


def test_parallel_pairs(tmp_path):
    s = write(tmp_path / "s.txt", "".join(f"s{i}\n" for i in range(4500)))
    t = write(tmp_path / "t.txt.gz", "".join(f"t{i}\n" for i in range(4500)), gz=True)
    pairs = list(read_parallel(s, t))
    assert len(pairs) == 4500 and pairs[4321] == ("s4321", "t4321")


@pytest.mark.parametrize("n_src,n_tgt", [(5, 3), (3, 5), (2000, 4001), (4001, 2000)])
def test_mismatched_counts_name_both_files(tmp_path, n_src, n_tgt):
    s = write(tmp_path / "s.txt", "x\n" * n_src)
    t = write(tmp_path / "t.txt", "y\n" * n_tgt)
    with pytest.raises(UserError) as e:
        for _ in read_parallel_chunks(s, t, chunk_size=2000):
            pass
    msg = str(e.value)
    assert s in msg and t in msg and str(n_src) in msg and str(n_tgt) in msg


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        list(read_lines(str(tmp_path / "nope.txt")))
    with pytest.raises(UserError, match="folder"):
        list(read_lines(str(tmp_path)))


@pytest.mark.parametrize("gz", [False, True])
def test_invalid_utf8_names_file_and_line(tmp_path, gz):
    path = write(tmp_path / ("bad.txt.gz" if gz else "bad.txt"), b"ok\nfine\nbad \xff\xfe here\n", gz=gz)
    with pytest.raises(UserError) as e:
        list(read_lines(path))
    assert path in str(e.value) and "line 3" in str(e.value)


@pytest.mark.parametrize("chunk", [2, 2000])
def test_a_nul_byte_names_file_and_line(tmp_path, chunk):
    """A NUL byte is no text (a binary or damaged file): one error naming the file and its line, in any
    chunk; every reader of the toolkit reads through here."""
    from onmt.inputters.corpus import read_line_chunks
    path = write(tmp_path / "nul.txt", b"a b\nc d\ne f\ng\x00h\n")
    with pytest.raises(UserError, match=r"nul.txt: line 4: a NUL byte"):
        list(read_line_chunks(path, chunk))
    with pytest.raises(UserError, match=r"-src: .*nul.txt: line 4"):
        list(read_lines(path, "-src"))


def test_corrupt_gzip(tmp_path):
    path = write(tmp_path / "c.txt.gz", b"not gzip at all")
    with pytest.raises(UserError, match="c.txt.gz"):
        list(read_lines(path))
