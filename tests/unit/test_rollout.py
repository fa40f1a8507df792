"""onmt/reinforced/rollout.py: the reinforced model's rollouts with kernels "fused" (packed W_out, the
argmax without the mixture, one fused gold pass) against the plain formulas (F.linear, forward's argmax and
its distribution gathered at the drawn ids), same parameters and seed. (Against the step-by-step
reference through decode_step: tests/unit/test_rl_loss.py.)"""
import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt.model_builder import build_model
from onmt.reinforced.rollout import rollout


def _pair():
    opt = make_opt(reinforced=True, brnn=True, rnn_size=16, word_vec_size=8, param_init=1.0, dropout=0.0)
    torch.manual_seed(0)
    fused = build_model(opt, make_vocabs(), execution="fused")
    plain = build_model(opt, make_vocabs(), execution="plain")
    plain.load_state_dict(fused.state_dict())
    return plain, fused


@pytest.mark.parametrize("seed", [0, 1])
def test_fused_rollouts_equal_the_plain_ones(seed):
    plain, fused = _pair()
    batch = make_batch(make_vocabs(), B=4, S=8, T=6, seed=seed)
    out = {}
    for name, model in (("plain", plain), ("fused", fused)):
        model.eval()
        torch.manual_seed(seed)
        sample, greedy = rollout(model, batch, model.encode(batch), 7, ("sample", "greedy"))
        params = [p for p in model.parameters() if p.requires_grad]
        grads = torch.autograd.grad(sample.log_probs.sum(), params, allow_unused=True)
        out[name] = (sample, greedy, [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)])
    (ps, pg, pgrad), (fs, fg, fgrad) = out["plain"], out["fused"]
    assert torch.equal(ps.tokens, fs.tokens) and torch.equal(ps.copied, fs.copied)   # the same draws
    assert torch.equal(pg.tokens, fg.tokens) and torch.equal(pg.lengths, fg.lengths)
    assert pg.log_probs is None and fg.log_probs is None
    assert ps.log_probs.abs().sum() > 0
    torch.testing.assert_close(fs.log_probs, ps.log_probs, rtol=1e-5, atol=1e-5)
    for p, f in zip(pgrad, fgrad):
        torch.testing.assert_close(f, p, rtol=1e-4, atol=1e-5)


def test_rollout_refuses_unknown_modes_and_empty_lengths():
    _, fused = _pair()
    batch = make_batch(make_vocabs(), B=2, S=5, T=4)
    enc = fused.encode(batch)
    with pytest.raises(ValueError, match="rollout modes"):
        rollout(fused, batch, enc, 5, ("beam",))
    with pytest.raises(ValueError, match="max_length"):
        rollout(fused, batch, enc, 0, ("greedy",))
