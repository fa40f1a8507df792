"""Corpora as published -> the toolkit's text layout `{train,valid,test}.{src,tgt}.txt`
(tools/prepare_cnndm.py, tools/prepare_gigaword.py, `./run.sh prepare`).

    tokenize.py   a PTB-style tokenizer for raw news text
    text.py       UTF-8 line streams, line-aligned pairs, the Cleaner (tokens, case, tags)
    tfexample.py  See et al.'s .bin records and a minimal tf.Example decoder (no TensorFlow)
    tables.py     rows of a Hugging Face export: JSON lines, CSV, Parquet
    detect.py     which form a folder holds; the one-line errors when none, several, or part of one
    output.py     the all-or-nothing writer of the splits, progress lines
    cnndm.py      CNN/DailyMail's four forms and its entry point
    gigaword.py   Gigaword's two forms and its entry point
"""
