"""Beam-search translation speed of See et al.'s pointer-generator with coverage (or of the reinforced
model), by batch size.

    python -m bench.translate_bench                       # emb 128, rnn 256 (brnn), V_tgt 50k, beam 5,
                                                          # sources of 100..400 tokens, max_length 40
    python -m bench.translate_bench -tgt_vocab 5000 -n_sents 32 -n_sents_b1 4 -max_length 10   # quick
    python -m bench.translate_bench -model reinforced     # config/gigaword_reinforced.yaml's sizes (emb 100,
        # rnn 400), V_src 50k, V_tgt 30k, Gigaword-long sources (20..45 tokens), batch 64, 1 thread,
        # every output exactly 10 tokens (-min_length = -max_length)

The model is untrained (seeded): it may never emit </s>, so every hypothesis decodes to max_length;
that is the same work at every batch size, which is what this measures. Sentences are random word
lines translated through the Translator (text -> batches -> beam search -> words), as translate.py
does. Prints sentences/s at each batch size and the ratio of the largest batch size to batch 1.
"""
import argparse
import random
import time

import torch

from bench.lib.common import model_opt, peak_rss_mib, synthetic_vocabs
from onmt.model_builder import build_model
from onmt.translate.translator import SearchSettings, Translator
from onmt.utils.memory import reuse_freed_memory

# per model: the defaults of the options left unset
PRESETS = {
    "copy": dict(batch_sizes="1,16,64", n_sents=128, src_min=100, src_max=400, tgt_vocab=50000, word_vec_size=128,
                 rnn_size=256, min_length=0, max_length=40, threads=0),
    "reinforced": dict(batch_sizes="64", n_sents=256, src_min=20, src_max=45, tgt_vocab=30000, word_vec_size=100,
                       rnn_size=400, min_length=10, max_length=10, threads=1),
}


def random_lines(n, src_min, src_max, src_vocab, seed=0):
    """n lines of w<i> words (ids drawn uniformly over the source vocabulary), lengths in [src_min, src_max]."""
    rng = random.Random(seed)
    n_words = src_vocab - 4
    return [" ".join(f"w{rng.randrange(n_words)}" for _ in range(rng.randint(src_min, src_max)))
            for _ in range(n)]


def sentences_per_second(translator, lines, repeats=1):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        out = translator.translate(lines)
        best = min(best, time.perf_counter() - t)
    assert len(out) == len(lines)
    return len(lines) / best, best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-model", choices=list(PRESETS), default="copy",
                   help="copy: See et al.'s pointer-generator with coverage; reinforced: Paulus et al.'s model "
                        "(each sets the defaults of the options below)")
    p.add_argument("-batch_sizes", help="comma-separated batch sizes (the first is the base)")
    p.add_argument("-n_sents", type=int, help="sentences translated at batch sizes > 1")
    p.add_argument("-n_sents_b1", type=int, default=16, help="sentences translated at batch size 1")
    p.add_argument("-src_min", type=int)
    p.add_argument("-src_max", type=int)
    p.add_argument("-src_vocab", type=int, default=50000)
    p.add_argument("-tgt_vocab", type=int)
    p.add_argument("-word_vec_size", type=int)
    p.add_argument("-rnn_size", type=int)
    p.add_argument("-beam_size", type=int, default=5)
    p.add_argument("-min_length", type=int)
    p.add_argument("-max_length", type=int)
    p.add_argument("-block_ngram_repeat", type=int, default=0)
    p.add_argument("-repeats", type=int, default=1, help="best of this many timings per batch size")
    p.add_argument("-threads", type=int, help="torch threads (0: default)")
    p.add_argument("-gpu", type=int, default=-1)
    a = p.parse_args(argv)
    for name, value in PRESETS[a.model].items():
        if getattr(a, name) is None:
            setattr(a, name, value)
    reuse_freed_memory()  # as translate.py does
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(f"cuda:{a.gpu}" if a.gpu >= 0 else "cpu")
    torch.manual_seed(0)
    family = (["-copy_attn", "-coverage_attn", "-global_attention", "mlp"] if a.model == "copy"
              else ["-reinforced"])
    opt = model_opt(["-word_vec_size", str(a.word_vec_size), "-rnn_size", str(a.rnn_size), "-brnn", "-layers", "1",
                     "-dropout", "0"] + family)
    vocabs = synthetic_vocabs(a.src_vocab, a.tgt_vocab)
    model = build_model(opt, vocabs).to(device).eval()
    sizes = [int(s) for s in a.batch_sizes.split(",")]
    lines = random_lines(max(a.n_sents, a.n_sents_b1), a.src_min, a.src_max, a.src_vocab)

    print(f"config: {a.model}, emb {a.word_vec_size}, rnn {a.rnn_size} (brnn), V_src {a.src_vocab}, "
          f"V_tgt {a.tgt_vocab}, src {a.src_min}..{a.src_max} tokens, beam {a.beam_size}, "
          f"length {a.min_length}..{a.max_length}, device {device}, threads {torch.get_num_threads()}")
    warm = Translator(model, vocabs, SearchSettings(beam_size=a.beam_size, max_length=2), batch_size=2,
                      log=lambda m: None)
    warm.translate(lines[:2])
    speed = {}
    for bs in sizes:
        search = SearchSettings(beam_size=a.beam_size, min_length=a.min_length, max_length=a.max_length,
                                block_ngram_repeat=a.block_ngram_repeat)
        tr = Translator(model, vocabs, search, batch_size=bs, log=lambda m: None)
        n = a.n_sents_b1 if bs == 1 else a.n_sents
        speed[bs], secs = sentences_per_second(tr, lines[:n], a.repeats)
        print(f"batch {bs:>3}: {speed[bs]:8.2f} sentences/s  ({n} sentences in {secs:.1f} s)", flush=True)
    base, top = sizes[0], sizes[-1]
    if top != base:
        print(f"ratio batch{top}/batch{base}: {speed[top] / speed[base]:.1f}x")
    print(f"peak RSS: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
