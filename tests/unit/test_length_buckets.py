"""-length_buckets (issue 56): batches padded to few shapes, the padding inert, and the teacher-forced
pass and loss free of host synchronizations (what a CUDA graph capture needs).

    bucket_length      lengths >= n among K per octave: at most n / K added, few of them
    an epoch           its distinct (S, T) batch shapes are bucket lengths, bounded by K per octave
    padding inert      the loss and every gradient of a batch padded further equal the batch's own
    the region         the teacher-forced decoder pass, the generator and the loss (MLLoss.terms) and
                       their backward call no .item / .tolist / .cpu / nonzero / bool / int of a tensor
                       (helpers.syncs.counting_syncs; CUDA's torch.cuda.set_sync_debug_mode has no CPU
                       counterpart), the encoder (pack_padded_sequence's host lengths) and the
                       statistics' one copy outside it; See et al.'s gold pass keeps one nonzero (its
                       real target rows) unless the model is built to be captured, then none
"""
import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from helpers.e2e import random_pair_data
from helpers.models import build, make_batch, make_opt, make_vocabs
from helpers.syncs import counting_syncs
from onmt.constants import PAD
from onmt.inputters.collate import bucket_length
from onmt.inputters.dataset import ShardedDataset
from onmt.losses import build_loss

FAMILIES = {
    "rnn": dict(brnn=True, global_attention="general"),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp"),
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6),
}
# inside the region, by family: See et al.'s gold pass selects its real rows (fused/gold_mixture.py)
REGION = {"rnn": {}, "copy": {("nonzero", "models/fused.py"): 1}, "reinforced": {}}


def _bound(K, longest):
    """How many bucket lengths there are up to `longest`."""
    return 2 * K + K * max(0, math.ceil(math.log2(longest / (2 * K))) + 1)


@pytest.mark.parametrize("K", [1, 2, 4, 8, 16])
def test_bucket_lengths(K):
    n = torch.arange(1, 2001).tolist()
    lengths = [bucket_length(x, K) for x in n]
    assert all(x <= b <= x + x / K for x, b in zip(n, lengths))
    assert all(bucket_length(b, K) == b for b in lengths)   # a bucket length is its own bucket
    assert len(set(lengths)) <= _bound(K, 2000)
    assert [bucket_length(x, 0) for x in n] == n   # off
    capped = [bucket_length(x, K, 1000) for x in n[:1000]]   # the data's longest: never beyond it
    assert all(x <= b <= min(1000, x + x / K) for x, b in zip(n, capped)) and 1000 in capped
    assert len(set(capped)) <= _bound(K, 1000) + 1


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    # 300 examples of 3..59 source words, targets their first half
    return random_pair_data(str(tmp_path_factory.mktemp("buckets")), seed=0, n_examples=300, max_len=60,
                            target=lambda words: words[:max(1, len(words) // 2)])


def _shapes(data, K):
    ds = ShardedDataset.from_data(data, "train", 8, pool_factor=4, seed=1, length_buckets=K)
    return [(tuple(b.src.shape), tuple(b.tgt.shape), b) for b in ds.iter_epoch(0)]


def test_an_epoch_sees_few_shapes_all_bucket_lengths(data):
    plain, bucketed = _shapes(data, 0), _shapes(data, 4)
    assert len(plain) == len(bucketed)
    src_cap, tgt_cap = max(s[1] for s, _, _ in plain), max(t[1] for _, t, _ in plain)
    for (s0, t0, b0), (s, t, b) in zip(plain, bucketed):
        assert s[1] == bucket_length(s0[1], 4, src_cap) and t[1] == bucket_length(t0[1], 4, tgt_cap)
        assert torch.equal(b.src[:, :s0[1]], b0.src) and (b.src[:, s0[1]:] == PAD).all()
        assert torch.equal(b.tgt_ex[:, :t0[1]], b0.tgt_ex) and (b.tgt[:, t0[1]:] == PAD).all()
        assert b.n_tgt_tokens == b0.n_tgt_tokens and torch.equal(b.src_lengths, b0.src_lengths)
    src_lengths, tgt_lengths = {s[1] for s, _, _ in bucketed}, {t[1] for _, t, _ in bucketed}
    assert len(src_lengths) <= _bound(4, 60) + 1 and len(tgt_lengths) <= _bound(4, 32) + 1
    assert len({s[1] for s, _, _ in plain}) > len(src_lengths)   # the buckets did merge shapes


def _padded(batch, extra_src, extra_tgt):
    """The batch with `extra_src` more PAD source positions and `extra_tgt` more PAD target steps."""
    def more(t, n):
        return F.pad(t, (0, n), value=PAD)  # (B, L + n)
    return replace(batch, src=more(batch.src, extra_src), src_ex=more(batch.src_ex, extra_src),
                   tgt=more(batch.tgt, extra_tgt), tgt_ex=more(batch.tgt_ex, extra_tgt))


def _loss_and_grads(family, batch):
    torch.manual_seed(0)
    opt, vocabs = make_opt(**FAMILIES[family]), make_vocabs()
    model = build(opt, vocabs)
    loss, stats = build_loss(opt)(model, batch)
    loss.backward()
    return loss.detach(), stats, {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_bucketed_batch_has_the_unpadded_loss_and_gradients(family):
    batch = make_batch(make_vocabs(), B=3, S=7, T=6, copy_source=True)
    loss, stats, grads = _loss_and_grads(family, batch)
    loss_b, stats_b, grads_b = _loss_and_grads(family, _padded(batch, 5, 4))
    torch.testing.assert_close(loss_b, loss, rtol=1e-5, atol=1e-6)
    assert stats_b.n_words == stats.n_words and stats_b.n_correct == stats.n_correct
    assert grads_b.keys() == grads.keys()
    for name in grads:
        torch.testing.assert_close(grads_b[name], grads[name], rtol=1e-4, atol=1e-6, msg=name)


def _by_file(counts):
    out = {}
    for (name, where), n in counts.items():
        key = (name, where.rsplit(":", 1)[0])
        out[key] = out.get(key, 0) + n
    return out


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_teacher_forced_pass_and_loss_do_not_sync(family):
    torch.manual_seed(0)
    opt, vocabs = make_opt(**FAMILIES[family]), make_vocabs()
    model, loss_fn = build(opt, vocabs), build_loss(opt)
    batch = _padded(make_batch(vocabs, B=3, S=7, T=6, copy_source=True), 1, 2)
    for warm in (True, False):   # first-call work is not a step's
        model.zero_grad()
        enc = model.encode(batch)   # outside: packing reads the lengths on the host
        with counting_syncs() as counts:
            loss, figures = loss_fn.terms(model, batch, enc)
            loss.backward()
    assert _by_file(counts) == REGION[family]


def test_see_et_al_captured_computes_every_row_without_a_sync():
    """Built to be captured (Execution capture "cuda-graphs", onmt/execution.py), See et al.'s gold
    pass computes every row, padding included, instead of selecting the real ones (the nonzero): no sync
    in the region, the same loss and gradients."""
    from onmt.execution import Execution
    from onmt.model_builder import build_model
    opt, vocabs = make_opt(**FAMILIES["copy"]), make_vocabs()
    batch = _padded(make_batch(vocabs, B=3, S=7, T=6, copy_source=True), 1, 2)
    out = {}
    for capture in ("off", "cuda-graphs"):
        torch.manual_seed(0)
        model = build_model(opt, vocabs, execution=Execution(capture=capture)).eval()
        loss_fn = build_loss(opt)
        enc = model.encode(batch)
        with counting_syncs() as counts:
            loss, figures = loss_fn.terms(model, batch, enc)
            loss.backward()
        out[capture] = (loss.detach(), [p.grad for p in model.parameters()], _by_file(counts), figures)
    assert out["cuda-graphs"][2] == {} and out["off"][2] == REGION["copy"]
    torch.testing.assert_close(out["cuda-graphs"][0], out["off"][0], rtol=1e-6, atol=1e-6)
    for a, b in zip(out["cuda-graphs"][1], out["off"][1]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    mask = out["off"][3][4]
    for a, b in zip(out["cuda-graphs"][3][2:3], out["off"][3][2:3]):   # the argmax at real tokens
        assert torch.equal(a[mask], b[mask])
