"""Batched ROUGE rewards on id tensors against slow per-example references in plain Python."""
import itertools
from collections import Counter

import pytest
import torch

from onmt import opts
from onmt.losses.rewards import REWARDS, lcs_length, ngram_overlap, reward_function, rouge_l, rouge_n


def test_rl_reward_s_choices_are_the_reward_table():
    """-rl_reward offers exactly the table's rewards, in its order (the option names them: onmt/opts/ imports
    no torch)."""
    action = opts.train_parser()._option_string_actions["-rl_reward"]
    assert list(action.choices) == list(REWARDS)
    assert action.default in REWARDS


# ---- slow, obviously-correct references on token lists -----------------------------------------

def ref_lcs(a, b):
    """Textbook O(len(a) len(b)) LCS table; a negative id matches nothing."""
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1] and a[i - 1] >= 0:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    return t[-1][-1]


def ref_overlap(a, b, n):
    """Counter-based clipped n-gram overlap; n-grams holding a negative id are left out."""
    def grams(s):
        return Counter(g for g in (tuple(s[i:i + n]) for i in range(len(s) - n + 1)) if min(g) >= 0)
    return sum((grams(a) & grams(b)).values())


def ref_f1(overlap, n_hyp, n_ref):
    if n_hyp == 0 or n_ref == 0 or overlap == 0:
        return 0.0
    p, r = overlap / n_hyp, overlap / n_ref
    return 2 * p * r / (p + r)


def lists(seq, lengths):
    return [s[:k] for s, k in zip(seq.tolist(), lengths.tolist())]


def expected(hyp, hyp_len, ref, ref_len):
    """dict name -> per-example reference values."""
    out = {"lcs": [], "rougeL": [], "ov1": [], "ov2": [], "ov3": [], "rouge1": [], "rouge2": []}
    for a, b in zip(lists(hyp, hyp_len), lists(ref, ref_len)):
        lcs = ref_lcs(a, b)
        out["lcs"].append(lcs)
        out["rougeL"].append(ref_f1(lcs, len(a), len(b)))
        for n in (1, 2, 3):
            ov = ref_overlap(a, b, n)
            out[f"ov{n}"].append(ov)
            if n < 3:
                out[f"rouge{n}"].append(ref_f1(ov, max(len(a) - n + 1, 0), max(len(b) - n + 1, 0)))
    return out


def assert_close(got, expected, atol=1e-6):
    """got (a tensor) within atol of the list `expected`, elementwise."""
    diff = (got.double() - torch.tensor(expected, dtype=torch.float64)).abs()
    assert diff.numel() == 0 or diff.max().item() <= atol, (got.tolist(), expected)


def check(hyp, hyp_len, ref, ref_len):
    exp = expected(hyp, hyp_len, ref, ref_len)
    assert lcs_length(hyp, hyp_len, ref, ref_len).tolist() == exp["lcs"]
    for n in (1, 2, 3):
        assert ngram_overlap(hyp, hyp_len, ref, ref_len, n).tolist() == exp[f"ov{n}"]
    for name, got in [("rougeL", rouge_l(hyp, hyp_len, ref, ref_len)),
                      ("rouge1", rouge_n(hyp, hyp_len, ref, ref_len, 1)),
                      ("rouge2", rouge_n(hyp, hyp_len, ref, ref_len, 2))]:
        assert got.dtype == torch.float32 and got.shape == (hyp.size(0),)
        assert_close(got, exp[name])
    return exp


def t(rows):
    return torch.tensor(rows, dtype=torch.int64).reshape(len(rows), -1)


def lens(*ks):
    return torch.tensor(ks, dtype=torch.int64)


# ---- cases --------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed, L1, L2, vocab", [(0, 12, 12, 3), (1, 20, 9, 4), (2, 7, 25, 2),
                                                  (3, 30, 30, 6), (4, 1, 5, 2), (5, 16, 16, 10)])
def test_random_against_references(seed, L1, L2, vocab):
    g = torch.Generator().manual_seed(seed)
    B = 40
    hyp = torch.randint(0, vocab, (B, L1), generator=g)
    ref = torch.randint(0, vocab, (B, L2), generator=g)
    hyp_len = torch.randint(0, L1 + 1, (B,), generator=g)
    ref_len = torch.randint(0, L2 + 1, (B,), generator=g)
    hyp_len[:3], ref_len[:3] = torch.tensor([0, L1, 0]), torch.tensor([L2, 0, 0])
    # garbage beyond the lengths (including the ids of real tokens and negatives) must be ignored
    garbage_h = torch.randint(-2, vocab, (B, L1), generator=g)
    garbage_r = torch.randint(-2, vocab, (B, L2), generator=g)
    hyp = torch.where(torch.arange(L1) < hyp_len[:, None], hyp, garbage_h)
    ref = torch.where(torch.arange(L2) < ref_len[:, None], ref, garbage_r)
    exp = check(hyp, hyp_len, ref, ref_len)
    if min(L1, L2) >= 7:  # the small vocabulary gives real matches and repeats
        assert max(exp["lcs"]) >= 3 and max(exp["ov2"]) >= 2


def test_padding_content_is_ignored():
    hyp, ref = t([[1, 2, 3, 7, 7]]), t([[3, 2, 1, 7]])
    a = rouge_l(hyp, lens(3), ref, lens(3))
    b = rouge_l(hyp.masked_fill(torch.arange(5) >= 3, 2), lens(3),
                ref.masked_fill(torch.arange(4) >= 3, 3), lens(3))
    assert torch.equal(a, b)
    check(hyp, lens(3), ref, lens(3))


def test_empty_sides():
    hyp, ref = t([[1, 2, 3], [1, 2, 3], [1, 2, 3]]), t([[1, 2, 3], [1, 2, 3], [1, 2, 3]])
    hyp_len, ref_len = lens(0, 3, 0), lens(3, 0, 0)
    check(hyp, hyp_len, ref, ref_len)
    for name in REWARDS:
        assert reward_function(name)(hyp, hyp_len, ref, ref_len).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("L1, L2", [(0, 4), (4, 0), (0, 0)])
def test_zero_width_tensors(L1, L2):
    hyp, ref = torch.zeros(3, L1, dtype=torch.long), torch.zeros(3, L2, dtype=torch.long)
    hyp_len, ref_len = torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long)
    assert lcs_length(hyp, hyp_len, ref, ref_len).tolist() == [0, 0, 0]
    for name in REWARDS:
        assert reward_function(name)(hyp, hyp_len, ref, ref_len).tolist() == [0.0, 0.0, 0.0]


def test_identical_gives_one_and_disjoint_gives_zero():
    seq = t([[5, 6, 5, 6, 7], [9, 9, 9, 0, 0], [4, 3, 0, 0, 0]])
    seq_len = lens(5, 3, 2)
    for name in REWARDS:
        assert reward_function(name)(seq, seq_len, seq, seq_len).tolist() == [1.0, 1.0, 1.0]
    other = seq + 100
    for name in REWARDS:
        assert reward_function(name)(seq, seq_len, other, seq_len).tolist() == [0.0, 0.0, 0.0]


def test_negative_ids_match_nothing():
    hyp = t([[-1, 2, -1, 3], [-1, -1, -1, -1], [4, -3, 5, 6]])
    ref = t([[-1, 2, -1, 3], [-1, -1, -1, -1], [4, -3, 5, 6]])
    hyp_len = ref_len = lens(4, 4, 4)
    exp = check(hyp, hyp_len, ref, ref_len)
    assert exp["lcs"] == [2, 0, 3] and exp["ov1"] == [2, 0, 3] and exp["ov2"] == [0, 0, 1]
    # unmatchable reference tokens still count in the recall denominator
    assert rouge_l(hyp, hyp_len, ref, ref_len)[1].item() == 0.0
    assert_close(rouge_n(hyp, hyp_len, ref, ref_len, 1)[:1], [0.5])


def test_clipping_and_unequal_widths():
    hyp = t([[1, 1, 1, 1, 2, 2]])
    ref = t([[1, 2, 1]])
    exp = check(hyp, lens(6), ref, lens(3))
    assert exp["ov1"] == [3] and exp["ov2"] == [1] and exp["lcs"] == [2]
    check(ref, lens(3), hyp, lens(6))


def test_mix_is_mean_of_the_three():
    g = torch.Generator().manual_seed(7)
    hyp, ref = torch.randint(0, 5, (16, 11), generator=g), torch.randint(0, 5, (16, 13), generator=g)
    hyp_len, ref_len = torch.randint(0, 12, (16,), generator=g), torch.randint(0, 14, (16,), generator=g)
    args = (hyp, hyp_len, ref, ref_len)
    mean = sum(reward_function(name)(*args) for name in ("rouge1", "rouge2", "rougeL")) / 3
    assert_close(reward_function("mix")(*args), mean.tolist())
    assert reward_function("mix")(*args).dtype == torch.float32


def test_recall_and_brevity_penalty_against_references():
    import math
    g = torch.Generator().manual_seed(5)
    hyp, ref = torch.randint(-1, 5, (64, 9), generator=g), torch.randint(-1, 5, (64, 12), generator=g)
    hyp_len, ref_len = torch.randint(0, 10, (64,), generator=g), torch.randint(0, 13, (64,), generator=g)
    recall, bp = [], []
    for a, b in zip(lists(hyp, hyp_len), lists(ref, ref_len)):
        lcs = ref_lcs(a, b)
        recall.append(lcs / len(b) if b else 0.0)
        penalty = 0.0 if not a else (1.0 if len(a) >= len(b) else math.exp(1 - len(b) / len(a)))
        bp.append(ref_f1(lcs, len(a), len(b)) * penalty)
    assert_close(reward_function("rougeL_recall")(hyp, hyp_len, ref, ref_len), recall)
    assert_close(reward_function("rougeL_bp")(hyp, hyp_len, ref, ref_len), bp)
    # a hypothesis half its reference's length, all in it: recall 1/2, F1 2/3, penalty exp(-1)
    h, r = t([[1, 2, 0, 0]]), t([[1, 2, 3, 4]])
    assert_close(reward_function("rougeL_recall")(h, lens(2), r, lens(4)), [0.5])
    assert_close(reward_function("rougeL_bp")(h, lens(2), r, lens(4)), [2 / 3 * math.exp(-1)])


def test_unknown_reward_name():
    with pytest.raises(ValueError, match="rougeL.*rouge1.*rouge2.*mix"):
        reward_function("bleu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu():
    g = torch.Generator().manual_seed(11)
    hyp, ref = torch.randint(-1, 6, (64, 50), generator=g), torch.randint(-1, 6, (64, 70), generator=g)
    hyp_len, ref_len = torch.randint(0, 51, (64,), generator=g), torch.randint(0, 71, (64,), generator=g)
    cpu, gpu = (hyp, hyp_len, ref, ref_len), tuple(x.cuda() for x in (hyp, hyp_len, ref, ref_len))
    assert torch.equal(lcs_length(*gpu).cpu(), lcs_length(*cpu))
    for n in (1, 2, 3):
        assert torch.equal(ngram_overlap(*gpu, n).cpu(), ngram_overlap(*cpu, n))
    for name, fn in REWARDS.items():
        assert_close(fn(*gpu).cpu(), fn(*cpu).tolist())


def test_every_pair_of_short_sequences():
    """Exhaustive over all hyp / ref of lengths 0..3 over {0, 1, -1}, in one batch."""
    seqs = [list(s) for k in range(4) for s in itertools.product([0, 1, -1], repeat=k)]
    pairs = list(itertools.product(seqs, seqs))
    hyp = t([a + [7] * (3 - len(a)) for a, _ in pairs])
    ref = t([b + [7] * (3 - len(b)) for _, b in pairs])
    check(hyp, lens(*[len(a) for a, _ in pairs]), ref, lens(*[len(b) for _, b in pairs]))
