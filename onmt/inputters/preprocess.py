"""Preprocessing: text -> vocabularies + numericalized shards + meta.json (docs/DESIGN.md §2).

Two streaming passes over the training pair of files:
  1. read, filter, count words        -> vocabularies (vocab_builder.build_vocabs)
  2. numericalize                     -> shards of at most `shard_size` examples, written in order
Pass 1 also writes each kept example's tokens as ids to a temporary cache (token_cache.py, 4 bytes per
token next to the outputs, removed at the end), so that pass 2 streams that cache instead of splitting
and looking up the text a second time. The valid split is numericalized straight from its text.
The filter: lowercase (-lower), split on whitespace, drop examples with an empty side, truncate
(-*_seq_length_trunc), then drop examples longer than -*_seq_length.
Memory is bounded by one shard plus the word lists, never by the corpus. With -num_threads N > 1,
N worker processes tokenize, count and numericalize chunks; the main process reads and writes in order.
Outputs (prefix P = -save_data): the vocabulary files, P.{train,valid}.N.pt, and P.meta.json last.
"""
import glob
import logging
import multiprocessing as mp
import os
import re
import threading
from collections import Counter

import numpy as np

from onmt.inputters.corpus import read_parallel_chunks
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.parallel import ordered_map
from onmt.inputters.shards import concat_chunks, shard_name, write_shard
from onmt.inputters.token_cache import TokenCache, chunk_stats, count_and_cache, numericalize_cached
from onmt.inputters.vocab_builder import build_vocabs, meta_path, save_vocabs, write_json_atomic
from onmt.utils.cli import UserError

logger = logging.getLogger("onmt.preprocess")

DROP_REASONS = ("empty_src", "empty_tgt", "src_too_long", "tgt_too_long")
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
        """-> (src token lists, tgt token lists, kept positions in the chunk, Counter of drop reasons)."""
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
# Per-process state handed to the workers once (by fork) through `_init_worker`.
_WORKER = {}


def _init_worker(**state):
    _WORKER.clear()
    _WORKER.update(state)


def _numericalize_task(item):
    """Numericalize a chunk of text (the splits that pass 1 did not cache, e.g. valid)."""
    start, src_lines, tgt_lines = item
    srcs, tgts, kept, drops = _WORKER["filter"](src_lines, tgt_lines)
    nz, dyn = _WORKER["numericalizer"], _WORKER["dynamic_dict"]
    d = nz.numericalize_batch(srcs, tgts, dynamic_dict=dyn)
    d["indices"] = np.asarray(kept, dtype=np.int64) + start
    return d, chunk_stats(d, len(src_lines), drops, nz.n_tgt, dyn)


def _chunks(src_path, tgt_path):
    start = 0
    for s, t in read_parallel_chunks(src_path, tgt_path, CHUNK):
        yield start, s, t
        start += len(s)


def _usable_workers(workers):
    return workers if "fork" in mp.get_all_start_methods() else 1


def numericalize_text(src_path, tgt_path, filt, numericalizer, dynamic_dict, workers=1):
    """Yield (numericalized chunk, stats) for a pair of text files, in order."""
    state = dict(filter=filt, numericalizer=numericalizer, dynamic_dict=dynamic_dict)
    yield from ordered_map(_numericalize_task, _chunks(src_path, tgt_path), workers,
                           lambda: _init_worker(**state))


# ---------------------------------------------------------------------------- passes
def count_words(src_path, tgt_path, filt, shared, cache, workers=1, report_every=0):
    """Pass 1 -> (src Counter, tgt Counter or None when shared); fills `cache` (token_cache.py)."""
    workers = _usable_workers(workers)
    barrier = mp.get_context("fork").Barrier(workers) if workers > 1 else threading.Barrier(1)
    next_report = [report_every]

    def report(n_read):
        if report_every and n_read >= next_report[0]:
            logger.info("counted %d lines of %s", n_read, src_path)
            next_report[0] += report_every

    return count_and_cache(_chunks(src_path, tgt_path), filt, shared, cache, workers, barrier, report)


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


def write_split(split, results, numericalizer, dynamic_dict, shard_size, save_data, report_every=0):
    """Pass 2 for one split: (chunk, stats) `results` -> shards; returns (file names, sizes, stats)."""
    stats = {"read": 0, "kept": 0, "drops": Counter(), "src_tokens": 0, "tgt_tokens": 0,
             "tgt_in_vocab": 0, "tgt_copyable": 0}
    names, sizes, pending, n_pending = [], [], [], 0

    def flush(parts):
        path = shard_name(save_data, split, len(names))
        data = concat_chunks(parts)
        write_shard(path, data)
        names.append(os.path.basename(path))
        sizes.append(len(data["indices"]))
        logger.info("wrote %s (%d examples)", path, sizes[-1])

    next_report = report_every
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
        if report_every and stats["read"] >= next_report:
            logger.info("%s: numericalized %d lines", split, stats["read"])
            next_report += report_every
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
def prepare_output(save_data):
    """Create the folder of the prefix, check it is writable, remove stale outputs of the prefix."""
    if not save_data or save_data.endswith(os.sep):
        raise UserError(f"-save_data must be a file prefix such as data/demo, got {save_data!r}")
    folder = os.path.dirname(os.path.abspath(save_data))
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".onmt_write_probe{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UserError(f"cannot write to the folder of -save_data {save_data}: "
                        f"{e.strerror or e} ({e.filename or folder})") from None
    stale = [meta_path(save_data)]
    pat = re.compile(re.escape(os.path.basename(save_data))
                     + r"\.((train|valid)\.\d+\.pt(\.tmp\d+)?|tokens\.tmp\d+)$")
    stale += [p for p in glob.glob(glob.escape(save_data) + ".*") if pat.match(os.path.basename(p))]
    for p in stale:
        if os.path.exists(p):
            os.remove(p)


# ---------------------------------------------------------------------------- driver
def _pct(a, b):
    return round(100.0 * a / b, 2) if b else 0.0


def preprocess(opt):
    """Run both passes as `opt` (validated preprocess options) says; returns the meta dict."""
    save_data = opt.save_data
    prepare_output(save_data)
    cache = TokenCache(cache_path(save_data))
    try:
        return _preprocess(opt, cache)
    finally:
        cache.remove()


def _preprocess(opt, cache):
    save_data = opt.save_data
    filt = ExampleFilter.from_opt(opt)
    workers = _usable_workers(getattr(opt, "num_threads", 1))
    logger.info("pass 1: counting words of %s / %s", opt.train_src, opt.train_tgt)
    src_c, tgt_c = count_words(opt.train_src, opt.train_tgt, filt, opt.share_vocab, cache, workers,
                               opt.report_every)
    n_types = len(src_c) if opt.share_vocab else (len(src_c), len(tgt_c))
    vocabs, counts = build_vocabs(src_c, tgt_c, opt.src_vocab_size, opt.tgt_vocab_size, opt.share_vocab,
                                  opt.src_words_min_frequency, opt.tgt_words_min_frequency)
    del src_c, tgt_c
    save_vocabs(save_data, vocabs, counts)
    logger.info("vocabulary: %s word types; source %d, target %d entries (shared: %s)",
                n_types, len(vocabs.src), len(vocabs.tgt), opt.share_vocab)

    nz = Numericalizer(vocabs)
    splits = [("train", numericalize_cached(cache, nz, opt.dynamic_dict, workers))]
    if opt.valid_src:
        splits.append(("valid", numericalize_text(opt.valid_src, opt.valid_tgt, filt, nz, opt.dynamic_dict,
                                                  workers)))
    meta = {"share_vocab": bool(opt.share_vocab), "dynamic_dict": bool(opt.dynamic_dict),
            "lower": bool(opt.lower), "src_vocab_size": len(vocabs.src), "tgt_vocab_size": len(vocabs.tgt),
            "src_seq_length_trunc": opt.src_seq_length_trunc, "tgt_seq_length_trunc": opt.tgt_seq_length_trunc,
            "src_seq_length": opt.src_seq_length, "tgt_seq_length": opt.tgt_seq_length,
            "shards": {}, "shard_sizes": {}, "summary": {}}
    for split, results in splits:
        logger.info("pass 2: numericalizing %s", split)
        names, sizes, st = write_split(split, results, nz, opt.dynamic_dict, opt.shard_size, save_data,
                                       opt.report_every)
        if split == "train":
            cache.remove()
        st["tgt_in_vocab_pct"] = _pct(st.pop("tgt_in_vocab"), st["tgt_tokens"])
        copy = st.pop("tgt_copyable")
        st["tgt_copyable_pct"] = _pct(copy, st["tgt_tokens"]) if opt.dynamic_dict else None
        meta["shards"][split], meta["shard_sizes"][split], meta["summary"][split] = names, sizes, st
        log_summary(split, st, vocabs)
    write_json_atomic(meta_path(save_data), meta)
    logger.info("wrote %s", meta_path(save_data))
    return meta


def log_summary(split, st, vocabs):
    drops = ", ".join(f"{r} {n}" for r, n in st["drops"].items())
    copy = "n/a (no -dynamic_dict)" if st["tgt_copyable_pct"] is None else f"{st['tgt_copyable_pct']}%"
    logger.info("%s: %d examples read, %d kept, dropped: %s", split, st["read"], st["kept"], drops)
    logger.info("%s: %d source tokens, %d target tokens; vocabularies %d (src) / %d (tgt); "
                "target tokens inside the target vocabulary %s%%, copyable from the source %s",
                split, st["src_tokens"], st["tgt_tokens"], len(vocabs.src), len(vocabs.tgt),
                st["tgt_in_vocab_pct"], copy)
