"""Pass 1 -> token-id cache -> pass 2 (onmt/inputters/token_cache.py) against plain references."""
import os
import random
from collections import Counter

import pytest
import torch

import onmt.inputters.preprocess as prep
from helpers.shards import example_fields
from onmt.bin.preprocess import main
from onmt.constants import SPECIALS
from onmt.inputters.numericalize import Numericalizer
from onmt.inputters.token_cache import corpus_ids
from onmt.inputters.vocab_builder import load_vocabs, shard_paths


def test_corpus_ids_number_words_by_first_occurrence():
    ids = {}
    assert corpus_ids(["b", "a", "b", "c"], ids).tolist() == [0, 1, 0, 2]
    assert corpus_ids(["c", "d", "a", "d"], ids).tolist() == [2, 3, 1, 3]
    assert list(ids) == ["b", "a", "c", "d"]
    assert corpus_ids([], ids).tolist() == []


def random_corpus(path, n=60, seed=0):
    """Short random pairs: frequent words, rare words (OOV for small vocabularies), repeats,
    target words absent from the source, literal specials, empty sides and too-long sides."""
    rng = random.Random(seed)
    common = [f"c{i}" for i in range(8)]
    rare = [f"r{i}" for i in range(40)]
    src, tgt = [], []
    for i in range(n):
        s = [rng.choice(common if rng.random() < 0.6 else rare) for _ in range(rng.randint(0, 9))]
        if rng.random() < 0.1:
            s.append(rng.choice(SPECIALS))
        t = [rng.choice(s) if s and rng.random() < 0.5 else rng.choice(common + rare)
             for _ in range(rng.randint(0, 5))]
        src.append(" ".join(s))
        tgt.append(" ".join(t))
    src[1], tgt[1] = "c0 r1 c1 r1", "tonly r1 r1"    # a target-only word, a repeated copyable OOV
    os.makedirs(path, exist_ok=True)
    paths = []
    for side, lines in (("src", src), ("tgt", tgt)):
        p = os.path.join(path, f"train.{side}.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        paths.append(p)
    return paths, src, tgt


def naive_counts(src, tgt, shared, src_max=8, tgt_max=4):
    """Word counts of the kept examples (both sides non-empty, within the length limits)."""
    sc, tc = Counter(), Counter()
    for s, t in zip(src, tgt):
        s, t = s.split(), t.split()
        if s and t and len(s) <= src_max and len(t) <= tgt_max:
            sc.update(s)
            (sc if shared else tc).update(t)
    for c in (sc, tc):
        for w in SPECIALS:
            c.pop(w, None)
    return sc, tc


@pytest.mark.parametrize("shared,threads", [(True, 2), (False, 2), (True, 1)])
def test_cached_passes_equal_text_reference(tmp_path, monkeypatch, shared, threads):
    monkeypatch.setattr(prep, "CHUNK", 7)           # many chunks, spread over the workers
    (s_path, t_path), src, tgt = random_corpus(str(tmp_path / "data"))
    save = str(tmp_path / "out" / "d")
    more_args = ["-share_vocab", "-dynamic_dict"] if shared else []
    n_src = 20 if shared else 100            # unshared: room for every word, so a zero count would show
    main(["-train_src", s_path, "-train_tgt", t_path, "-save_data", save, "-src_seq_length", "8",
          "-tgt_seq_length", "4", "-src_vocab_size", str(n_src), "-tgt_vocab_size", "10", "-shard_size", "9",
          "-num_threads", str(threads), *more_args])
    vocabs, meta = load_vocabs(save)
    sc, tc = naive_counts(src, tgt, shared)
    # vocabularies: decreasing count, ties by word, no word that the training side never used
    want_src = sorted(sc.items(), key=lambda wc: (-wc[1], wc[0]))[:n_src - 4]
    assert vocabs.src.itos[4:] == [w for w, _ in want_src]
    if not shared:
        assert vocabs.tgt.itos[4:] == [w for w, _ in sorted(tc.items(), key=lambda wc: (-wc[1], wc[0]))[:6]]
        assert tc["tonly"] > 0 and "tonly" not in vocabs.src.itos        # a target-only word
    # every kept example equals the text path of the Numericalizer
    nz = Numericalizer(vocabs)
    lines = []
    for path in shard_paths(save, meta, "train"):
        d = torch.load(path, weights_only=True)
        for i in range(len(d["indices"])):
            line = int(d["indices"][i])
            ref = nz.numericalize(src[line].split(), tgt[line].split(), dynamic_dict=shared)
            assert example_fields(d, i, dynamic_dict=shared) == ref
            lines.append(line)
    kept = [i for i, (s, t) in enumerate(zip(src, tgt))
            if s.split() and t.split() and len(s.split()) <= 8 and len(t.split()) <= 4]
    assert lines == kept and meta["summary"]["train"]["kept"] == len(kept)
    assert not [f for f in os.listdir(tmp_path / "out") if "tmp" in f]      # the cache is gone


def test_stale_cache_of_a_killed_run_is_removed(tmp_path):
    (s_path, t_path), _, _ = random_corpus(str(tmp_path / "data"), n=10)
    save = str(tmp_path / "d")
    stale = tmp_path / "d.tokens.tmp12345"
    stale.write_bytes(b"\0" * 16)
    other = tmp_path / "dx.tokens.tmp1"                 # another prefix's file is left alone
    other.write_bytes(b"")
    main(["-train_src", s_path, "-train_tgt", t_path, "-save_data", save])
    assert not stale.exists() and other.exists()
