#!/usr/bin/env python
"""stdin -> stdout: every `</s>` becomes `.`, whitespace is normalized to single spaces.

Line alignment is kept: one output line per input line, an empty line stays empty.
Used by `./run.sh prepare` on CNN/DM targets whose sentences are separated by `</s>`.
"""
import io
import sys


def clean(line):
    return " ".join(line.replace("</s>", " . ").split())


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
    main()
