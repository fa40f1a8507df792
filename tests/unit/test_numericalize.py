import random

import numpy as np
import pytest

from helpers.shards import example_fields
from onmt.constants import BOS, EOS, SPECIALS, UNK
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.vocab import Vocab, Vocabs


def reference(src, tgt, vocabs):
    """Naive per-example docs/DESIGN.md §2, written token by token."""
    def sid(w):
        return UNK if w in SPECIALS else vocabs.src.stoi.get(w, UNK)

    def tid(w):
        return UNK if w in SPECIALS else vocabs.tgt.stoi.get(w, UNK)

    v = len(vocabs.tgt)
    oovs = []
    for w in src:
        if w not in SPECIALS and w not in vocabs.tgt.stoi and w not in oovs:
            oovs.append(w)
    src_ex = [v + oovs.index(w) if w in oovs else tid(w) for w in src]
    tgt_ids = [BOS] + [tid(w) for w in tgt] + [EOS]
    tgt_ex = [BOS] + [v + oovs.index(w) if w in oovs else tid(w) for w in tgt] + [EOS]
    return {"src": [sid(w) for w in src], "src_ex": src_ex, "tgt": tgt_ids, "tgt_ex": tgt_ex, "oov": oovs}


def make_vocabs(shared):
    words = [f"w{i}" for i in range(30)]
    src = Vocab(SPECIALS + words[:20])
    if shared:
        return Vocabs(src, src.prefix(4 + 10), True)
    return Vocabs(src, Vocab(SPECIALS + words[5:15] + ["t1", "t2"]), False)


def random_examples(rng, n):
    pool = [f"w{i}" for i in range(30)] + ["t1", "t2", "x1", "x2", "x3", "ünï", "日本"] + SPECIALS
    out = []
    for _ in range(n):
        src = [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        tgt = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
        out.append((src, tgt))
    return out


@pytest.mark.parametrize("shared", [True, False])
def test_matches_naive_reference(shared):
    vocabs = make_vocabs(shared)
    nz = Numericalizer(vocabs)
    rng = random.Random(0)
    exs = random_examples(rng, 300)
    d = nz.numericalize_batch([s for s, _ in exs], [t for _, t in exs])
    for i, (s, t) in enumerate(exs):
        ref = reference(s, t, vocabs)
        assert example_fields(d, i) == ref
        assert nz.numericalize(s, t) == ref


def test_repeated_oovs_and_target_oov_not_in_source():
    vocabs = make_vocabs(True)                       # V_tgt = 14: w0..w9 in the target vocabulary
    nz = Numericalizer(vocabs)
    r = nz.numericalize("x1 w15 x1 w0 <unk> w15".split(), "x1 x2 w15 w0 </s>".split())
    assert r["oov"] == ["x1", "w15"]
    assert r["src"] == [UNK, 19, UNK, 4, UNK, 19]
    assert r["src_ex"] == [14, 15, 14, 4, UNK, 15]
    assert r["tgt_ex"] == [BOS, 14, UNK, 15, 4, UNK, EOS]   # x2 not in the source: <unk>
    assert r["tgt"] == [BOS, UNK, UNK, UNK, 4, UNK, EOS]


def test_without_dynamic_dict_and_dtypes():
    nz = Numericalizer(make_vocabs(True))
    d = nz.numericalize_batch([["w1", "zz"], []], [["w2"], ["w3", "w4"]], dynamic_dict=False)
    assert set(d) == {"src", "src_offsets", "tgt", "tgt_offsets"}
    assert d["src"].dtype == np.int32 and d["src_offsets"].dtype == np.int64
    assert d["src_offsets"].tolist() == [0, 2, 2] and d["tgt_offsets"].tolist() == [0, 3, 7]


def test_empty_batch():
    nz = Numericalizer(make_vocabs(False))
    d = nz.numericalize_batch([], [])
    assert d["src"].size == 0 and d["oov_bytes"].size == 0 and d["oov_offsets"].tolist() == [0]
