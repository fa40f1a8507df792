"""StepEmbedding (onmt/fused/step_embedding.py) against the plain lookups: F.embedding and the
reinforced decoder's own embedding, values and gradients."""
import torch
import torch.nn.functional as F

from helpers.reinforced import _batch, _model
from onmt.constants import PAD
from onmt.fused.step_embedding import StepEmbedding


def test_step_embedding_matches_f_embedding():
    torch.manual_seed(0)
    weight = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
    ids = [torch.tensor([1, 3, 3]), torch.tensor([PAD, 2, 9])]
    table = StepEmbedding(weight, padding_idx=PAD)
    coef = torch.randn(3, 4, dtype=torch.float64)
    got = torch.autograd.grad(sum((table(i) * coef * (k + 1)).sum() for k, i in enumerate(ids)), weight)[0]
    want = torch.autograd.grad(sum((F.embedding(i, weight, padding_idx=PAD) * coef * (k + 1)).sum()
                                   for k, i in enumerate(ids)), weight)[0]
    assert torch.allclose(got, want)


def test_decoder_steps_with_step_embedding_equal_the_plain_embedding():
    """decoder.step(embed=decoder.step_embedding()) against decoder.step with its PartialEmbedding."""
    model, batch = _model("-scheduled_sampling", "0", seed=1).double().train(), _batch(4)
    decoder = model.decoder
    weight = decoder.embeddings.full.weight
    results = []
    for fused in (False, True):
        state = decoder.init_state(model.encode(batch), batch.src_ex, batch.n_oov)
        embed = decoder.step_embedding() if fused else None
        outs = []
        for t in range(batch.tgt.size(1) - 1):
            o_t, _, state = decoder.step(batch.tgt[:, t], state, embed=embed)
            outs.append(o_t)
        outs = torch.stack(outs, 1)  # (B, T-1, 3H)
        loss = (outs * torch.linspace(-1, 1, outs.size(-1), dtype=outs.dtype)).sum()
        results.append((outs, torch.autograd.grad(loss, weight)[0]))
    (plain, g_plain), (fused, g_fused) = results
    torch.testing.assert_close(fused, plain)
    torch.testing.assert_close(g_fused, g_plain)
    assert (g_fused[PAD] == 0).all()
