"""DecoderStateBase.reorder: a within-source reorder (beam backpointers) equals a full reorder."""
import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs


@pytest.mark.parametrize("overrides", [
    dict(copy_attn=True, coverage_attn=True, global_attention="mlp", brnn=True),
    dict(global_attention="none", rnn_type="GRU"),
    dict(reinforced=True, brnn=True),
])
def test_within_source_reorder_equals_full_reorder(overrides):
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build(make_opt(param_init=1.0, **overrides), vocabs).eval()  # peaked attention
    batch = make_batch(vocabs, B=2, S=7, T=6)
    K = 3
    state = model.init_state(batch, model.encode(batch)).reorder(torch.arange(2).repeat_interleave(K))
    inputs = torch.randint(4, len(vocabs.tgt), (2 * K,))
    for _ in range(2):  # some per-hypothesis history (coverage, lse, intra-decoder states)
        _, state, _ = model.decode_step(inputs, state)
        inputs = torch.randint(4, len(vocabs.tgt) + batch.n_oov, (2 * K,))
    rows = torch.tensor([2, 0, 0, 4, 5, 5])  # backpointers, each within its example
    full = state.reorder(rows)
    fast = state.reorder(rows, within_source=True)
    a, _, _ = model.decode_step(inputs, full)
    b, _, _ = model.decode_step(inputs, fast)
    assert torch.equal(a, b)
    # and the reorder really matters: without it the prediction differs
    c, _, _ = model.decode_step(inputs, state)
    assert not torch.allclose(a, c)
