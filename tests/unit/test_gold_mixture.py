"""The fused mixture paths (onmt/fused/gold_mixture.py's kernels, through the fused subclasses) against the
plain generators' full distribution (`forward` + gather / argmax), values and gradients: Paulus et al.'s
PointerGenerator through FusedReinforcedModel.gold_log_likelihood and FusedPointerGenerator.predict, See et
al.'s CopyGenerator through FusedCopyNMTModel.gold_log_likelihood."""
import pytest
import torch
import torch.nn as nn

from helpers.models import build, make_batch, make_opt, make_vocabs
from helpers.reinforced import V_TGT, _batch, _copy_batch, _model
from onmt.constants import PAD, UNK
from onmt.fused import gold_softmax
from onmt.fused.gold_mixture import logits_on, packed_weight, training_loop_product
from onmt.interface import gold_targets
from onmt.losses.ml import MLLoss
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.reinforced.fused import FusedPointerGenerator
from onmt.reinforced.pointer_generator import PointerGenerator


def _special_batch(seed):
    """_batch (duplicated source words, padding, copyable OOV gold) plus a non-copyable OOV gold
    (<unk> in tgt and tgt_ex) and a gold that is a duplicated source word."""
    batch = _batch(seed, B=4, S=7, T=7)
    batch.tgt[0, 1] = batch.tgt_ex[0, 1] = UNK
    batch.tgt_ex[1, 2] = batch.src_ex[1, 0]  # src_ex[1, 1] == src_ex[1, 0]: a duplicated word
    batch.tgt[1, 2] = batch.tgt_ex[1, 2] if batch.tgt_ex[1, 2] < V_TGT else UNK
    return batch


def _full(model, batch):
    logp, attns = model(batch)  # (B, T-1, X)
    gold, mask = gold_targets(batch, logp.size(-1))
    ll = logp.gather(2, gold.unsqueeze(2)).squeeze(2).masked_fill(~mask, 0.0)
    return ll, logp.argmax(-1), mask


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("more_args", [[], ["-no_tied_output"], ["-no_temporal_attn", "-no_intra_decoder_attn"]])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_matches_full_distribution_values_and_gradients(more_args, seed, monkeypatch):
    monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", 2 * (V_TGT + 3))  # several row chunks
    model, batch = _model(*more_args, "-scheduled_sampling", "0", seed=seed).double().train(), _special_batch(seed)
    gold, _ = gold_targets(batch, V_TGT + batch.n_oov)
    assert (gold >= V_TGT).any() and (gold == UNK).any() and (batch.tgt[:, 1:] == PAD).any()
    ref_ll, ref_pred, mask = _full(model, batch)
    ref_grads = _grads(model, -ref_ll.sum())
    ll, pred, attns = model.gold_log_likelihood(batch)
    grads = _grads(model, -ll.sum())
    assert ll.shape == pred.shape == mask.shape and attns["std"].shape[:2] == mask.shape
    assert torch.allclose(ll, ref_ll, rtol=1e-10, atol=1e-10) and (ll[~mask] == 0).all()
    assert torch.equal(pred[mask], ref_pred[mask])
    assert grads.keys() == ref_grads.keys()
    for name, g in grads.items():
        assert torch.allclose(g, ref_grads[name], rtol=1e-8, atol=1e-10), name


def test_pointer_heavy_model_argmax_and_zero_copy_mass():
    model, batch = _model("-scheduled_sampling", "0").double().train(), _copy_batch(0, B=5)
    with torch.no_grad():
        model.generator.switch.bias.fill_(4.0)
        model.decoder.enc_attn.weight.mul_(300.0)  # sharp attention: some copy masses underflow to 0
    ref_ll, ref_pred, mask = _full(model, batch)
    ll, pred, _ = model.gold_log_likelihood(batch)
    assert (ref_pred >= V_TGT).any() and torch.isfinite(ll).all()
    assert torch.allclose(ll, ref_ll, rtol=1e-10, atol=1e-8)
    assert torch.equal(pred[mask], ref_pred[mask])
    grads = _grads(model, -ll.sum())
    ref_grads = _grads(model, -_full(model, batch)[0].sum())
    for name, g in grads.items():
        assert torch.isfinite(g).all() and torch.allclose(g, ref_grads[name], rtol=1e-8, atol=1e-10), name


def test_ml_loss_uses_the_fused_path_with_scheduled_sampling():
    model, batch = _model("-scheduled_sampling", "0.5").train(), _special_batch(3)
    torch.manual_seed(7)
    loss, stats = MLLoss()(model, batch)
    torch.manual_seed(7)  # the same draws: the in-loop choices do not depend on the path
    ref_ll, ref_pred, mask = _full(model, batch)
    gold, _ = gold_targets(batch, V_TGT + batch.n_oov)
    assert torch.allclose(loss, -ref_ll.sum(), rtol=1e-5)
    assert stats.n_correct == int(((ref_pred == gold) & mask).sum()) and stats.n_words == int(mask.sum())
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_predict_with_packed_weights_is_the_argmax_of_the_full_mixture():
    torch.manual_seed(0)
    V, n_oov, D = 300, 7, 32
    full = nn.Embedding(500, 16, padding_idx=PAD)
    gen = FusedPointerGenerator(D, V, embedding=PartialEmbedding(full, V))
    N, S = 200, 12
    src_ex = torch.randint(4, V + n_oov, (N, S))
    src_ex[:, -2:] = PAD
    src_ex[:5, :] = src_ex[:5, :1]                         # one word repeated at every position
    attn = torch.softmax(torch.randn(N, S) * 3, 1).masked_fill(src_ex == PAD, 0.0)
    o = torch.randn(N, D) * 2
    with torch.no_grad():
        gen.switch.bias.fill_(0.5)
        first = first_occurrence(src_ex)
        want = gen(o, attn, src_ex, first, n_oov).argmax(1)
        assert torch.equal(PointerGenerator.predict(gen, o, attn, src_ex, first, n_oov), want)  # the plain one
        weight = gen.out_weight()
        for w in (packed_weight(weight), weight, None):
            assert torch.equal(gen.predict(o, attn, src_ex, first, n_oov, weight=w), want)
    assert (want >= V).any() and (want < V).any()            # both copied OOVs and generated words


@pytest.mark.parametrize("coverage", [False, True])
def test_copy_generator_fused_gold_path_equals_full_distribution(coverage, monkeypatch):
    """FusedCopyNMTModel.gold_log_likelihood (no (B, T, X) tensor) == forward + gather: values, argmax,
    gradients; with copyable OOV golds, <unk> golds, duplicated source words and padding."""
    from onmt.models.seq2seq import NMTModel
    monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", 24)  # several row chunks
    vocabs = make_vocabs()
    model = build(make_opt(copy_attn=True, coverage_attn=coverage, global_attention="mlp", brnn=True,
                           param_init=0.5), vocabs).double()
    batch = make_batch(vocabs, B=4, S=8, T=7, seed=3)
    batch.src_ex[0, 1] = batch.src_ex[0, 0]  # a duplicated word
    batch.src[0, 1] = batch.src[0, 0]
    gold_body = batch.tgt_ex[:, 1:]
    assert (gold_body >= len(vocabs.tgt)).any() and (batch.tgt[:, 1:] == 1).any()

    def grads(ll):
        model.zero_grad()
        (-ll.sum()).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    ref_ll, ref_pred, _ = NMTModel.gold_log_likelihood(model, batch)  # the full path
    ref_g = grads(ref_ll)
    ll, pred, attns = model.gold_log_likelihood(batch)
    g = grads(ll)
    assert torch.allclose(ll.float(), ref_ll.float(), atol=1e-5)  # the full path computes in float32
    mask = batch.tgt[:, 1:] != 1
    assert (~mask).any()  # padding, which the fused path skips
    assert torch.equal(pred[mask], ref_pred[mask]) and (pred[~mask] == 1).all()
    _, _, ref_attns = NMTModel.gold_log_likelihood(model, batch)
    assert torch.allclose(attns["p_copy"][mask].float(), ref_attns["p_copy"][mask].float(), atol=1e-6)
    assert (attns["p_copy"][~mask] == 0).all()
    assert g.keys() == ref_g.keys()
    for n in g:
        assert torch.allclose(g[n], ref_g[n], rtol=1e-4, atol=1e-5), n


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="PyTorch built without oneDNN")
def test_training_loop_product_follows_autocast_and_logits_on_equals_the_gold_product():
    """The pass's prepared product: packed float32, or in autocast's precision under autocast; logits_on
    gives the logits only where they equal gold_log_softmax's own product (a float32 product with autocast
    off, a bfloat16 one under bfloat16 autocast), else None."""
    from onmt.fused.low_precision import CastLinear
    from onmt.fused.packed_linear import PackedLinear
    torch.manual_seed(0)
    gen = PointerGenerator(24, 50, embedding=PartialEmbedding(nn.Embedding(60, 8), 50), tied=True)
    weight = tuple(w.detach() for w in gen.out_weight())  # (V, D), (V,)
    o = torch.randn(30, 24)
    p32 = training_loop_product(weight)
    assert isinstance(p32, PackedLinear)
    torch.testing.assert_close(logits_on(p32, o), torch.addmm(weight[1], o, weight[0].t()), rtol=1e-5, atol=1e-5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = training_loop_product(weight)
        assert isinstance(low, CastLinear) and low.dtype == torch.bfloat16
        o_low = o.to(torch.bfloat16)
        got = logits_on(low, o_low)
        if low.packed is None:      # no packed bfloat16 weight on this CPU (AVX2): nothing faster to offer
            assert got is None
        else:
            assert got.dtype == torch.float32
            # gold_log_softmax's own: the bfloat16 product, widened, the bias added in float32
            torch.testing.assert_close(got, torch.add(weight[1], o_low @ weight[0].to(torch.bfloat16).t()),
                                       rtol=0, atol=1e-6)
        assert logits_on(p32, o_low) is None   # a float32 product where the pass's products run low
    assert logits_on(low, o) is None           # a bfloat16 product where they run in float32


AMP_VOCABS = make_vocabs(src_vocab_size=60, tgt_vocab_size=40)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="PyTorch built without oneDNN")
def test_scheduled_sampling_products_run_low_and_feed_the_gold_logits(monkeypatch):
    """Under autocast (-amp) the pass's small vocabulary products (scheduled sampling's rows, the rollouts)
    run in autocast's precision on W_out cast and packed once (gold_mixture.training_loop_product), and
    the gold logits are computed on that packed weight: the same log-likelihoods and gradients as with
    gold_log_softmax's own bfloat16 product."""
    from onmt.fused import gold_mixture
    from onmt.fused.low_precision import CastLinear
    from onmt.reinforced import fused as reinforced_fused
    made = []
    original = gold_mixture.training_loop_product
    monkeypatch.setattr(reinforced_fused, "training_loop_product",
                        lambda *a: made.append(original(*a)) or made[-1])
    batch = make_batch(AMP_VOCABS, B=4, S=9, T=8, seed=1)
    results = []
    for reuse in (True, False):
        if not reuse:
            monkeypatch.setattr(reinforced_fused, "logits_on", lambda product, o: None)
        model = build(make_opt(reinforced=True, rnn_size=32, word_vec_size=16, brnn=True, scheduled_sampling=1.0),
                      AMP_VOCABS, seed=0)
        model.train()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.manual_seed(0)
            ll, pred, _ = model.gold_log_likelihood(batch)
        ll.sum().backward()
        results.append((ll, pred, [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    assert made and all(isinstance(p, CastLinear) and p.dtype == torch.bfloat16 for p in made)
    (ll_a, pred_a, g_a), (ll_b, pred_b, g_b) = results
    torch.testing.assert_close(ll_a, ll_b, rtol=0, atol=1e-5)
    assert torch.equal(pred_a, pred_b)
    for a, b in zip(g_a, g_b):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
