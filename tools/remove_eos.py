#!/usr/bin/env python
"""FILE (or stdin) -> stdout: every `</s>` becomes `.`, whitespace is normalized to single spaces.

    tools/remove_eos.py pred.txt > clean.txt        # or: ... | tools/remove_eos.py > clean.txt

FILE may be plain or `.gz`; `-` or no argument reads stdin; a byte-order mark at its start is dropped.

Line alignment is kept: one output line per input line, an empty line stays empty.
The same cleaning as tools/prepare_cnndm.py applies to the seed layout (onmt/prepare/text.py).
When the reader of stdout goes away (`... | head -1`), it stops silently with status 141, as a
filter killed by SIGPIPE does.
"""
import gzip
import io
import os
import sys

from onmt.prepare.text import remove_eos as clean
from onmt.utils.cli import quiet_broken_pipe


def usage_error(message):
    print(f"remove_eos.py: error: {message} (usage: remove_eos.py [FILE] > OUT)", file=sys.stderr)
    sys.exit(2)


def input_lines(argv):
    """Binary lines (split on \\n only) of the one FILE of `argv`, or of stdin."""
    if argv in ([], ["-"]):
        return sys.stdin.buffer
    if argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    if len(argv) > 1 or argv[0].startswith("-"):
        usage_error(f"unexpected argument {argv[1] if len(argv) > 1 else argv[0]}")
    path = argv[0]
    if os.path.isdir(path):
        usage_error(f"{path} is a folder, not a text file")
    try:
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    except OSError as e:
        usage_error(f"cannot read {path}: {e.strerror or e}")


def _read(lines, path):
    """The lines of `lines`; a damaged .gz (truncated, not gzip) is one line naming the file, not a traceback."""
    import zlib
    try:
        yield from lines
    except (EOFError, OSError, zlib.error) as e:
        print(f"remove_eos.py: error: {path}: damaged or truncated ({e})", file=sys.stderr)
        sys.exit(1)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    lines = _read(input_lines(argv), argv[0] if argv else "-")
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
    for n, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError:
            out.flush()
            print(f"remove_eos.py: error: line {n} of the input is not valid UTF-8", file=sys.stderr)
            sys.exit(1)
        out.write(clean(line) + "\n")
    out.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        quiet_broken_pipe()
