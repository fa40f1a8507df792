"""Vectorized collation: rows of flat id tensors + offsets -> a padded, batch-first `Batch`."""
import torch

from onmt.constants import PAD, UNK
from onmt.inputters.batch import Batch
from onmt.inputters.numericalize import oov_lists


def bucket_length(n, buckets, cap=None):
    """The smallest length >= n among `buckets` lengths per octave, m 2^e with buckets <= m <
    2 buckets (every length up to 2 buckets is its own), and `cap` (the data's longest, e.g. a
    truncation length: never padded beyond) when given: at most n / buckets of padding, and
    buckets (log2(L / buckets) + 2) lengths up to L, one more with the cap. n itself with buckets
    0 (-length_buckets off)."""
    if buckets <= 0 or n <= 2 * buckets:
        return n
    if cap is not None and n <= cap:
        return min(bucket_length(n, buckets), cap)
    e = (n - 1).bit_length() - buckets.bit_length()   # 2^e: the step of n's octave
    if ((n - 1) >> e) < buckets:  # n - 1 below the octave's first length: one step finer
        e -= 1
    step = 1 << e
    return -(-n // step) * step


def pad_rows(flat, offsets, idx, min_len=1, buckets=0, cap=None):
    """Rows `idx` of (flat, offsets) as a PAD-padded (B, L) int64 tensor, and their (B,) lengths.

    L = max(longest row, min_len), rounded up to a bucket length (bucket_length, `buckets` per
    octave, at most `cap`; 0: not): an empty row (length 0) is all PAD and never makes L zero.
    """
    starts = offsets[idx]                                        # (B,)
    lengths = offsets[idx + 1] - starts                          # (B,)
    width = bucket_length(max(int(lengths.max()) if len(idx) else 0, min_len), buckets, cap)
    steps = torch.arange(width, dtype=torch.int64)               # (L,)
    mask = steps.unsqueeze(0) < lengths.unsqueeze(1)             # (B, L)
    if flat.numel() == 0:
        return torch.full(mask.shape, PAD, dtype=torch.int64), lengths
    pos = (starts.unsqueeze(1) + steps.unsqueeze(0)) * mask      # (B, L), 0 where padding
    out = flat[pos].long().masked_fill_(~mask, PAD)              # (B, L)
    return out, lengths


def collate(data, idx, tgt_vocab_size, src_to_tgt=None, buckets=0, caps=(None, None)):
    """A Batch of the examples `idx` ((B,) int64 tensor) of `data`, a dict of tensors as in a shard;
    with `buckets` (-length_buckets) its source and target padded to bucket lengths (pad_rows), at
    most `caps` (the data's longest source and target).

    Without `src_ex` in `data` (no dynamic dictionary) src_ex is the source mapped into the target
    vocabulary (`src_to_tgt[src]` for unshared vocabularies, else ids >= tgt_vocab_size -> UNK) and
    there are no OOVs; without `tgt_ex`, tgt_ex = tgt.
    """
    idx = torch.as_tensor(idx, dtype=torch.int64)

    def rows(name, offsets, cap):
        return pad_rows(data[name], data[offsets], idx, 1, buckets, cap)  # (B, L), (B,)
    src, src_len = rows("src", "src_offsets", caps[0])                              # (B, S), (B,)
    if "src_ex" in data:
        src_ex, _ = rows("src_ex", "src_offsets", caps[0])                          # (B, S)
        oovs = oov_lists(data["oov_bytes"], data["oov_byte_offsets"], idx.tolist())
    else:
        if src_to_tgt is not None:
            src_ex = src_to_tgt[src]                                                # (B, S)
        else:
            src_ex = src.masked_fill(src >= tgt_vocab_size, UNK)                    # (B, S)
        src_ex = src_ex.masked_fill(src == PAD, PAD)
        oovs = [[] for _ in range(len(idx))]
    tgt = tgt_ex = None
    if "tgt" in data:
        tgt, _ = rows("tgt", "tgt_offsets", caps[1])                                # (B, T)
        tgt_ex = rows("tgt_ex", "tgt_offsets", caps[1])[0] if "tgt_ex" in data else tgt  # (B, T)
    indices = data["indices"][idx].long() if "indices" in data else idx              # (B,)
    return Batch(src=src, src_lengths=src_len, src_ex=src_ex, oovs=oovs,
                 n_oov=max((len(o) for o in oovs), default=0), indices=indices, tgt=tgt,
                 tgt_ex=tgt_ex)


def numpy_to_tensors(d):
    """A numericalize_batch() dict (numpy arrays) -> tensors, as collate() expects."""
    return {k: torch.from_numpy(v) for k, v in d.items()}
