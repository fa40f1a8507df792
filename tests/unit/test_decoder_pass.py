"""The fused decoder pass (onmt/fused/decoder_pass.py, run by FusedRNNDecoder.forward) against the plain step loop
(RNNDecoder.step under autograd, See et al. eqs. 1-3, 10-11 with the LSTM cell and input feeding): every output and
the gradient of every input and parameter, in float64, with and without coverage, with padding (one row all
padding), a dropout mask and gradients reaching the final state."""
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from onmt.models.fused import FusedRNNDecoder
from onmt.models.rnn_decoder import DecoderOutput
from onmt.modules.embeddings import Embeddings

B, T, S, E, H = 4, 5, 7, 3, 6


class _Masks(nn.Module):
    """Stands in for the decoder's nn.Dropout in the step loop: multiplies step k's input by masks[k]."""

    def __init__(self, masks):
        super().__init__()
        self.masks, self.k = masks, 0

    def forward(self, x):
        self.k += 1
        return x * self.masks[self.k - 1]


def _setup(coverage, seed=0, rnn_type="LSTM", layers=1):
    torch.manual_seed(seed)
    dec = FusedRNNDecoder(rnn_type, layers, H, Embeddings(11, E), attn_type="mlp", input_feed=True,
                     coverage=coverage, dropout=0.0).double()
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2, 1:] = False
    mask[3] = False  # all padding: attention 0, no NaN
    memory = torch.randn(B, S, H, dtype=torch.float64, requires_grad=True)
    final = tuple(torch.randn(layers, B, H, dtype=torch.float64, requires_grad=True) for _ in range(2))
    if rnn_type == "GRU":
        final = final[0]
    enc = SimpleNamespace(memory=memory, mask=mask, final=final)
    emb = torch.randn(B, T, E, dtype=torch.float64, requires_grad=True)
    return dec, enc, emb


def _loss(dec_out, state, coverage):
    """A loss that reads every output and the final state with random weights."""
    g = torch.Generator().manual_seed(7)
    parts = [dec_out.out, dec_out.rnn_out, dec_out.context, dec_out.attn] + ([dec_out.coverage] if coverage else [])
    loss = sum((x * torch.randn(x.shape, generator=g, dtype=x.dtype)).sum() for x in parts)
    hidden = state.hidden if isinstance(state.hidden, tuple) else (state.hidden,)
    loss = loss + sum((x ** 2).sum() for x in hidden) + (state.input_feed ** 2).sum()
    if coverage:
        loss = loss + (state.coverage ** 2).sum()
    return loss


def _step_loop(dec, emb, state):
    steps = []
    for t in range(emb.size(1)):
        out, state = dec.step(emb[:, t], state)
        steps.append(out)
    return DecoderOutput.stack(steps), state


def _compare(dec, enc, emb, coverage, fused_expected=True):
    inputs = [emb, enc.memory] + list(enc.final if isinstance(enc.final, tuple) else (enc.final,))
    params = inputs + list(dec.parameters())
    fused, f_state = dec(emb, dec.init_state(enc))
    assert (type(fused.out.grad_fn).__name__ == "_DecoderPassBackward") == fused_expected
    got = torch.autograd.grad(_loss(fused, f_state, coverage), params, allow_unused=True)
    plain, p_state = _step_loop(dec, emb, dec.init_state(enc))
    want = torch.autograd.grad(_loss(plain, p_state, coverage), params, allow_unused=True)
    for name in ("out", "rnn_out", "context", "attn", "coverage"):
        a, b = getattr(fused, name), getattr(plain, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-12), name
    assert not torch.isnan(fused.attn).any() and fused.attn[3].abs().sum() == 0  # the all-padding row
    names = ["emb", "memory", "h0", "c0"][:len(inputs)] + [n for n, _ in dec.named_parameters()]
    for name, a, b in zip(names, got, want):
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.allclose(a, b, atol=1e-11), name


@pytest.mark.parametrize("keep", [True, False])  # the attention's sigmoids kept in forward, or recomputed
@pytest.mark.parametrize("coverage", [True, False])
def test_fused_pass_equals_the_step_loop_values_and_gradients(coverage, keep, monkeypatch):
    if not keep:
        monkeypatch.setattr("onmt.fused.decoder_pass.KEEP_SIGMOIDS", 0)
    dec, enc, emb = _setup(coverage)
    _compare(dec, enc, emb, coverage)


@pytest.mark.parametrize("coverage", [True, False])
def test_fused_pass_with_dropout_uses_the_masks_as_the_step_loop_would(coverage, monkeypatch):
    dec, enc, emb = _setup(coverage, seed=1)
    dec.dropout.p = 0.4
    dec.train()
    masks = (torch.rand(T, B, H, dtype=torch.float64) > 0.4).double() / 0.6  # (T, B, H)
    monkeypatch.setattr(dec, "_dropout_masks", lambda T_, B_, like: masks)
    fused, f_state = dec(emb, dec.init_state(enc))
    assert type(fused.out.grad_fn).__name__ == "_DecoderPassBackward"
    dec.dropout = _Masks(masks)  # the step loop applies the same masks, step by step
    plain, p_state = _step_loop(dec, emb, dec.init_state(enc))
    assert torch.allclose(fused.out, plain.out, atol=1e-12) and torch.allclose(fused.attn, plain.attn, atol=1e-12)
    params = [emb, enc.memory] + list(dec.parameters())
    dec.dropout.k = 0
    got = torch.autograd.grad(_loss(fused, f_state, coverage), params, allow_unused=True)
    want = torch.autograd.grad(_loss(plain, p_state, coverage), params, allow_unused=True)
    for a, b in zip(got, want):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-11)


def test_the_dropout_masks_are_scaled_bernoulli_draws():
    dec, _, emb = _setup(False)
    dec.dropout.p = 0.25
    dec.train()
    masks = dec._dropout_masks(50, 40, emb)  # (50, 40, H)
    assert masks.shape == (50, 40, H)
    assert set(masks.unique().tolist()) == {0.0, 1 / 0.75}
    assert abs((masks == 0).double().mean().item() - 0.25) < 0.03
    dec.eval()
    assert dec._dropout_masks(5, 4, emb) is None


@pytest.mark.parametrize("rnn_type, layers", [("GRU", 1), ("LSTM", 2)])
def test_other_decoders_run_the_step_loop(rnn_type, layers):
    dec, enc, emb = _setup(True, rnn_type=rnn_type, layers=layers)
    _compare(dec, enc, emb, True, fused_expected=False)


def test_without_gradients_the_step_loop_runs():
    dec, enc, emb = _setup(True)
    with torch.no_grad():
        out, _ = dec(emb, dec.init_state(enc))
    assert out.out.grad_fn is None
    plain, _ = _step_loop(dec, emb.detach(), dec.init_state(enc))
    assert torch.allclose(out.out, plain.out)
