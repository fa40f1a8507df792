#!/usr/bin/env python
"""Train a model (see onmt/bin/train.py)."""
from onmt.bin.train import cli

if __name__ == "__main__":
    cli()
