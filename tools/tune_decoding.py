#!/usr/bin/env python
"""The decoding tuner from a checkout: the same as `onmt_tune_decoding` (onmt/bin/tune_decoding.py).

    tools/tune_decoding.py -model model_step_4000.pt -src valid.src.txt -tgt valid.tgt.txt -output best.yaml
    translate.py -config best.yaml -src test.src.txt -output pred.txt
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from onmt.bin.tune_decoding import cli  # noqa: E402

if __name__ == "__main__":
    cli()
