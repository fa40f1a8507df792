"""Preprocessing: text -> vocabularies + numericalized shards + meta.json (docs/DESIGN.md §2).

Two streaming passes over the training pair of files:
  1. read, filter, count words        -> vocabularies (vocab_builder.build_vocabs)
  2. numericalize                     -> shards of at most `shard_size` examples, written in order
Pass 1 also writes each kept example's tokens as ids to a temporary cache (token_cache.py, 4 bytes
per token next to the outputs, removed at the end), so that pass 2 streams that cache instead of
splitting and looking up the text a second time. The valid split is numericalized straight from its
text. The filter: lowercase (-lower), split on whitespace, drop examples with an empty side,
truncate (-*_seq_length_trunc), then drop examples longer than -*_seq_length.
Memory is bounded by one shard plus the word lists, never by the corpus. With -num_threads N > 1,
N worker processes tokenize, count and numericalize chunks; the main process reads and writes in
order. Each pass shows its progress (pass_progress.py: a bar on a terminal, log lines otherwise), a
pass over text in bytes of the file on disk, pass 2 over the cache in lines.
Outputs (prefix P = -save_data): the vocabulary files, P.{train,valid}.N.pt, and P.meta.json last.
"""
import logging
import multiprocessing as mp
import os
import re
import shutil
import threading
import uuid
from collections import Counter
from functools import partial

import numpy as np

from onmt.errors import UserError
from onmt.inputters.corpus import read_parallel_chunks
from onmt.inputters.dataset_swap import OUTPUT_NAME, finish_or_remove_dead_stages, swap_in
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.parallel import ordered_map
from onmt.inputters.pass_progress import PassProgress
from onmt.inputters.shards import concat_chunks, shard_name, write_shard
from onmt.inputters.token_cache import TokenCache, chunk_stats, count_and_cache, numericalize_cached
from onmt.inputters.vocab_builder import (
    build_vocabs,
    file_sha1,
    meta_path,
    read_word_list,
    save_vocabs,
    text_record,
    write_json_atomic,
)
from onmt.utils.files import (
    check_distinct_outputs,
    check_not_inputs,
    check_not_prefix_files,
    prefix_lock,
)
from onmt.utils.output_rule import check_replaceable

logger = logging.getLogger("onmt.preprocess")

DROP_REASONS = ("empty_src", "empty_tgt", "src_too_long", "tgt_too_long")
# what to change when a reason drops most of a corpus (log_summary's warning)
DROP_OPTIONS = {
    "src_too_long": ": raise -src_seq_length, or cut with -src_seq_length_trunc instead",
    "tgt_too_long": ": raise -tgt_seq_length, or cut with -tgt_seq_length_trunc instead",
    "empty_src": " (empty source lines)", "empty_tgt": " (empty target lines)"}
CHUNK = 2000                     # lines per unit of work


class ExampleFilter:
    """Tokenize and filter a chunk of parallel lines (same rules in both passes)."""

    def __init__(self, lower=False, src_trunc=0, tgt_trunc=0, src_max=None, tgt_max=None):
        self.lower, self.src_trunc, self.tgt_trunc = lower, src_trunc, tgt_trunc
        self.src_max, self.tgt_max = src_max, tgt_max

    @classmethod
    def from_opt(cls, opt):
        return cls(opt.lower, opt.src_seq_length_trunc, opt.tgt_seq_length_trunc,
                   opt.src_seq_length, opt.tgt_seq_length)

    def __call__(self, src_lines, tgt_lines):
        """-> (src token lists, tgt token lists, kept positions in the chunk, Counter of drop
        reasons)."""
        if self.lower:
            src_lines = [s.lower() for s in src_lines]
            tgt_lines = [t.lower() for t in tgt_lines]
        srcs, tgts, kept, drops = [], [], [], Counter()
        st, tt, sm, tm = self.src_trunc, self.tgt_trunc, self.src_max, self.tgt_max
        for i, (s, t) in enumerate(zip(src_lines, tgt_lines)):
            s, t = s.split(), t.split()
            if not s:
                drops["empty_src"] += 1
                continue
            if not t:
                drops["empty_tgt"] += 1
                continue
            if st and len(s) > st:
                s = s[:st]
            if tt and len(t) > tt:
                t = t[:tt]
            if sm is not None and len(s) > sm:
                drops["src_too_long"] += 1
                continue
            if tm is not None and len(t) > tm:
                drops["tgt_too_long"] += 1
                continue
            srcs.append(s)
            tgts.append(t)
            kept.append(i)
        return srcs, tgts, kept, drops


# ---------------------------------------------------------------------------- text chunks
def _numericalize_task(st, item):
    """Numericalize a chunk of text (the splits that pass 1 did not cache, e.g. valid); `st`: the
    state of numericalize_text (see parallel.ordered_map)."""
    start, src_lines, tgt_lines = item
    srcs, tgts, kept, drops = st["filter"](src_lines, tgt_lines)
    nz, dyn = st["numericalizer"], st["dynamic_dict"]
    d = nz.numericalize_batch(srcs, tgts, dynamic_dict=dyn)
    d["indices"] = np.asarray(kept, dtype=np.int64) + start
    return d, chunk_stats(d, len(src_lines), drops, nz.tgt_vocab_size, dyn)


def _text_chunks(src_path, tgt_path, bar=None):
    """(first line number, src lines, tgt lines) items; tells `bar` where each chunk ends in the
    file."""
    start = 0
    for s, t, position in read_parallel_chunks(src_path, tgt_path, CHUNK, with_position=True):
        if bar is not None:
            bar.read_up_to(start + len(s), position)
        yield start, s, t
        start += len(s)


def _usable_workers(workers):
    return workers if "fork" in mp.get_all_start_methods() else 1


def numericalize_text(src_path, tgt_path, filt, numericalizer, dynamic_dict, workers=1, bar=None):
    """Yield (numericalized chunk, stats) for a pair of text files, in order
    (`bar`: see _text_chunks)."""
    state = dict(filter=filt, numericalizer=numericalizer, dynamic_dict=dynamic_dict)
    yield from ordered_map(partial(_numericalize_task, state),
                           _text_chunks(src_path, tgt_path, bar), workers)


# ---------------------------------------------------------------------------- passes
def count_words(src_path, tgt_path, filt, shared, cache, workers=1, report_every=0):
    """Pass 1 -> (src Counter, tgt Counter or None when shared); fills `cache` (token_cache.py)."""
    workers = _usable_workers(workers)
    barrier = mp.get_context("fork").Barrier(workers) if workers > 1 else threading.Barrier(1)
    with PassProgress.of_file("pass 1: counting words", src_path, report_every) as bar:
        return count_and_cache(_text_chunks(src_path, tgt_path, bar), filt, shared, cache, workers,
                               barrier, bar.done)


def _slice_chunk(d, a, b):
    """Examples [a, b) of a numericalized chunk (flat arrays re-based)."""
    out = {"indices": d["indices"][a:b]}
    fields = {"src_offsets": ("src", "src_ex"), "tgt_offsets": ("tgt", "tgt_ex"),
              "oov_offsets": (), "oov_byte_offsets": ("oov_bytes",)}
    for off_key, names in fields.items():
        if off_key not in d:
            continue
        off = d[off_key]
        lo, hi = int(off[a]), int(off[b])
        out[off_key] = off[a:b + 1] - lo
        for k in names:
            if k in d:
                out[k] = d[k][lo:hi]
    return out


def write_split(split, results, numericalizer, dynamic_dict, shard_size, save_data, bar=None,
                run_id=None):
    """Pass 2 for one split: (chunk, stats) `results` -> shards; returns (file names, sizes, stats).
    `bar` (a PassProgress) is told the lines done after each chunk."""
    stats = {"read": 0, "kept": 0, "drops": Counter(), "src_tokens": 0, "tgt_tokens": 0,
             "tgt_in_vocab": 0, "tgt_copyable": 0}
    names, sizes, pending, n_pending = [], [], [], 0

    def flush(parts):
        path = shard_name(save_data, split, len(names))
        data = concat_chunks(parts)
        write_shard(path, data, run_id)
        names.append(os.path.basename(path))
        sizes.append(len(data["indices"]))
        logger.info("wrote %s (%d examples)", os.path.basename(path), sizes[-1])

    for d, st in results:
        for k in ("read", "kept", "src_tokens", "tgt_tokens", "tgt_in_vocab", "tgt_copyable"):
            stats[k] += st[k]
        stats["drops"].update(st["drops"])
        n, a = st["kept"], 0
        while n - a > 0:
            take = min(shard_size - n_pending, n - a)
            pending.append(d if (a == 0 and take == n) else _slice_chunk(d, a, a + take))
            n_pending += take
            a += take
            if n_pending == shard_size:
                flush(pending)
                pending, n_pending = [], 0
        if bar is not None:
            bar.done(stats["read"])
    if pending or not names:
        if not pending:      # no example survived: still write one (empty) shard
            pending = [numericalizer_empty(numericalizer, dynamic_dict)]
        flush(pending)
    stats["drops"] = {r: stats["drops"].get(r, 0) for r in DROP_REASONS}
    return names, sizes, stats


def cache_path(save_data):
    """The token-id cache between the passes (removed when preprocessing ends, stale ones too)."""
    return f"{save_data}.tokens.tmp{os.getpid()}"


def numericalizer_empty(numericalizer, dynamic_dict):
    d = numericalizer.numericalize_batch([], [], dynamic_dict=dynamic_dict)
    d["indices"] = np.zeros(0, dtype=np.int64)
    return d


# ---------------------------------------------------------------------------- output folder
def check_save_data(save_data):
    if not save_data or save_data.endswith(os.sep):
        raise UserError(f"-save_data must be a file prefix such as data/demo, got {save_data!r}")


def prepare_output(save_data):
    """Create the folder of the prefix and check it is writable; -> the staging folder where this
    run writes its outputs (swapped in by `swap_in` only when every output is complete)."""
    check_save_data(save_data)
    folder = os.path.dirname(os.path.abspath(save_data))
    stage = os.path.join(folder, f".{os.path.basename(save_data)}.staging{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        finish_or_remove_dead_stages(save_data)
        os.makedirs(stage)
    except OSError as e:
        raise UserError(f"cannot write to the folder of -save_data {save_data}: "
                        f"{e.strerror or e} ({e.filename or folder})") from None
    return stage


def check_inputs_survive(opt):
    """UserError when an input file of preprocessing (-train_src, -src_vocab, ...) is one of the
    files the run writes or removes under -save_data (its vocabularies, shards, meta.json), or
    -log_file / -save_config is an input."""
    inputs = {f"-{n}": getattr(opt, n)
              for n in ("train_src", "train_tgt", "valid_src", "valid_tgt", "src_vocab",
                        "tgt_vocab", "config") if vars(opt).get(n)}
    check_not_inputs({"-log_file": opt.log_file, "-save_config": opt.save_config}, inputs)
    check_outputs_apart(opt)
    if opt.log_file:
        # appended to: never a checkpoint, a dataset's file, a corpus (the one output rule)
        check_replaceable(opt.log_file, f"-log_file {opt.log_file}", "log")
    folder = os.path.dirname(os.path.abspath(opt.save_data))
    for what, path in inputs.items():
        if os.path.dirname(os.path.realpath(path)) == os.path.realpath(folder) and \
                OUTPUT_NAME(os.path.basename(opt.save_data)).match(
                    os.path.basename(os.path.realpath(path))):
            raise UserError(f"-save_data {opt.save_data} would replace this command's {what} "
                            f"{path}: give -save_data another prefix, or keep the input elsewhere")


def check_outputs_apart(opt):
    """UserError when -log_file and -save_config are one file, or one of them is a file of
    -save_data (a vocabulary, a shard, meta.json, the lock): the dataset's swap or the lock's
    removal would lose it."""

    outputs = {"-log_file": opt.log_file, "-save_config": opt.save_config}
    check_distinct_outputs(outputs)
    base = os.path.basename(opt.save_data)
    names = re.compile(f"{OUTPUT_NAME(base).pattern}|{re.escape(base)}\\.lock$")
    check_not_prefix_files(outputs, opt.save_data, f"-save_data {opt.save_data}", names)


# ---------------------------------------------------------------------------- driver
def _pct(a, b):
    return round(100.0 * a / b, 2) if b else 0.0


def preprocess(opt):
    """Run both passes as `opt` (validated preprocess options) says; returns the meta dict.

    Everything is written into a staging folder beside -save_data and swapped in at the end: a
    failed, interrupted or refused run leaves the previous dataset of the prefix as it was."""
    check_save_data(opt.save_data)
    # a prepare.json beside the text that cannot be read: refused before any work
    text_record(opt.train_src)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(opt.save_data)), exist_ok=True)
    except OSError:
        return _preprocess_staged(opt)   # prepare_output says why the folder cannot be made
    # one writer of a dataset at a time
    with prefix_lock(opt.save_data, f"-save_data {opt.save_data}"):
        return _preprocess_staged(opt)


def _preprocess_staged(opt):
    stage = prepare_output(opt.save_data)
    staged = os.path.join(stage, os.path.basename(opt.save_data))
    cache = TokenCache(cache_path(staged))
    try:
        meta = _preprocess(opt, cache, staged)
        swap_in(stage, opt.save_data)
        logger.info("wrote %s", meta_path(opt.save_data))
        return meta
    finally:
        cache.remove()
        shutil.rmtree(stage, ignore_errors=True)


def _preprocess(opt, cache, save_data):
    filt = ExampleFilter.from_opt(opt)
    workers = _usable_workers(opt.num_threads)
    logger.info("pass 1: counting words of %s / %s", opt.train_src, opt.train_tgt)
    src_c, tgt_c = count_words(opt.train_src, opt.train_tgt, filt, opt.share_vocab, cache, workers,
                               opt.report_every)
    n_types = len(src_c) if opt.share_vocab else (len(src_c), len(tgt_c))
    given = {side: read_word_list(path) if path else None
             for side, path in (("src", opt.src_vocab), ("tgt", opt.tgt_vocab))}
    for side, path in (("src", opt.src_vocab), ("tgt", opt.tgt_vocab)):
        if path:
            logger.info("%s vocabulary from %s (%d words)", side, path, len(given[side]))
    vocabs, counts = build_vocabs(src_c, tgt_c, opt.src_vocab_size, opt.tgt_vocab_size,
                                  opt.share_vocab, opt.src_words_min_frequency,
                                  opt.tgt_words_min_frequency,
                                  src_words=given["src"], tgt_words=given["tgt"])
    del src_c, tgt_c
    vocab_files = save_vocabs(save_data, vocabs, counts)
    logger.info("vocabulary: %s word types; source %d, target %d entries (shared: %s)",
                n_types, len(vocabs.src), len(vocabs.tgt), opt.share_vocab)

    nz = Numericalizer(vocabs)
    n_train = sum(record[3] for record in cache.records)       # lines read in pass 1

    def numericalized(split):
        """-> (the split's progress bar, its (chunk, stats) results); the bar starts here."""
        if split == "train":
            return (PassProgress.of_lines("pass 2: numericalizing train", n_train),
                    numericalize_cached(cache, nz, opt.dynamic_dict, workers))
        bar = PassProgress.of_file("numericalizing valid", opt.valid_src, opt.report_every)
        return bar, numericalize_text(opt.valid_src, opt.valid_tgt, filt, nz, opt.dynamic_dict,
                                      workers, bar)

    meta = {"share_vocab": bool(opt.share_vocab), "dynamic_dict": bool(opt.dynamic_dict),
            "lower": bool(opt.lower),
            "src_vocab_size": len(vocabs.src), "tgt_vocab_size": len(vocabs.tgt),
            "src_seq_length_trunc": opt.src_seq_length_trunc,
            "tgt_seq_length_trunc": opt.tgt_seq_length_trunc,
            "src_seq_length": opt.src_seq_length, "tgt_seq_length": opt.tgt_seq_length,
            "shards": {}, "shard_sizes": {}, "summary": {}, "run_id": uuid.uuid4().hex,
            "vocab_sha1": {name: file_sha1(path) for name, path in vocab_files.items()}}
    text = text_record(opt.train_src)   # how prepare made the text, for test input (input_rules.py)
    if text is not None:
        meta["text"] = text
    for split in ["train"] + (["valid"] if opt.valid_src else []):
        logger.info("pass 2: numericalizing %s", split)
        bar, results = numericalized(split)
        with bar:
            names, sizes, st = write_split(split, results, nz, opt.dynamic_dict, opt.shard_size,
                                           save_data, bar, run_id=meta["run_id"])
        if split == "train":
            cache.remove()
        st["tgt_in_vocab_pct"] = _pct(st.pop("tgt_in_vocab"), st["tgt_tokens"])
        copy = st.pop("tgt_copyable")
        st["tgt_copyable_pct"] = _pct(copy, st["tgt_tokens"]) if opt.dynamic_dict else None
        meta["shards"][split], meta["shard_sizes"][split], meta["summary"][split] = names, sizes, st
        log_summary(split, st, vocabs)
        if split == "train" and st["kept"] == 0:
            raise UserError(no_example_message(opt, st))
    write_json_atomic(meta_path(save_data), meta)
    return meta


def no_example_message(opt, st):
    """Why a training split kept no example, naming the option that dropped them."""
    drops = {r: n for r, n in st["drops"].items() if n}
    hint = {"src_too_long": f"-src_seq_length {opt.src_seq_length} drops longer sources "
                            "(cut them with -src_seq_length_trunc instead, or raise the limit)",
            "tgt_too_long": f"-tgt_seq_length {opt.tgt_seq_length} drops longer targets "
                            "(cut them with -tgt_seq_length_trunc instead, or raise the limit)"}
    why = "; ".join(hint[r] for r in drops if r in hint) or "every line has an empty side"
    return (f"no training example kept from {opt.train_src}: {st['read']} read, dropped "
            f"{', '.join(f'{r} {n}' for r, n in drops.items()) or 'none'}; {why}")


def log_summary(split, st, vocabs):
    drops = ", ".join(f"{r} {n}" for r, n in st["drops"].items())
    copy = ("n/a (no -dynamic_dict)" if st["tgt_copyable_pct"] is None
            else f"{st['tgt_copyable_pct']}%")
    logger.info("%s: %d examples read, %d kept, dropped: %s", split, st["read"], st["kept"], drops)
    if st["read"] and st["kept"] * 2 < st["read"]:   # most of the corpus gone: never silent
        worst = max(st["drops"], key=st["drops"].get)
        option = DROP_OPTIONS.get(worst, "")
        logger.warning("%s: only %d of %d examples kept (%.0f%%); most were dropped as %s%s", split,
                       st["kept"], st["read"], 100.0 * st["kept"] / st["read"], worst, option)
    logger.info("%s: %d source tokens, %d target tokens; vocabularies %d (src) / %d (tgt); "
                "target tokens inside the target vocabulary %s%%, copyable from the source %s",
                split, st["src_tokens"], st["tgt_tokens"], len(vocabs.src), len(vocabs.tgt),
                st["tgt_in_vocab_pct"], copy)
