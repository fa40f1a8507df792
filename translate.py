#!/usr/bin/env python
"""Checkpoint + source -> predictions (see onmt/bin/translate.py)."""
from onmt.bin.translate import main
from onmt.utils.cli import run_main

if __name__ == "__main__":
    run_main(main)
