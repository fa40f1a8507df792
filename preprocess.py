#!/usr/bin/env python
"""Text -> vocabulary + numericalized shards; see onmt/bin/preprocess.py."""
from onmt.bin.preprocess import main
from onmt.utils.cli import run_main

if __name__ == "__main__":
    run_main(main)
