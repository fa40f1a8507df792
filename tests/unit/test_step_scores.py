"""onmt/modules/step_scores.py: DenseScores, the step scores of a log p (R, X) tensor, against the plain
tensor operations; and the searches' scores of each family's step (onmt/translate/decoding.py
`decode_step_scores`) hold decode_step's log p."""
import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt.fused.mixture_scores import MixtureScores
from onmt.model_builder import build_model
from onmt.modules.step_scores import DenseScores

NEG_INF = float("-inf")


def test_bans_write_minus_infinity_where_asked_only():
    g = torch.Generator().manual_seed(0)
    logp = torch.randn(4, 9, generator=g)
    want = logp.clone()
    scores = DenseScores(logp)
    scores.ban_(torch.tensor([1, 2]).expand(4, 2))
    want[:, [1, 2]] = NEG_INF
    tokens = torch.tensor([[3, 4], [5, 5], [0, 8], [6, 7]])
    where = torch.tensor([[True, False], [False, True], [True, True], [False, False]])
    scores.ban_(tokens, where)
    for r, j in where.nonzero().tolist():
        want[r, tokens[r, j]] = NEG_INF
    assert torch.equal(scores.full(), want)
    assert scores.full() is logp   # in place


def test_allow_only_best_and_beam_topk():
    g = torch.Generator().manual_seed(1)
    logp = torch.randn(6, 300, generator=g)
    values, ids = DenseScores(logp.clone()).best()
    assert torch.equal(values, logp.max(1).values) and torch.equal(ids, logp.argmax(1))
    running = torch.randn(2, 3, generator=g)
    got = DenseScores(logp.clone()).beam_topk(running, 3)
    want = (logp + running.reshape(6, 1)).view(2, 900).topk(3, dim=1)
    assert torch.equal(got[0], want.values) and torch.equal(got[1], want.indices)
    only = DenseScores(logp.clone())
    only.allow_only_(3)
    assert torch.equal(only.full()[:, 3], logp[:, 3])
    assert torch.isneginf(only.full()[:, [0, 1, 2, 4]]).all()


FAMILIES = {
    "rnn": dict(brnn=True, global_attention="general"),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp"),
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6),
}


@pytest.mark.parametrize("kernels", ["plain", "fused"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_familys_step_scores_hold_its_decode_step(family, kernels):
    """The searches' view of a step: the copy models' fused decoding (reinforced, See et al.'s) gives
    MixtureScores (nothing (B, X) written), every other case decode_step's tensor; the full log p equals
    decode_step's either way."""
    from onmt.execution import Execution
    torch.manual_seed(0)
    vocabs = make_vocabs()
    # decoding in fp32 as translate.py does: the fused path's prepared weights
    model = build_model(make_opt(**FAMILIES[family]), vocabs, execution=Execution(kernels, precision="fp32")).eval()
    batch = make_batch(vocabs, B=3, S=7, T=6, copy_source=True)
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch))
        inputs = torch.full((3,), 5)
        want, _, want_attns = model.decode_step(inputs, state)
        scores, _, attns = model.decode_step_scores(inputs, state)
    expected = MixtureScores if family != "rnn" and kernels == "fused" else DenseScores
    assert type(scores) is expected
    torch.testing.assert_close(scores.full(), want.float(), atol=2e-5, rtol=1e-6)
    assert attns.keys() == want_attns.keys()
    for k in attns:
        torch.testing.assert_close(attns[k], want_attns[k])
