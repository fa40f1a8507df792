"""Speed of the batched ROUGE reward (onmt/losses/rewards.py) against the rouge-score package.

    OMP_NUM_THREADS=1 .venv/bin/python bench/reward_bench.py     # 64 pairs of 100-token sequences,
                                                                 # Zipf(1.0) ids over 5000 words
Scores the same pairs with rewards.rouge_l on id tensors and with
rouge_scorer.RougeScorer(["rougeL"]) on the pairs written as strings of tokens "w123" (no
stemming), checks that the F1 values agree (to 1e-6; rouge1/rouge2 are checked too) and prints the
per-batch time of each (best of -rounds, the two taking turns within each round), the speed ratio,
and the per-batch times of our rouge1, rouge2 and mix rewards. Needs `pip install rouge-score`.
"""
import argparse
import sys
import time

import torch

from onmt.losses.rewards import reward_function


def random_ids(batch_size, length, vocab, zipf, g):
    """(B, L) ids drawn from a Zipf(`zipf`) distribution over `vocab` words (uniform if zipf == 0)."""
    weights = torch.arange(1, vocab + 1, dtype=torch.float64).pow(-zipf)  # (V,)
    return torch.multinomial(weights.expand(batch_size, vocab), length, replacement=True, generator=g)


def best_times(fns, rounds, reps):
    """Best over `rounds` of the mean time of reps[i] calls of fns[i], for each fn (one warm-up call
    each). The functions take turns within every round, so that a change of machine load hits all."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, n) in enumerate(zip(fns, reps)):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t) / n)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-batch_size", type=int, default=64)
    p.add_argument("-length", type=int, default=100, help="tokens of every hypothesis and reference")
    p.add_argument("-vocab", type=int, default=5000)
    p.add_argument("-zipf", type=float, default=1.0, help="Zipf exponent of the ids (0: uniform)")
    p.add_argument("-rounds", type=int, default=7, help="timing rounds (the best is kept)")
    p.add_argument("-reps", type=int, default=20, help="batches per round for our rewards")
    p.add_argument("-ref_reps", type=int, default=2, help="batches per round for rouge-score")
    p.add_argument("-threads", type=int, default=0, help="torch threads (0: default)")
    p.add_argument("-seed", type=int, default=0)
    a = p.parse_args()
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        sys.exit("rouge-score is not installed: pip install rouge-score")
    if a.threads:
        torch.set_num_threads(a.threads)

    g = torch.Generator().manual_seed(a.seed)
    B, L = a.batch_size, a.length
    hyp, ref = random_ids(B, L, a.vocab, a.zipf, g), random_ids(B, L, a.vocab, a.zipf, g)  # (B, L)
    hyp_len = ref_len = torch.full((B,), L, dtype=torch.int64)                              # (B,)
    hyp_str = [" ".join(f"w{i}" for i in row) for row in hyp.tolist()]
    ref_str = [" ".join(f"w{i}" for i in row) for row in ref.tolist()]

    names = ["rougeL", "rouge1", "rouge2"]
    scorer = rouge_scorer.RougeScorer(names, use_stemmer=False)
    theirs = [scorer.score(r, h) for h, r in zip(hyp_str, ref_str)]
    for name in names:
        ours = reward_function(name)(hyp, hyp_len, ref, ref_len).double()
        other = torch.tensor([s[name].fmeasure for s in theirs], dtype=torch.float64)
        diff = (ours - other).abs().max().item()
        print(f"{name} F1 agreement with rouge-score: max |diff| = {diff:.2e} (mean F1 {ours.mean():.4f})")
        if diff > 1e-6:
            sys.exit(f"{name} F1 disagrees with rouge-score by {diff:.2e}")

    scorer_l = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

    def rouge_score_batch():
        return [scorer_l.score(r, h)["rougeL"].fmeasure for h, r in zip(hyp_str, ref_str)]

    rouge_l = reward_function("rougeL")
    t_ours, t_theirs = best_times([lambda: rouge_l(hyp, hyp_len, ref, ref_len), rouge_score_batch],
                                  a.rounds, [a.reps, a.ref_reps])
    print(f"config: {B} pairs of {L} tokens, vocab {a.vocab} (zipf {a.zipf}), torch threads "
          f"{torch.get_num_threads()}, best of {a.rounds} rounds")
    print(f"rouge-score rougeL: {t_theirs * 1e3:.2f} ms/batch")
    print(f"batched rougeL:     {t_ours * 1e3:.2f} ms/batch")
    print(f"batched reward is {t_theirs / t_ours:.1f}x faster than rouge-score")
    others = ["rouge1", "rouge2", "mix"]
    fns = [lambda fn=reward_function(name): fn(hyp, hyp_len, ref, ref_len) for name in others]
    for name, t in zip(others, best_times(fns, a.rounds, [a.reps] * len(fns))):
        print(f"batched {name + ':':<11} {t * 1e3:.2f} ms/batch")

if __name__ == "__main__":
    main()
