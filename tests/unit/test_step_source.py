"""StepSource (onmt/fused/step_source.py) against plain bmm products and the plain intra-temporal
attention (Paulus et al. eqs. 2-5) under autograd."""
import pytest
import torch

from onmt.fused.step_source import StepSource
from onmt.reinforced.intra_attention import IntraTemporalAttention


def _run(use_source, keys, memory, queries, weights):
    """A few decoding-like steps: scores -> softmax -> context -> next query; a scalar loss."""
    source = StepSource(keys, memory) if use_source else None
    q, loss = queries, 0.0
    outs = []
    for t in range(weights.size(0)):
        if source is not None:
            scores = source.scores(q)  # (B, S)
        else:
            scores = torch.bmm(keys, q.unsqueeze(2)).squeeze(2)  # (B, S)
        attn = torch.softmax(scores, 1)
        if source is not None:
            ctx = source.context(attn)  # (B, Hm)
        else:
            ctx = torch.bmm(attn.unsqueeze(1), memory).squeeze(1)  # (B, Hm)
        outs.append(ctx)
        loss = loss + (ctx * weights[t]).sum() + (scores ** 2).mean()
        q = torch.tanh(ctx[:, : q.size(1)] + q)  # the next query depends on this step
    return loss, torch.stack(outs, 1)


def test_values_and_gradients_equal_plain_products():
    torch.manual_seed(0)
    B, S, H, Hm, T = 3, 7, 5, 6, 4
    leaves = [torch.randn(B, S, H, dtype=torch.float64, requires_grad=True),
              torch.randn(B, S, Hm, dtype=torch.float64, requires_grad=True),
              torch.randn(B, H, dtype=torch.float64, requires_grad=True)]
    weights = torch.randn(T, B, Hm, dtype=torch.float64)
    results = []
    for use_source in (False, True):
        keys, memory = leaves[0] * 1.5, leaves[1] * 0.5  # non-leaf inputs, as in the model
        loss, outs = _run(use_source, keys, memory, leaves[2], weights)
        grads = torch.autograd.grad(loss, leaves)
        results.append((loss, outs, grads))
    (l0, o0, g0), (l1, o1, g1) = results
    torch.testing.assert_close(l1, l0)
    torch.testing.assert_close(o1, o0)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b)


def test_without_gradients_it_is_the_plain_product():
    keys, memory, q = torch.randn(2, 4, 3), torch.randn(2, 4, 5), torch.randn(2, 3)
    with torch.no_grad():
        src = StepSource(keys, memory)
        assert src.handle is None
        torch.testing.assert_close(src.scores(q), torch.bmm(keys, q.unsqueeze(2)).squeeze(2))
        a = torch.softmax(src.scores(q), 1)
        torch.testing.assert_close(src.context(a), torch.bmm(a.unsqueeze(1), memory).squeeze(1))


def test_temporal_attention_with_step_source_equals_the_plain_attention():
    """IntraTemporalAttention(source=StepSource) over several steps == the plain path (source=None):
    attention, context, lse and the gradients of the encoder states and of W^e_attn."""
    torch.manual_seed(0)
    B, S, H, T = 3, 6, 4, 5
    att = IntraTemporalAttention(H).double()
    memory_leaf = torch.randn(B, S, H, dtype=torch.float64, requires_grad=True)
    queries = torch.randn(T, B, H, dtype=torch.float64)
    mask = torch.arange(S).unsqueeze(0) < torch.tensor([[6], [4], [1]])  # (B, S), one single-position row
    results = []
    for fused in (False, True):
        memory = memory_leaf * 1.0  # a non-leaf, as the encoder's output
        keys = att.keys(memory)
        source = StepSource(keys, memory) if fused else None
        lse, outs, q = None, [], queries[0]
        for t in range(T):
            c, a, lse = att(q, keys, memory, mask, lse, source=source)
            outs.append(torch.cat([c, a, lse], 1))
            q = torch.tanh(c + queries[t])  # the next query depends on this step
        outs = torch.stack(outs, 1)  # (B, T, H + 2S)
        loss = (outs.masked_fill(~torch.isfinite(outs), 0.0) * torch.linspace(-1, 1, outs.size(-1),
                                                                              dtype=outs.dtype)).sum()
        results.append((outs, torch.autograd.grad(loss, (memory_leaf, att.weight))))
    (plain, g_plain), (fused, g_fused) = results
    torch.testing.assert_close(fused, plain)
    for a, b in zip(g_fused, g_plain):
        torch.testing.assert_close(a, b)


def test_decoding_source_equals_the_plain_products():
    """DecodingSource (decoding without autograd): K q on a transposed view, a M, same values as bmm."""
    from onmt.fused.step_source import DecodingSource
    torch.manual_seed(0)
    keys, memory, q = torch.randn(6, 9, 8), torch.randn(6, 9, 5), torch.randn(6, 8)
    attn = torch.softmax(torch.randn(6, 9), 1)
    source = DecodingSource(keys, memory)
    assert torch.allclose(source.scores(q), torch.bmm(keys, q.unsqueeze(2)).squeeze(2), atol=1e-6)
    assert torch.allclose(source.context(attn), torch.bmm(attn.unsqueeze(1), memory).squeeze(1), atol=1e-6)
    assert source.scores(q).shape == (6, 9) and source.context(attn).shape == (6, 5)


def test_grouped_decoding_source_reads_each_source_once_with_the_same_values():
    """group G: rows come in groups of G with one source (a beam's K hypotheses), the keys and memory held
    once per source; the values those of the per-row products over per-row copies."""
    from onmt.fused.step_source import DecodingSource
    torch.manual_seed(0)
    B, G, S = 4, 3, 9
    keys, memory = torch.randn(B, S, 8), torch.randn(B, S, 5)   # (B, S, H), (B, S, Hm) one per source
    q, attn = torch.randn(B * G, 8), torch.softmax(torch.randn(B * G, S), 1)
    per_row_keys, per_row_memory = keys.repeat_interleave(G, 0), memory.repeat_interleave(G, 0)
    want_s = torch.bmm(per_row_keys, q.unsqueeze(2)).squeeze(2)                 # (B*G, S)
    want_c = torch.bmm(attn.unsqueeze(1), per_row_memory).squeeze(1)            # (B*G, Hm)
    source = DecodingSource(keys, memory, G)
    torch.testing.assert_close(source.scores(q), want_s)
    torch.testing.assert_close(source.context(attn), want_c)
    ungrouped = DecodingSource(per_row_keys, per_row_memory)
    torch.testing.assert_close(ungrouped.scores(q), want_s)
    torch.testing.assert_close(ungrouped.context(attn), want_c)


def test_a_state_keeps_its_source_fields_once_per_source_while_its_rows_come_in_groups():
    """interface.py: the reinforced state's source fields hold one row per source_rows rows; grouped()
    (helpers/search.py) takes each group's first row (views), a reorder within the sources keeps them, a
    reorder in groups of one source selects each group's source, any other reorder gives one per row;
    per_row() repeats them. States without the field are returned as they are."""
    from helpers.search import grouped as regroup
    from helpers.toy_models import ToyState
    from onmt.reinforced.decoder import ReinforcedState
    R, S, H = 6, 4, 2
    memory = torch.arange(R, dtype=torch.float).view(R, 1, 1).expand(R, S, H).contiguous()  # row r holds r
    state = ReinforcedState(hidden=(torch.zeros(1, R, H), torch.zeros(1, R, H)), memory=memory, enc_keys=memory,
                            mask=torch.ones(R, S, dtype=torch.bool), src_ex=torch.zeros(R, S, dtype=torch.long),
                            first_pos=torch.zeros(R, S, dtype=torch.long), n_oov=0)
    grouped = regroup(state, 3)
    assert state.source_rows == 1 and grouped.source_rows == 3
    assert grouped.memory[:, 0, 0].tolist() == [0, 3] and grouped.memory.data_ptr() == memory.data_ptr()
    assert torch.equal(grouped.per_row("memory")[:, 0, 0], torch.tensor([0., 0, 0, 3, 3, 3]))
    assert regroup(grouped, 3) is grouped
    rows = torch.tensor([2, 0, 1, 5, 5, 3])
    within = grouped.reorder(rows, within_source=True)
    assert within.source_rows == 3 and within.memory is grouped.memory
    regrouped = grouped.reorder(torch.tensor([4, 5, 3, 3, 0, 1, 1, 2]), rows_per_source=4)  # two groups of 4
    assert regrouped.source_rows == 4 and regrouped.memory[:, 0, 0].tolist() == [3, 0]
    anywhere = grouped.reorder(rows)
    assert anywhere.source_rows == 1 and anywhere.memory[:, 0, 0].tolist() == [0, 0, 0, 3, 3, 3]
    with pytest.raises(ValueError):
        regroup(regroup(anywhere, 2), 3)
    toy = ToyState.__new__(ToyState)
    assert regroup(toy, 3) is toy
