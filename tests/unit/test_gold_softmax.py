"""The fused ML path (gold_log_softmax, PointerGenerator.gold_log_prob, model.gold_log_likelihood)
against the full distribution (forward + gather), values and gradients, in float64."""
import pytest
import torch

from helpers.reinforced import V_TGT, _batch, _copy_batch, _model
from onmt.constants import PAD, UNK
from onmt.interface import gold_targets
from onmt.losses.ml import MLLoss
from onmt.modules import gold_softmax
from onmt.modules.gold_softmax import gold_log_softmax


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


@pytest.mark.parametrize("extra", [[], ["-no_tied_output"], ["-no_temporal_attn", "-no_intra_decoder_attn"]])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_matches_full_distribution_values_and_gradients(extra, seed, monkeypatch):
    monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", 2 * (V_TGT + 3))  # several row chunks
    model, batch = _model(*extra, "-scheduled_sampling", "0", seed=seed).double().train(), _special_batch(seed)
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


def test_gold_log_softmax_against_autograd():
    torch.manual_seed(0)
    N, D, V, S = 9, 5, 13, 4
    o = torch.randn(N, D, dtype=torch.float64, requires_grad=True)
    w = torch.randn(V, D, dtype=torch.float64, requires_grad=True)
    b = torch.randn(V, dtype=torch.float64, requires_grad=True)
    gold = torch.randint(0, V + 3, (N,))
    gold[0], gold[1] = V + 1, V - 1
    cols = torch.randint(0, V + 3, (N, S))
    z, lse, top, top_id, at_cols = gold_log_softmax(o, w, b, gold, cols, -1e4)
    logits = torch.nn.functional.linear(o, w, b)  # (N, V)
    ext = torch.cat([logits, torch.full((N, 3), -1e4, dtype=logits.dtype)], 1)  # (N, V + 3)
    ref = ext.gather(1, gold[:, None]).squeeze(1) - torch.logsumexp(logits, 1)
    assert torch.allclose(z, ref) and torch.allclose(lse, torch.logsumexp(logits, 1))
    assert torch.equal(top_id, logits.argmax(1)) and torch.allclose(top, logits.amax(1))
    assert torch.allclose(at_cols, ext.gather(1, cols))
    weights = torch.randn(N, dtype=torch.float64)
    got = torch.autograd.grad((z * weights).sum(), (o, w, b))
    want = torch.autograd.grad((ref * weights).sum(), (o, w, b))
    for g, r in zip(got, want):
        assert torch.allclose(g, r)


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
