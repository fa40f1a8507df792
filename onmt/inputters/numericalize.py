"""Token lists -> ids: `src`, `src_ex`, `tgt`, `tgt_ex` and the per-example OOV lists
(docs/DESIGN.md §2).

Shared by preprocess (the hot path) and the translator, so both see exactly the same ids.

Special-token strings found in the text: the literal `<unk>` means the unknown word (id UNK); the
literals `<s>`, `</s>` and `<blank>` are also read as UNK (text cannot inject sentence boundaries or
padding). None of the four is ever counted into a vocabulary, and none is an OOV word: they are
"in" the target vocabulary as UNK, so `src_ex`/`tgt_ex` hold UNK for them too.

Implementation: every token is mapped once (one C-level `map(dict.get, ...)` over a whole chunk) to
a "global" id: the source vocabulary's ids first, then target-only words (unshared vocabularies),
then words unknown to both, numbered per chunk. Everything else (source ids, target ids, the OOV
lists in order of first occurrence, extended ids, the copy alignment of the target) is numpy on id
arrays.
"""
from itertools import chain, repeat

import numpy as np

from onmt.constants import BOS, EOS, N_SPECIALS, SPECIALS, UNK


def offsets_of(lengths):
    """(n+1,) int64 offsets of consecutive rows with these lengths."""
    off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


class WordTable:
    """Words outside the vocabularies, numbered from 0, with their UTF-8 bytes (for OOV lists)."""

    def __init__(self, words):
        self.words = words
        self.bytes = [w.encode("utf-8") + b"\n" for w in words]
        self.nbytes = np.fromiter(map(len, self.bytes), dtype=np.int64, count=len(words))
        self._joined = None

    def joined(self, numericalizer):
        """(bytes, (n,) lengths) indexed by global id: the vocabularies' words, then these
        (built once)."""
        if self._joined is None or self._joined[0] is not numericalizer:
            self._joined = (numericalizer, numericalizer.word_bytes + self.bytes,
                            np.concatenate([numericalizer.word_nbytes, self.nbytes]))
        return self._joined[1:]


class Numericalizer:
    """Numericalize examples against fixed `Vocabs` (see the module docstring)."""

    def __init__(self, vocabs):
        self.src_vocab_size, self.tgt_vocab_size = len(vocabs.src), len(vocabs.tgt)
        words = list(vocabs.src.itos)
        if not vocabs.shared:
            src_stoi = vocabs.src.stoi
            words += [w for w in vocabs.tgt.itos[N_SPECIALS:] if w not in src_stoi]
        self.words = words                                   # global id -> word
        self.gdict = {w: i for i, w in enumerate(words)}
        for w in SPECIALS:                                   # literal specials read as <unk>
            self.gdict[w] = UNK
        if vocabs.shared:
            g2tgt = np.arange(len(words), dtype=np.int64)
            g2tgt[self.tgt_vocab_size:] = UNK
        else:
            tstoi = vocabs.tgt.stoi
            g2tgt = np.fromiter((tstoi.get(w, UNK) for w in words), dtype=np.int64,
                                count=len(words))
        self.g2tgt = np.append(g2tgt, UNK)                   # last entry: any word unknown to both
        self.word_bytes = [w.encode("utf-8") + b"\n" for w in words]     # OOV storage, see below
        self.word_nbytes = np.fromiter(map(len, self.word_bytes), dtype=np.int64, count=len(words))

    # ------------------------------------------------------------------ lookups
    def _global_ids(self, flat, local):
        """(N,) int64 global ids of the tokens in `flat`; unknown words get ids from `local`."""
        g = np.fromiter(map(self.gdict.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
        missing = np.flatnonzero(g < 0)
        if missing.size:
            base = len(self.words)
            setdefault = local.setdefault
            g[missing] = [setdefault(flat[i], base + len(local)) for i in missing.tolist()]
        return g

    def _tgt_ids(self, g):
        return self.g2tgt[np.minimum(g, len(self.words))]

    # ------------------------------------------------------------------ API
    def numericalize_batch(self, src_tokens, tgt_tokens=None, dynamic_dict=True):
        """Numericalize a list of examples at once.

        src_tokens: list of token lists; tgt_tokens: list of token lists (same length) or None.
        Returns a dict of flat numpy arrays with (n+1,) int64 offsets:
          src, src_offsets                   int32 source-vocabulary ids
          tgt, tgt_offsets                   int32 target ids, `<s> ... </s>`        (with targets)
          src_ex                             extended ids                            (dynamic_dict)
          oov_offsets                        OOV words per example:
                                             oov_offsets[i+1] - oov_offsets[i]
          oov_bytes, oov_byte_offsets        the OOV words, UTF-8, each ended by "\\n" (uint8 array)
          tgt_ex                             copy targets                            (both)
        OOV words are stored as bytes, not as Python strings: millions of small str objects would
        dominate the memory and the save time of a shard. `oov_lists` decodes them.
        """
        n = len(src_tokens)
        src_off = offsets_of(np.fromiter(map(len, src_tokens), dtype=np.int64, count=n))
        local = {}
        g_src = self._global_ids(list(chain.from_iterable(src_tokens)), local)   # (Ns,)
        g_tgt = t_len = None
        if tgt_tokens is not None:
            if len(tgt_tokens) != n:
                raise ValueError(f"{n} sources but {len(tgt_tokens)} targets")
            t_len = np.fromiter(map(len, tgt_tokens), dtype=np.int64, count=n)
            g_tgt = self._global_ids(list(chain.from_iterable(tgt_tokens)), local)   # (Nt,)
        outside_words = WordTable(list(local)) if dynamic_dict else None
        return self.from_global_ids(g_src, src_off, g_tgt, t_len, outside_words)

    def from_global_ids(self, g_src, src_off, g_tgt=None, t_len=None, outside_words=None):
        """`numericalize_batch` on global ids: words of the vocabularies have their global id, any
        other word `len(self.words) + k` where `outside_words.words[k]` is the word (a `WordTable`).

        g_src: (Ns,) int64 with (n+1,) offsets `src_off`; g_tgt: (Nt,) int64 with (n,) lengths
        `t_len` (or None). Without `outside_words` there is no dynamic dictionary
        (no src_ex, tgt_ex, OOV lists).
        """
        n = len(src_off) - 1
        out = {"src": np.where(g_src < self.src_vocab_size, g_src, UNK).astype(np.int32),
               "src_offsets": src_off}
        if g_tgt is not None:
            t_ids = self._tgt_ids(g_tgt)
            out["tgt"], out["tgt_offsets"], body = _add_bos_eos(t_ids, t_len)
        if outside_words is None:
            return out

        n_glob = len(self.words) + len(outside_words.words)
        # (Ns,) target ids of source words
        s_tid = self._tgt_ids(g_src)
        oov_pos = np.flatnonzero((s_tid == UNK) & (g_src != UNK))  # source tokens outside V_tgt
        # (Ns,) example of each token
        ex = np.repeat(np.arange(n, dtype=np.int64), np.diff(src_off))
        key = ex[oov_pos] * n_glob + g_src[oov_pos]                 # one key per (example, word)
        ukey, first, inv = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")                   # uniques by first occurrence
        u_ex = ukey[order] // n_glob                                # non-decreasing example ids
        oov_off = offsets_of(np.bincount(u_ex, minlength=n))
        j = np.empty(len(ukey), dtype=np.int64)
        # OOV number within its example
        j[order] = np.arange(len(ukey), dtype=np.int64) - oov_off[u_ex]
        src_ex = s_tid.copy()
        src_ex[oov_pos] = self.tgt_vocab_size + j[inv.reshape(-1)]
        out["src_ex"] = src_ex.astype(np.int32)
        gids = ukey[order] % n_glob                                # OOV words, in output order
        blob, nbytes = self._word_bytes(gids, outside_words)
        out["oov_offsets"] = oov_off
        out["oov_bytes"] = np.frombuffer(blob, dtype=np.uint8).copy()
        out["oov_byte_offsets"] = offsets_of(
            np.bincount(u_ex, weights=nbytes, minlength=n).astype(np.int64))
        if g_tgt is not None:
            t_ex = t_ids.copy()
            miss = np.flatnonzero((t_ids == UNK) & (g_tgt != UNK))
            if miss.size and ukey.size:
                t_exn = np.repeat(np.arange(n, dtype=np.int64), t_len)[miss]
                tkey = t_exn * n_glob + g_tgt[miss]
                at = np.minimum(np.searchsorted(ukey, tkey), len(ukey) - 1)
                found = ukey[at] == tkey
                t_ex[miss[found]] = self.tgt_vocab_size + j[at[found]]
            tgt_ex = np.empty_like(out["tgt"])
            tgt_ex[:] = out["tgt"]
            tgt_ex[body] = t_ex
            out["tgt_ex"] = tgt_ex
        return out

    def _word_bytes(self, gids, outside_words):
        """(UTF-8 bytes of the words with global ids `gids`, each ended by "\\n"; (k,) their
        lengths)."""
        table, nbytes = outside_words.joined(self)
        return b"".join(map(table.__getitem__, gids.tolist())), nbytes[gids]

    def numericalize(self, src_tokens, tgt_tokens=None, dynamic_dict=True):
        """One example; same keys as `numericalize_batch` but plain lists (no offsets)."""
        d = self.numericalize_batch([src_tokens], None if tgt_tokens is None else [tgt_tokens],
                                    dynamic_dict)
        out = {k: v.tolist() for k, v in d.items() if k in ("src", "src_ex", "tgt", "tgt_ex")}
        if dynamic_dict:
            out["oov"] = oov_lists(d["oov_bytes"], d["oov_byte_offsets"], [0])[0]
        return out


def oov_lists(oov_bytes, byte_offsets, rows):
    """The OOV word lists of examples `rows`, decoded from (oov_bytes, oov_byte_offsets).

    Works on numpy arrays and on (memory-mapped) tensors; one bytes slice per example.
    """
    if hasattr(oov_bytes, "numpy"):
        oov_bytes, byte_offsets = oov_bytes.numpy(), byte_offsets.numpy()
    out = []
    for i in rows:
        raw = oov_bytes[byte_offsets[i]:byte_offsets[i + 1]].tobytes()
        out.append(raw.decode("utf-8").split("\n")[:-1] if raw else [])
    return out


def _add_bos_eos(body_ids, lengths):
    """Insert <s> / </s> around each row: (flat int32 ids, (n+1,) offsets, body positions)."""
    n = len(lengths)
    off = offsets_of(lengths + 2)
    out = np.empty(int(off[-1]), dtype=np.int32)               # (Nt + 2n,)
    out[off[:-1]] = BOS
    out[off[1:] - 1] = EOS
    body = (np.arange(len(body_ids), dtype=np.int64)
            + np.repeat(2 * np.arange(n, dtype=np.int64) + 1, lengths))
    out[body] = body_ids
    return out, off, body
