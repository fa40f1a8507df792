"""The preprocessed dataset of an OpenNMT-py 3.x config (onmt/opts/upstream_config.py): built once,
found again by content.

    prefix = ensure_dataset(json.loads(opt.data_config),
                            preprocess_main)   # train.py, before it reads -data

The dataset lives at `{save_data}.prep-{key}/data`, where `key` is a hash of the corpora's bytes and
the preprocessing settings: the same config and files find the dataset built before; a changed
corpus or setting builds a new one beside it. Several training corpora are concatenated (upstream's
weights do not apply: every example is used once an epoch). The config's `src_vocab`
(and `tgt_vocab`), when the file exists (onmt_build_vocab writes it), is the word list preprocessing
takes (-src_vocab).

`build_vocab(spec, n_sample)` is onmt_build_vocab's work: count the words of the training corpora
(the first `n_sample` lines of each; -1: all) and write `src_vocab` (source and target counts
together with `share_vocab`; else also `tgt_vocab`) as `word<TAB>count` lines, most frequent first.
"""
import hashlib
import json
import os
from collections import Counter

from onmt.errors import UserError
from onmt.inputters.corpus import read_lines
from onmt.utils.files import write_lines_atomic
from onmt.utils.logging import logger


def _key(spec):
    h = hashlib.sha1(json.dumps(spec, sort_keys=True).encode())
    for path in [p for pair in spec["train"] + ([spec["valid"]] if spec.get("valid") else [])
                 for p in pair] + \
            [spec.get(k) for k in ("src_vocab", "tgt_vocab")
             if spec.get(k) and os.path.exists(spec[k])]:
        if not os.path.isfile(path):
            raise UserError(f"-config data: {path} does not exist")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def ensure_dataset(spec, preprocess_main):
    """The -data prefix of the dataset for `spec`, preprocessed now (`preprocess_main(argv)`:
    preprocess.py's main) unless built before."""
    prefix = os.path.join(f"{spec['save_data']}.prep-{_key(spec)}", "data")
    if os.path.exists(prefix + ".meta.json"):
        logger.info("-config data: the dataset built before for these corpora and settings: "
                    f"{prefix}")
        return prefix
    folder = os.path.dirname(prefix)
    os.makedirs(folder, exist_ok=True)
    src, tgt = spec["train"][0]
    if len(spec["train"]) > 1:   # one training text: the corpora one after the other
        src, tgt = os.path.join(folder, "train.src.txt"), os.path.join(folder, "train.tgt.txt")
        for side, out in ((0, src), (1, tgt)):
            write_lines_atomic(out, [line for pair in spec["train"]
                                     for line in read_lines(pair[side])])
    argv = ["-train_src", src, "-train_tgt", tgt, "-save_data", prefix]
    if spec.get("valid"):
        argv += ["-valid_src", spec["valid"][0], "-valid_tgt", spec["valid"][1]]
    for flag in ("share_vocab", "dynamic_dict", "lower"):
        if spec.get(flag):
            argv.append(f"-{flag}")
    for name in ("src_vocab_size", "tgt_vocab_size", "src_seq_length", "tgt_seq_length",
                 "src_seq_length_trunc", "tgt_seq_length_trunc", "src_words_min_frequency",
                 "tgt_words_min_frequency"):
        if spec.get(name) is not None:
            argv += [f"-{name}", str(spec[name])]
    for name in ("src_vocab",) + (() if spec.get("share_vocab") else ("tgt_vocab",)):
        if spec.get(name) and os.path.exists(spec[name]):
            argv += [f"-{name}", spec[name]]
    logger.info(f"-config data: building the dataset {prefix} (preprocess.py {' '.join(argv)})")
    preprocess_main(argv)
    return prefix


def build_vocab(spec, n_sample=5000):
    """Count the corpora's words and write the vocabulary files the config names; -> their paths."""
    counts = {"src": Counter(), "tgt": Counter()}
    for pair in spec["train"]:
        for side, path in zip(("src", "tgt"), pair):
            for i, line in enumerate(read_lines(path)):
                if 0 <= n_sample <= i:
                    break
                counts[side].update(line.split())
    if not spec.get("src_vocab"):
        raise UserError("-config: src_vocab (the file onmt_build_vocab writes) is missing")
    if spec.get("share_vocab"):
        files = {spec["src_vocab"]: counts["src"] + counts["tgt"]}
    else:
        if not spec.get("tgt_vocab"):
            raise UserError("-config: tgt_vocab is missing (or give share_vocab: true)")
        files = {spec["src_vocab"]: counts["src"], spec["tgt_vocab"]: counts["tgt"]}
    for path, counter in files.items():
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        write_lines_atomic(path, [f"{w}\t{c}" for w, c in sorted(counter.items(),
                                                                 key=lambda x: (-x[1], x[0]))])
    return list(files)
