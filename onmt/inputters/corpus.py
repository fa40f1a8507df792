"""Reading text corpora: plain or gzip (by the `.gz` suffix), UTF-8 strictly, one example per line.

Every problem a user can cause (missing or unreadable file, invalid UTF-8, source and target files
of different lengths) becomes a `UserError` that names the file (and the line number or the counts).
Lines are split on "\\n" only (a stray "\\r" stays inside the line and is whitespace to the
tokenizer), so line numbers agree with `wc -l` and with the other side of a parallel corpus.
For progress reports, the chunk readers can also give how far into the file on disk they are
(`with_position`): bytes read so far, compressed bytes for a `.gz`, out of `disk_size(path)`.
"""
import gzip
import io
import os
import zlib
from itertools import islice

from onmt.errors import UserError

_GZ_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


def open_text(path):
    """A text file object (UTF-8, strict, lines split on \\n) for a plain or `.gz` file; a
    byte-order mark at its start is dropped (utf-8-sig), so it never becomes part of the first
    word."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise UserError(f"invalid file name: {path!r}")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise UserError(f"{path} is a folder, not a text file")
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    try:
        if path.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", errors="strict",
                                    newline="\n")
        return open(path, "r", encoding="utf-8-sig", errors="strict", newline="\n")
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None


def _binary_lines(path):
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    with raw:
        yield from raw


def _bad_utf8_line(path):
    """1-based number of the first line of `path` that is not valid UTF-8 (None if none is)."""
    for n, raw in enumerate(_binary_lines(path), 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return n
    return None


def disk_size(path):
    """Bytes of `path` on disk (compressed for a `.gz`), or None when it has no size (a pipe)."""
    path = os.fspath(path)
    return os.path.getsize(path) if os.path.isfile(path) else None


def _disk_position(f):
    """Bytes of the file on disk that the text file `f` (open_text) has read so far, read-ahead
    included (compressed bytes for a `.gz`); None where the file cannot tell (a pipe)."""
    raw = f.buffer
    raw = raw.fileobj if isinstance(raw, gzip.GzipFile) else raw
    try:
        return raw.tell()
    except (OSError, ValueError):
        return None


def read_line_chunks(path, chunk_size=2000, with_position=False):
    """Yield lists of at most `chunk_size` lines (without their trailing newline); with
    `with_position`, (lines, `_disk_position` after them) pairs. Invalid UTF-8 or a NUL byte is a
    UserError naming the file and line."""
    path = os.fspath(path)
    f = open_text(path)
    done = 0   # lines read before this chunk
    try:
        with f:
            while True:
                chunk = list(islice(f, chunk_size))
                if not chunk:
                    return
                lines = [line[:-1] if line.endswith("\n") else line for line in chunk]
                if "\0" in "".join(lines):   # text has no NUL byte: binary or damaged data
                    n = done + next(i for i, line in enumerate(lines, 1) if "\0" in line)
                    raise UserError(f"{path}: line {n}: a NUL byte, not text "
                                    "(a binary or damaged file?)")
                done += len(lines)
                yield (lines, _disk_position(f)) if with_position else lines
    except UnicodeDecodeError:
        n = _bad_utf8_line(path)
        where = f"line {n}" if n is not None else "somewhere"
        raise UserError(f"{path}: {where}: invalid UTF-8 text") from None
    except _GZ_ERRORS as e:
        raise UserError(f"{path}: corrupt gzip file ({e})") from None
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None


def read_lines(path, what=None, strip_cr=False):
    """Yield the lines of `path` one by one, without their trailing newline (nor, with `strip_cr`,
    the "\\r"s before it: text written on Windows). The one line reader of the toolkit: every
    problem is `read_line_chunks`'s UserError, after "`what`: " when given (e.g. "-src")."""
    try:
        for chunk in read_line_chunks(path):
            yield from ([line.rstrip("\r") for line in chunk] if strip_cr else chunk)
    except UserError as e:
        if what is None:
            raise
        raise UserError(f"{what}: {e}") from None


def check_line_counts(a, n_a, b, n_b, unit="lines", hint=""):
    """Unless n_a == n_b, the UserError "`a` has `n_a` lines but `b` has `n_b`" (+ `hint`), where
    `a` and `b` name two files that must be line-aligned (`unit`: what is counted)."""
    if n_a != n_b:
        raise UserError(f"{a} has {n_a} {unit} but {b} has {n_b}{hint}")


def count_lines(path):
    """Number of lines of a text file (a last line without newline counts)."""
    return sum(len(c) for c in read_line_chunks(path, 10000))


def read_parallel_chunks(src_path, tgt_path, chunk_size=2000, with_position=False):
    """Yield (src_lines, tgt_lines) chunks of the same length, streaming both files; with
    `with_position`, (src_lines, tgt_lines, bytes of src_path read on disk or None) triples.

    Raises a UserError naming both files and both line counts when their lengths differ
    (detected when the shorter one ends: the rest of the longer one is then only counted).
    """
    src_it = read_line_chunks(src_path, chunk_size, with_position=True)
    tgt_it = read_line_chunks(tgt_path, chunk_size)
    n_src = n_tgt = 0
    for s, position in src_it:
        t = next(tgt_it, [])
        n_src += len(s)
        n_tgt += len(t)
        if len(s) != len(t):
            n_src += sum(len(c) for c, _ in src_it)
            n_tgt += sum(len(c) for c in tgt_it)
            break
        yield (s, t, position) if with_position else (s, t)
    else:
        n_tgt += sum(len(c) for c in tgt_it)
    check_line_counts(src_path, n_src, tgt_path, n_tgt,
                      hint=": source and target files must be line-aligned")


def read_parallel(src_path, tgt_path):
    """Yield (src_line, tgt_line) pairs; see `read_parallel_chunks` for the errors."""
    for s, t in read_parallel_chunks(src_path, tgt_path):
        yield from zip(s, t)
