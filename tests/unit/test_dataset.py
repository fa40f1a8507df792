import random

import numpy as np
import pytest
import torch

from onmt.constants import PAD, SPECIALS, UNK
from onmt.inputters.collate import collate, numpy_to_tensors
from onmt.inputters.dataset import ShardedDataset, src_to_tgt_map, text_batches
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.shards import write_shard
from onmt.inputters.vocab import Vocab, Vocabs

WORDS = [f"w{i}" for i in range(40)]


def vocabs(shared=True):
    src = Vocab(SPECIALS + WORDS[:30])
    if shared:
        return Vocabs(src, src.prefix(20), True)
    return Vocabs(src, Vocab(SPECIALS + WORDS[10:25]), False)


def examples(n, seed=0):
    rng = random.Random(seed)
    return [([rng.choice(WORDS) for _ in range(rng.randint(1, 15))],
             [rng.choice(WORDS) for _ in range(rng.randint(1, 8))]) for _ in range(n)]


def make_shards(tmp_path, sizes=(37, 50, 13), dynamic=True, shared=True):
    nz, paths, start = Numericalizer(vocabs(shared)), [], 0
    exs = examples(sum(sizes))
    for k, n in enumerate(sizes):
        part = exs[start:start + n]
        d = nz.numericalize_batch([s for s, _ in part], [t for _, t in part], dynamic_dict=dynamic)
        d["indices"] = np.arange(start, start + n)
        paths.append(str(tmp_path / f"d.train.{k}.pt"))
        write_shard(paths[-1], d)
        start += n
    return paths, exs, nz


def dataset(paths, **kw):
    kw.setdefault("tgt_vocab_size", 20)
    kw.setdefault("batch_size", 8)
    return ShardedDataset(paths, pool_factor=kw.pop("pool_factor", 3), **kw)


def ids(batches):
    return [b.indices.tolist() for b in batches]


@pytest.mark.parametrize("batch_type,batch_size", [("sents", 8), ("tokens", 60)])
def test_every_example_once_and_deterministic(tmp_path, batch_type, batch_size):
    paths, exs, _ = make_shards(tmp_path)
    ds = dataset(paths, batch_type=batch_type, batch_size=batch_size, seed=3)
    e0 = ids(ds.iter_epoch(0))
    assert sorted(i for b in e0 for i in b) == list(range(len(exs)))
    assert e0 == ids(dataset(paths, batch_type=batch_type, batch_size=batch_size, seed=3).iter_epoch(0))
    assert e0 != ids(ds.iter_epoch(1))
    assert e0 != ids(dataset(paths, batch_type=batch_type, batch_size=batch_size, seed=4).iter_epoch(0))
    assert ds.num_batches(0) == len(e0)
    if batch_type == "sents":
        assert max(len(b) for b in e0) == 8
    else:
        for b in ds.iter_epoch(0):
            cost = b.batch_size * max(b.src.size(1), b.tgt.size(1))
            assert cost <= batch_size or b.batch_size == 1


def test_start_skips_exactly(tmp_path):
    paths, _, _ = make_shards(tmp_path)
    ds = dataset(paths, seed=1)
    full = ids(ds.iter_epoch(2))
    for start in (0, 1, 5, 7, len(full) - 1, len(full)):
        assert ids(ds.iter_epoch(2, start=start)) == full[start:]


def test_ranks_partition_the_epoch(tmp_path):
    paths, _, _ = make_shards(tmp_path)
    full = ids(dataset(paths, seed=5).iter_epoch(0))
    assert len(full) % 3 == 2  # 14 batches: an incomplete last group of 2
    parts = [ids(dataset(paths, seed=5, rank=r, world_size=3, equal_shares=False).iter_epoch(0)) for r in range(3)]
    assert [full[r::3] for r in range(3)] == parts
    late = dataset(paths, seed=5, rank=1, world_size=3, equal_shares=False).iter_epoch(0, start=2)
    assert ids(late) == full[1::3][2:]


def test_training_ranks_get_equal_shares(tmp_path):
    """Training (equal_shares): every rank the same number of batches, the incomplete last group of
    world_size batches left out, so ranks stepping together never wait for a missing batch."""
    paths, _, _ = make_shards(tmp_path)
    full = ids(dataset(paths, seed=5).iter_epoch(1))
    n = len(full) // 3 * 3
    parts = [ids(dataset(paths, seed=5, rank=r, world_size=3).iter_epoch(1)) for r in range(3)]
    assert parts == [full[r:n:3] for r in range(3)] and len(parts[0]) == 4
    assert [dataset(paths, seed=5, rank=r, world_size=3).num_batches(1) for r in range(3)] == [4, 4, 4]
    for start in (1, 3, 4):
        assert ids(dataset(paths, seed=5, rank=0, world_size=3).iter_epoch(1, start=start)) == parts[0][start:]
    # one process: nothing left out
    assert dataset(paths, seed=5).num_batches(1) == len(full) == 14


def naive_pad(rows):
    width = max(1, max(len(r) for r in rows))
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


@pytest.mark.parametrize("dynamic", [True, False])
def test_collation_matches_naive_padding(tmp_path, dynamic):
    paths, exs, nz = make_shards(tmp_path, dynamic=dynamic)
    for b in dataset(paths, seed=2).iter_epoch(0):
        refs = [nz.numericalize(*exs[i]) for i in b.indices.tolist()]
        assert torch.equal(b.src, naive_pad([r["src"] for r in refs]))
        assert torch.equal(b.tgt, naive_pad([r["tgt"] for r in refs]))
        assert b.src_lengths.tolist() == [len(r["src"]) for r in refs]
        if dynamic:
            assert torch.equal(b.src_ex, naive_pad([r["src_ex"] for r in refs]))
            assert torch.equal(b.tgt_ex, naive_pad([r["tgt_ex"] for r in refs]))
            assert b.oovs == [r["oov"] for r in refs] and b.n_oov == max(len(r["oov"]) for r in refs)
        else:
            clamped = [[t if t < 20 else UNK for t in r["src"]] for r in refs]
            assert torch.equal(b.src_ex, naive_pad(clamped)) and torch.equal(b.tgt_ex, b.tgt)
            assert b.n_oov == 0 and b.oovs == [[] for _ in refs]


def test_unshared_without_dynamic_dict_maps_src_to_tgt_ids(tmp_path):
    v = vocabs(shared=False)
    paths, exs, nz = make_shards(tmp_path, dynamic=False, shared=False)
    ds = dataset(paths, tgt_vocab_size=len(v.tgt), src_to_tgt=src_to_tgt_map(v))
    b = next(ds.iter_epoch(0))
    for row, i in zip(b.src_ex.tolist(), b.indices.tolist()):
        assert row[:len(exs[i][0])] == [v.tgt.stoi.get(w, UNK) for w in exs[i][0]]


def test_text_batches_order_empty_sources_and_no_targets():
    v = vocabs()
    src = ["w1 w2 zz", "", "w25 w25 qq", "   ", "w3"]
    batches = list(text_batches(src, None, v, 2))
    assert [b.indices.tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    b0, b1 = batches[0], batches[1]
    assert b0.tgt is None and b0.tgt_ex is None
    assert b0.src_lengths.tolist() == [3, 0] and b0.src[1].tolist() == [PAD, PAD, PAD]
    assert b0.oovs == [["zz"], []] and b0.src_ex[0].tolist() == [5, 6, 20]
    assert b1.oovs == [["w25", "qq"], []] and b1.src_ex[0].tolist() == [20, 20, 21]
    assert b1.src.shape == (2, 3) and b1.src_lengths.tolist() == [3, 0]
    with_tgt = next(text_batches(["w1 zz"], ["zz w1"], v, 4))
    assert with_tgt.tgt_ex[0].tolist() == [2, 20, 5, 3]
    one = next(text_batches([""], None, v, 4))
    assert one.src.shape == (1, 1) and one.src_lengths.tolist() == [0]


def test_collate_direct_from_numericalizer():
    nz = Numericalizer(vocabs())
    d = numpy_to_tensors(nz.numericalize_batch([["w1"], ["w2", "w3", "w4"]], [["w1"], []]))
    b = collate(d, torch.tensor([1, 0]), 20)
    assert b.src.tolist() == [[6, 7, 8], [5, PAD, PAD]] and b.tgt.tolist() == [[2, 3, PAD], [2, 5, 3]]


def test_longest_reads_the_offsets_of_every_shard(tmp_path):
    paths, exs, _ = make_shards(tmp_path)
    src, tgt, (path, index), n = dataset(paths).longest()
    i = max(range(len(exs)), key=lambda k: (len(exs[k][0]), -k))   # the first of the longest sources
    shard = 0 if i < 37 else 1 if i < 87 else 2
    assert (src, n, path, index) == (len(exs[i][0]), 100, paths[shard], i - (0, 37, 87)[shard] + 1)
    assert tgt == max(len(t) for _, t in exs) + 2      # <s> and </s>
    assert dataset([]).longest() == (0, 0, None, 0)
