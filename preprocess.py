#!/usr/bin/env python
"""Text -> vocabulary + numericalized shards; see onmt/bin/preprocess.py."""
from onmt.utils.cli import launch

if __name__ == "__main__":
    launch("onmt.bin.preprocess")
