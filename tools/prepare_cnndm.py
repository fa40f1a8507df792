#!/usr/bin/env python
"""CNN/DailyMail as published (OpenNMT's release, See et al.'s .bin files, a Hugging Face export, or the
seed layout) -> DIR/{train,valid,test}.{src,tgt}.txt; see onmt/prepare/cnndm.py.

    tools/prepare_cnndm.py -input ~/cnndm -output data/cnndm [-format auto] [-no_lower] [-tokenize auto]
"""
from onmt.prepare.cnndm import main
from onmt.utils.cli import run_main

if __name__ == "__main__":
    run_main(main)
