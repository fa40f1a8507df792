#!/usr/bin/env python
"""stdin -> stdout: every `</s>` becomes `.`, whitespace is normalized to single spaces.

Line alignment is kept: one output line per input line, an empty line stays empty.
The same cleaning as tools/prepare_cnndm.py applies to the seed layout (onmt/prepare/text.py).
When the reader of stdout goes away (`... | head -1`), it stops silently with status 141, as a
filter killed by SIGPIPE does.
"""
import io
import sys

from onmt.prepare.text import remove_eos as clean
from onmt.utils.cli import quiet_broken_pipe


def main():
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
    for n, raw in enumerate(sys.stdin.buffer, 1):       # binary lines: split on \n only
        try:
            line = raw.decode("utf-8")
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
