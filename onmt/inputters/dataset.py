"""Batches from shards (training / validation) and from text (translation).

ShardedDataset.iter_epoch(epoch, start) is deterministic given (seed, epoch):
  1. shard order: a permutation drawn from (seed, epoch) (file order when shuffle=False);
  2. in each shard, one shard at a time: examples permuted by a generator seeded with
     (seed, epoch, shard number) (kept in order when shuffle=False);
  3. pools of about `pool_factor` batches: sorted by (source length, target length), cut into
     batches, and the pool's batches shuffled (length bucketing with random batch order);
  4. the epoch's batch sequence is dealt round-robin: batch k goes to rank k % world_size, in groups
     of world_size consecutive batches; with equal_shares (training) an incomplete last group is
     left out, so every rank gets the same number of batches (ranks step together and never wait for
     a batch that does not come); without it (validation) the ranks' shares partition the epoch.
     The batch sequence does not depend on world_size, so one update of R ranks reads the batches
     that one process with -accum_count R reads in one update.
`start` counts THIS rank's batches: iter_epoch(e, start=k) yields exactly what iter_epoch(e) yields
after its first k batches, and skipped batches are never collated (shards wholly skipped are only
read for their offsets, memory-mapped).
With batch_type "tokens", a batch of n examples costs n * max(src_len, tgt_len) padded tokens
(tgt_len counts <s> and </s>), kept <= batch_size unless a single example is larger by itself.
"""
import numpy as np
import torch

from onmt.inputters.collate import collate, numpy_to_tensors
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.shards import load_shard
from onmt.inputters.vocab_builder import load_vocabs, shard_paths


class ShardedDataset:
    def __init__(self, shard_paths, batch_size, batch_type="sents", pool_factor=100, shuffle=True,
                 seed=0, rank=0, world_size=1, tgt_vocab_size=None, src_to_tgt=None, run_id=None,
                 equal_shares=True, length_buckets=0):
        if batch_type not in ("sents", "tokens"):
            raise ValueError(f"batch_type must be sents or tokens, got {batch_type!r}")
        if batch_size <= 0 or pool_factor <= 0 or not 0 <= rank < world_size:
            raise ValueError("need batch_size > 0, pool_factor > 0 and 0 <= rank < world_size")
        if tgt_vocab_size is None:
            raise ValueError("tgt_vocab_size (V_tgt) is required")
        self.paths = list(shard_paths)
        self.batch_size, self.batch_type, self.pool_factor = batch_size, batch_type, pool_factor
        self.shuffle, self.seed, self.rank, self.world_size = shuffle, seed, rank, world_size
        self.tgt_vocab_size, self.src_to_tgt = tgt_vocab_size, src_to_tgt
        self.run_id = run_id      # meta.json's: every shard must come from that preprocessing run
        # leave out the epoch's incomplete last group of world_size batches
        self.equal_shares = equal_shares
        # -length_buckets: each batch's source and target padded to one of K lengths per octave,
        # never beyond the data's longest (`caps`, read from the offsets on first use)
        self.length_buckets, self._caps = length_buckets, None

    @classmethod
    def from_data(cls, save_data, split, batch_size, **kwargs):
        """The dataset of `split` ("train" / "valid") preprocessed with -save_data `save_data`."""
        vocabs, meta = load_vocabs(save_data)
        kwargs.setdefault("tgt_vocab_size", len(vocabs.tgt))
        kwargs.setdefault("src_to_tgt", src_to_tgt_map(vocabs))
        kwargs.setdefault("run_id", meta.get("run_id"))
        return cls(shard_paths(save_data, meta, split), batch_size, **kwargs)

    # ------------------------------------------------------------------ planning
    def _rng(self, *key):
        return np.random.Generator(np.random.PCG64([self.seed, *key]))

    def _shard_order(self, epoch):
        n = len(self.paths)
        return self._rng(epoch).permutation(n).tolist() if self.shuffle else list(range(n))

    def _plan(self, shard, epoch, shard_no):
        """The batches of one shard this epoch: a list of int64 index arrays."""
        so, to = (shard["src_offsets"].numpy(),
                  shard["tgt_offsets"].numpy() if "tgt_offsets" in shard else None)
        src_len = np.diff(so)                                               # (N,)
        tgt_len = np.diff(to) if to is not None else np.zeros_like(src_len)
        n = len(src_len)
        rng = self._rng(epoch, shard_no)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        size = np.maximum(src_len, tgt_len)[order]                           # (N,) cost per example
        if self.batch_type == "sents":
            cuts = np.arange(0, n, self.batch_size * self.pool_factor)
        else:  # pools of about pool_factor * batch_size tokens
            csum = np.cumsum(size)
            marks = np.arange(0, int(csum[-1]) if n else 0, self.batch_size * self.pool_factor)
            cuts = np.unique(np.searchsorted(csum, marks, side="right"))
            cuts = cuts[cuts < n] if n else cuts
            if n and (not len(cuts) or cuts[0] != 0):
                cuts = np.concatenate([[0], cuts])
        bounds = np.append(cuts, n)
        batches = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            pool = order[a:b]
            # by src, then tgt length
            pool = pool[np.lexsort((tgt_len[pool], src_len[pool]))]
            pool_batches = self._pool_batches(pool, np.maximum(src_len, tgt_len)[pool])
            if self.shuffle:
                pool_batches = [pool_batches[i] for i in rng.permutation(len(pool_batches))]
            batches.extend(pool_batches)
        return batches

    def _pool_batches(self, pool, size):
        """A length-sorted pool of examples cut into consecutive batches of -batch_size sentences,
        or of at most -batch_size tokens counting each example as long as the batch's longest
        (`size`: (N,) lengths)."""
        if self.batch_type == "sents":
            return [pool[i:i + self.batch_size] for i in range(0, len(pool), self.batch_size)]
        out, begin, longest = [], 0, 0
        for i, s in enumerate(size.tolist()):          # one pass over lengths, no collation
            longest_new = max(longest, s)
            if i > begin and (i - begin + 1) * longest_new > self.batch_size:
                out.append(pool[begin:i])
                begin, longest_new = i, s
            longest = longest_new
        if begin < len(pool):
            out.append(pool[begin:])
        return out

    def num_batches(self, epoch=0):
        """Batches this rank gets in `epoch` (reads only the offsets of each shard)."""
        total = sum(len(self._plan(load_shard(self.paths[s], run_id=self.run_id), epoch, s))
                    for s in self._shard_order(epoch))
        if self.equal_shares:
            return total // self.world_size
        return len(range(self.rank, total, self.world_size))

    def longest(self):
        """(longest source, longest target, (shard path, 1-based example index) of the longest
        source, number of examples) over the shards; reads only the offsets (memory-mapped).
        (0, 0, None, 0) when empty."""
        src_max, tgt_max, where, examples = 0, 0, None, 0
        for path in self.paths:
            shard = load_shard(path, run_id=self.run_id)
            src_len = np.diff(shard["src_offsets"].numpy())                  # (N,)
            examples += len(src_len)
            if len(src_len) and int(src_len.max()) > src_max:
                src_max, where = int(src_len.max()), (path, int(src_len.argmax()) + 1)
            if "tgt_offsets" in shard and len(src_len):
                tgt_max = max(tgt_max, int(np.diff(shard["tgt_offsets"].numpy()).max()))
            del shard
        return src_max, tgt_max, where, examples

    def caps(self):
        """(longest source, longest target) over the shards with -length_buckets (the bucket
        lengths' caps: a truncation length is a shape of its own), else (None, None)."""
        if self.length_buckets and self._caps is None:
            self._caps = self.longest()[:2]
        return self._caps or (None, None)

    # ------------------------------------------------------------------ iteration
    def iter_epoch(self, epoch, start=0):
        """Yield this rank's Batch objects of `epoch`, skipping its first `start` batches."""
        # global batch counter of the epoch (all ranks); this rank's batch is number k // world_size
        k = 0
        held = None    # with equal_shares: this rank's batch, yielded once its group is complete
        for s in self._shard_order(epoch):
            shard = load_shard(self.paths[s], run_id=self.run_id)
            plan = self._plan(shard, epoch, s)
            for idx in plan:
                group, member = divmod(k, self.world_size)
                if member == self.rank and group >= start:
                    held = collate(shard, torch.from_numpy(np.ascontiguousarray(idx)),
                                   self.tgt_vocab_size, self.src_to_tgt, self.length_buckets,
                                   self.caps())
                if held is not None and (member == self.world_size - 1 or not self.equal_shares):
                    yield held
                    held = None
                k += 1
            del shard

    def __iter__(self):
        return self.iter_epoch(0)


def src_to_tgt_map(vocabs):
    """(V_src,) int64 map from source ids to target ids for unshared vocabularies; None if
    shared."""
    if vocabs.shared:
        return None
    stoi = vocabs.tgt.stoi
    return torch.tensor([stoi.get(w, 0) for w in vocabs.src.itos], dtype=torch.int64)


def text_batches(src_lines, tgt_lines, vocabs, batch_size, lower=False, src_trunc=0, tgt_trunc=0):
    """Batches of raw text lines for the translator, in input order, always with the dynamic
    dictionary.

    Batch.indices are the 0-based line numbers. Every input line gives one row, including an empty
    (or whitespace-only) source line: its row has src_lengths == 0 and is all PAD (S >= 1). Models
    cannot encode an empty source, so the translator must leave such rows out (e.g. write an empty
    prediction for them). With tgt_lines=None, tgt and tgt_ex are None.
    """
    nz = Numericalizer(vocabs)
    src_lines = list(src_lines) if not isinstance(src_lines, list) else src_lines
    if tgt_lines is not None:
        tgt_lines = list(tgt_lines) if not isinstance(tgt_lines, list) else tgt_lines
        if len(tgt_lines) != len(src_lines):
            raise ValueError(f"{len(src_lines)} source lines but {len(tgt_lines)} target lines")

    def tokens(lines, trunc):
        out = [(ln.lower() if lower else ln).split() for ln in lines]
        return [t[:trunc] for t in out] if trunc else out

    for a in range(0, len(src_lines), batch_size):
        srcs = tokens(src_lines[a:a + batch_size], src_trunc)
        tgts = tokens(tgt_lines[a:a + batch_size], tgt_trunc) if tgt_lines is not None else None
        d = numpy_to_tensors(nz.numericalize_batch(srcs, tgts, dynamic_dict=True))
        d["indices"] = torch.arange(a, a + len(srcs), dtype=torch.int64)          # (B,)
        yield collate(d, torch.arange(len(srcs), dtype=torch.int64), nz.tgt_vocab_size)
