#!/usr/bin/env python
"""Checkpoint + source -> predictions (see onmt/bin/translate.py)."""
from onmt.utils.cli import launch

if __name__ == "__main__":
    launch("onmt.bin.translate")
