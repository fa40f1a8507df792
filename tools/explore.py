#!/usr/bin/env python
"""The summary explorer from a checkout: the same as `onmt_explore` (onmt/bin/explore.py, docs/explorer.md).

    tools/explore.py -src test.src.txt -ref test.tgt.txt -system a/test.npz b/test.npz -output explore.html
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from onmt.bin.explore import cli  # noqa: E402

if __name__ == "__main__":
    cli()
