#!/usr/bin/env python
"""Train a model (see onmt/bin/train.py)."""
from onmt.utils.cli import launch

if __name__ == "__main__":
    launch("onmt.bin.train")
