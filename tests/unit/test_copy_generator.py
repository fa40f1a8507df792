"""CopyGenerator (See et al. eqs. 4, 8, 9) against a naive per-example loop; Generator basics. Its fused
training path (onmt/fused/gold_mixture.py) is tested in test_gold_mixture.py."""
import torch

from onmt.constants import PAD
from onmt.models.rnn_decoder import DecoderOutput
from onmt.modules.copy_generator import CopyGenerator, Generator
from onmt.modules.masked_softmax import masked_softmax


def _dec(B, S, H, E, lengths, extra_dims=()):
    shape = (B, *extra_dims)
    mask = torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
    if extra_dims:
        mask = mask.unsqueeze(1).expand(B, *extra_dims, S)
    attn = masked_softmax(torch.randn(*shape, S) * 3, mask)
    return DecoderOutput(out=torch.randn(*shape, H), rnn_out=torch.randn(*shape, H),
                         context=torch.randn(*shape, H), emb=torch.randn(*shape, E), attn=attn)


def _naive(gen, dec, src_ex, lengths, n_oov):
    """Probabilities built with explicit loops over examples and source words."""
    B, V = src_ex.size(0), gen.tgt_vocab_size
    out = torch.zeros(B, V + n_oov)
    for b in range(B):
        feats = torch.cat([dec.context[b], dec.rnn_out[b], dec.emb[b]])
        p_gen = torch.sigmoid(gen.switch.weight[0] @ feats + gen.switch.bias[0])
        logits = gen.linear.weight @ dec.out[b] + gen.linear.bias
        logits[PAD] = -float("inf")
        out[b, :V] = p_gen * torch.softmax(logits, 0)
        for i in range(int(lengths[b])):
            out[b, int(src_ex[b, i])] += (1 - p_gen) * dec.attn[b, i]
    return out


def _setup(seed=0):
    torch.manual_seed(seed)
    B, S, H, E, V, n_oov = 4, 6, 5, 3, 9, 3
    lengths = torch.tensor([6, 4, 2, 5])
    src_ex = torch.randint(4, V + n_oov, (B, S))
    src_ex[0, :3] = torch.tensor([V, 5, V])  # a repeated OOV and a repeated in-vocabulary word
    src_ex[0, 4] = 5
    src_ex[torch.arange(S).unsqueeze(0) >= lengths.unsqueeze(1)] = PAD
    return B, S, H, E, V, n_oov, lengths, src_ex


def test_copy_mixture_matches_naive_loop():
    B, S, H, E, V, n_oov, lengths, src_ex = _setup()
    gen = CopyGenerator(H, V, E)
    dec = _dec(B, S, H, E, lengths)
    logp = gen(dec, src_ex, n_oov)
    assert logp.shape == (B, V + n_oov)
    with torch.no_grad():
        ref = _naive(gen, dec, src_ex, lengths, n_oov)
    assert torch.allclose(logp.exp(), ref, atol=1e-6)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(B), atol=1e-5)
    assert torch.isfinite(logp).all()
    assert (logp[:, PAD].exp() < 1e-12).all()  # padding positions put no mass on PAD


def test_copy_mixture_sequence_shape_equals_per_step():
    B, S, H, E, V, n_oov, lengths, src_ex = _setup(1)
    gen = CopyGenerator(H, V, E)
    dec = _dec(B, S, H, E, lengths, extra_dims=(3,))
    seq = gen(dec, src_ex, n_oov)
    assert seq.shape == (B, 3, V + n_oov)
    for t in range(3):
        step = DecoderOutput(**{k: v[:, t] for k, v in vars(dec).items() if v is not None})
        assert torch.allclose(seq[:, t], gen(step, src_ex, n_oov), atol=1e-6)


def test_copy_gradients_finite_with_zero_probabilities():
    B, S, H, E, V, n_oov, lengths, src_ex = _setup(2)
    gen = CopyGenerator(H, V, E)
    dec = _dec(B, S, H, E, lengths)
    logp = gen(dec, src_ex, n_oov)
    logp[:, PAD].sum().backward()  # log of a zero probability: clamped, gradient finite
    assert all(torch.isfinite(p.grad).all() for p in gen.parameters())


def test_plain_generator():
    torch.manual_seed(0)
    gen = Generator(5, 9)
    dec = _dec(2, 4, 5, 3, torch.tensor([4, 2]))
    logp = gen(dec)
    assert logp.shape == (2, 9)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(2), atol=1e-6)
    assert (logp[:, PAD] < -1e30).all() or (logp[:, PAD].exp() == 0).all()
