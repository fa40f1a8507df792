#!/usr/bin/env python
"""Gigaword as published (Rush et al.'s release, or the seed layout) -> DIR/{train,valid,test}.{src,tgt}.txt
with UNK as <unk>; see onmt/prepare/gigaword.py.

    tools/prepare_gigaword.py -input ~/sumdata -output data/giga [-format auto] [-splits train valid]
"""
from onmt.prepare.gigaword import main
from onmt.utils.cli import run_main

if __name__ == "__main__":
    run_main(main)
