"""The two passes over the training corpus, joined by a token-id cache on disk.

Pass 1 (`count_and_cache`) reads the text once: it tokenizes and filters each chunk, maps every
token to a *corpus id* (numbered by first occurrence, per process: one Python dict lookup per
token), counts the ids with `np.bincount`, and appends the chunk's id arrays to a temporary cache
file (`P.tokens.tmpPID`, 4 bytes per token, removed when preprocessing ends or fails).
Pass 2 (`numericalize_cached`) streams the cache back: corpus ids -> global ids of the Numericalizer
is one numpy gather per chunk, then `Numericalizer.from_global_ids` builds `src`, `tgt`, `src_ex`,
`tgt_ex` and the OOV lists exactly as it does from text. No token is split or looked up twice, and
memory stays bounded by one chunk per process plus the word lists (never by the corpus).

With N worker processes, each has its own corpus ids; a chunk remembers which process numbered it,
and each process's word list is mapped to global ids once, between the passes.
"""
import os
from collections import Counter
from functools import partial
from itertools import chain, repeat

import numpy as np

from onmt.constants import UNK
from onmt.errors import UserError
from onmt.inputters.numericalize import WordTable, offsets_of
from onmt.inputters.parallel import ordered_map
from onmt.utils.files import write_error

# int32 arrays of a cached chunk, in order
_FIELDS = ("kept", "src_len", "tgt_len", "src", "tgt")


def corpus_ids(flat, ids):
    """(N,) int32 ids of the tokens in `flat`; words new to `ids` (word -> id) are added to it."""
    g = np.fromiter(map(ids.get, flat, repeat(-1)), dtype=np.int32, count=len(flat))
    missing = np.flatnonzero(g < 0)
    if missing.size:
        setdefault = ids.setdefault
        g[missing] = [setdefault(flat[i], len(ids)) for i in missing.tolist()]
    return g


def _add_counts(counts, g, n):
    """counts (grown to n entries) + occurrences of each id in g."""
    c = np.bincount(g, minlength=n)
    if len(counts) < n:
        counts = np.concatenate([counts, np.zeros(n - len(counts), dtype=np.int64)])
    counts += c
    return counts


def chunk_stats(d, n_read, drops, tgt_vocab_size, dynamic_dict):
    """The summary figures of one numericalized chunk (summed over a split by preprocess)."""
    n = len(d["src_offsets"]) - 1
    return {"read": n_read, "kept": n, "drops": drops,
            "src_tokens": int(d["src_offsets"][-1]),
            "tgt_tokens": int(d["tgt_offsets"][-1]) - 2 * n,
            "tgt_in_vocab": int(np.count_nonzero(d["tgt"] != UNK)) - 2 * n,
            "tgt_copyable": (int(np.count_nonzero(d["tgt_ex"] >= tgt_vocab_size)) if dynamic_dict
                             else 0)}


# ---------------------------------------------------------------------------- pass 1
def _cache_task(st, item):
    """Filter a chunk and map it to this process's corpus ids (`st`: this process's state, see
    parallel.ordered_map); None returns this process's words."""
    # one per process (the barrier makes each process take exactly one)
    if item is None:
        st["barrier"].wait()
        return os.getpid(), list(st["ids"]), st["src_counts"], st["tgt_counts"]
    start, src_lines, tgt_lines = item
    srcs, tgts, kept, drops = st["filter"](src_lines, tgt_lines)
    ids = st["ids"]
    g_src = corpus_ids(list(chain.from_iterable(srcs)), ids)          # (Ns,)
    g_tgt = corpus_ids(list(chain.from_iterable(tgts)), ids)          # (Nt,)
    st["src_counts"] = _add_counts(st["src_counts"], g_src, len(ids))
    st["tgt_counts"] = _add_counts(st["tgt_counts"], g_tgt, len(ids))
    n = len(kept)
    arrays = (np.asarray(kept, dtype=np.int32),
              np.fromiter(map(len, srcs), dtype=np.int32, count=n),
              np.fromiter(map(len, tgts), dtype=np.int32, count=n), g_src, g_tgt)
    return os.getpid(), start, len(src_lines), drops, arrays


class TokenCache:
    """The cache file and, in memory, one small record per chunk."""

    def __init__(self, path):
        self.path = path
        self.records = []              # (offset, slot, start, lines read, drops, field sizes)
        self.words = []                # per slot: its words in corpus-id order
        self.remaps = []               # per slot: (n_words,) int64 corpus id -> global id
        self.outside_words = None      # WordTable of the words outside the vocabularies
        try:
            self._f = open(path, "wb")
        except OSError as e:
            raise self._error(e) from None
        self._size = 0

    def _error(self, e):
        return write_error(self.path, e, "token cache")

    def append(self, slot, start, n_read, drops, arrays):
        self.records.append((self._size, slot, start, n_read, drops, tuple(len(a) for a in arrays)))
        try:
            for a in arrays:
                # through the Python file, not ndarray.tofile: tofile loses a small write on a full
                # disk without a word (its C buffer's error at close is ignored)
                self._f.write(np.ascontiguousarray(a, dtype=np.int32).data)
                self._size += 4 * len(a)
        # a full disk: one line; preprocess removes the cache (remove())
        except OSError as e:
            raise self._error(e) from None

    def close(self):
        if not self._f.closed:
            try:
                self._f.close()
            except OSError as e:
                raise self._error(e) from None

    def remove(self):
        try:
            self.close()
        except UserError:
            pass                  # removed anyway
        if os.path.exists(self.path):
            os.remove(self.path)

    def read(self, record):
        """The arrays of one chunk: dict field -> int32 array."""
        offset, _, _, _, _, sizes = record
        out = {}
        with open(self.path, "rb") as f:
            f.seek(offset)
            for name, size in zip(_FIELDS, sizes):
                out[name] = np.fromfile(f, dtype=np.int32, count=size)
                if len(out[name]) != size:
                    raise UserError(f"token cache {self.path} is shorter than written "
                                    "(a full disk?)")
        return out

    def bind(self, numericalizer):
        """Map each process's corpus ids to the global ids of `numericalizer` (after pass 1)."""
        base = len(numericalizer.words)
        outside = {}                   # word outside the vocabularies -> its number
        self.remaps = []
        for words in self.words:
            remap = np.fromiter(map(numericalizer.gdict.get, words, repeat(-1)), dtype=np.int64,
                                count=len(words))
            missing = np.flatnonzero(remap < 0)
            setdefault = outside.setdefault
            remap[missing] = [base + setdefault(words[i], len(outside)) for i in missing.tolist()]
            self.remaps.append(remap)
        self.outside_words = WordTable(list(outside))
        # built once here, shared with the forked workers
        self.outside_words.joined(numericalizer)
        self.words = None              # no longer needed: the remaps and `outside_words` say it all


def _merge_counts(words, counts, total):
    nz = np.flatnonzero(counts)
    total.update(dict(zip([words[i] for i in nz.tolist()], counts[nz].tolist())))


def count_and_cache(chunks, filt, shared, cache, workers=1, barrier=None, on_chunk=None):
    """Pass 1 over `chunks` ((start, src lines, tgt lines) items) into `cache`.

    Returns (src Counter, tgt Counter or None when shared). `barrier` must hold `workers` parties.
    `on_chunk(lines read so far)` is called after each chunk (progress reports).
    """
    slots = {}
    finals = []
    items = chain(chunks, [None] * max(1, workers))
    state = dict(filter=filt, barrier=barrier, ids={}, src_counts=np.zeros(0, dtype=np.int64),
                 tgt_counts=np.zeros(0, dtype=np.int64))
    n_read = 0
    for res in ordered_map(partial(_cache_task, state), items, workers):
        if len(res) == 4:
            finals.append(res)
            continue
        pid, start, read, drops, arrays = res
        cache.append(slots.setdefault(pid, len(slots)), start, read, drops, arrays)
        n_read += read
        if on_chunk is not None:
            on_chunk(n_read)
    cache.close()
    cache.words = [[] for _ in range(len(slots))]
    src_c, tgt_c = Counter(), Counter()
    for pid, words, s_counts, t_counts in finals:
        if pid not in slots:           # a process that got no chunk
            continue
        cache.words[slots[pid]] = words
        if shared:
            _merge_counts(words, _pad(s_counts, len(words)) + _pad(t_counts, len(words)), src_c)
        else:
            _merge_counts(words, _pad(s_counts, len(words)), src_c)
            _merge_counts(words, _pad(t_counts, len(words)), tgt_c)
    return src_c, (None if shared else tgt_c)


def _pad(counts, n):
    return (np.concatenate([counts, np.zeros(n - len(counts), dtype=np.int64)]) if len(counts) < n
            else counts)


# ---------------------------------------------------------------------------- pass 2
def _numericalize_cached_task(st, record):
    cache, nz, dyn = st["cache"], st["numericalizer"], st["dynamic_dict"]
    a = cache.read(record)
    remap = cache.remaps[record[1]]
    src_off = offsets_of(a["src_len"])
    d = nz.from_global_ids(remap[a["src"]], src_off, remap[a["tgt"]], a["tgt_len"].astype(np.int64),
                           cache.outside_words if dyn else None)
    d["indices"] = a["kept"].astype(np.int64) + record[2]
    return d, chunk_stats(d, record[3], record[4], nz.tgt_vocab_size, dyn)


def numericalize_cached(cache, numericalizer, dynamic_dict, workers=1):
    """Pass 2 over the cache: yields (numericalized chunk, stats) in corpus order."""
    cache.bind(numericalizer)
    state = dict(cache=cache, numericalizer=numericalizer, dynamic_dict=dynamic_dict)
    yield from ordered_map(partial(_numericalize_cached_task, state), cache.records, workers)
