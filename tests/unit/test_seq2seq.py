"""NMTModel: teacher-forced forward equals step-by-step decode_step, for every variant."""
import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.constants import UNK

VARIANTS = [
    dict(rnn_type="LSTM", global_attention="general"),
    dict(rnn_type="GRU", global_attention="dot"),
    dict(rnn_type="LSTM", global_attention="mlp", brnn=True, enc_layers=2, dec_layers=2),
    dict(rnn_type="GRU", global_attention="none"),
    dict(rnn_type="LSTM", global_attention="none", brnn=True, layers=2),
    dict(rnn_type="LSTM", global_attention="general", input_feed=0),
    dict(rnn_type="GRU", global_attention="mlp", input_feed=0, coverage_attn=True),
    dict(rnn_type="LSTM", global_attention="mlp", copy_attn=True),
    dict(rnn_type="LSTM", global_attention="mlp", copy_attn=True, coverage_attn=True, brnn=True),
    dict(rnn_type="GRU", global_attention="general", copy_attn=True, coverage_attn=True, input_feed=0),
    dict(rnn_type="LSTM", global_attention="dot", coverage_attn=True, share_embeddings=True),
    dict(rnn_type="LSTM", global_attention="general", enc_layers=1, dec_layers=2, brnn=True),
    dict(rnn_type="GRU", global_attention="mlp", copy_attn=True, brnn=True, enc_layers=3, dec_layers=2),
]


def _stepwise(model, batch):
    state = model.init_state(batch, model.encode(batch))
    logps, attns = [], {}
    for t in range(batch.tgt.size(1) - 1):
        logp, state, a = model.decode_step(batch.tgt_ex[:, t], state)  # extended ids: model maps to UNK
        logps.append(logp)
        for k, v in a.items():
            attns.setdefault(k, []).append(v)
    return torch.stack(logps, 1), {k: torch.stack(v, 1) for k, v in attns.items()}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={v[k]}" for k in v))
def test_forward_equals_decode_steps(variant):
    opt = make_opt(**variant)
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=4, S=7, T=6, seed=1)
    with torch.no_grad():
        logp, attns = model(batch)
        logp_s, attns_s = _stepwise(model, batch)
    X = len(vocabs.tgt) + (batch.n_oov if opt.copy_attn else 0)
    assert logp.shape == (4, 5, X)
    assert torch.allclose(logp, logp_s, atol=1e-5)
    assert set(attns) == set(attns_s)
    for k in attns:
        assert torch.allclose(attns[k], attns_s[k], atol=1e-6)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(4, 5), atol=1e-5)
    if opt.global_attention != "none":
        assert attns["std"].shape == (4, 5, 7)
        pad = ~(torch.arange(7).unsqueeze(0) < batch.src_lengths.unsqueeze(1))  # (B, S)
        assert (attns["std"].masked_select(pad.unsqueeze(1).expand(-1, 5, -1)) == 0).all()
    else:
        assert "std" not in attns
    if opt.coverage_attn:
        cov = attns["coverage"]
        assert (cov[:, 0] == 0).all()
        assert torch.allclose(cov[:, 1:], attns["std"].cumsum(1)[:, :-1], atol=1e-6)
    else:
        assert "coverage" not in attns


def test_state_reorder_selects_rows():
    opt = make_opt(copy_attn=True, coverage_attn=True, global_attention="mlp")
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=3, S=5, T=4, seed=2)
    state = model.init_state(batch, model.encode(batch))
    _, state, _ = model.decode_step(batch.tgt[:, 0], state)
    index = torch.tensor([2, 0, 0])
    r = state.reorder(index)
    h, c = state.hidden
    assert torch.equal(r.hidden[0], h[:, index]) and torch.equal(r.hidden[1], c[:, index])
    for name in ("memory", "mask", "keys", "input_feed", "coverage", "src_ex"):
        assert torch.equal(getattr(r, name), getattr(state, name)[index])
    assert r.n_oov == state.n_oov
    # decoding the reordered state equals reordering the decoded rows
    inp = torch.tensor([5, 6, 7])
    with torch.no_grad():
        lp_r, _, _ = model.decode_step(inp[index], r)
        lp, _, _ = model.decode_step(inp, state)
    assert torch.allclose(lp_r, lp[index], atol=1e-6)


def test_extended_ids_as_input_become_unk():
    opt = make_opt(copy_attn=True)
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=2, S=5, T=4, seed=3)
    state = model.init_state(batch, model.encode(batch))
    V = len(vocabs.tgt)
    with torch.no_grad():
        a, _, _ = model.decode_step(torch.tensor([V, V + 1]), state)
        b, _, _ = model.decode_step(torch.tensor([UNK, UNK]), state)
    assert torch.equal(a, b)
    assert model.copy and model.tgt_vocab_size == V


def test_plain_model_logp_over_target_vocabulary():
    opt = make_opt()
    vocabs = make_vocabs()
    model = build(opt, vocabs)
    batch = make_batch(vocabs, B=2, S=5, T=4, seed=4)
    logp, _ = model(batch)
    assert logp.shape[-1] == len(vocabs.tgt) and not model.copy


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    from dataclasses import replace as dc_replace
    opt = make_opt(copy_attn=True, coverage_attn=True, brnn=True)
    vocabs = make_vocabs()
    model = build(opt, vocabs).cuda()
    batch = make_batch(vocabs, B=3, S=6, T=5, seed=5)
    cpu_logp, _ = build(opt, vocabs)(batch)
    batch = dc_replace(batch, **{k: getattr(batch, k).cuda() for k in ("src", "src_ex", "tgt", "tgt_ex")})
    with torch.no_grad():
        logp, _ = model(batch)
    assert logp.is_cuda and torch.allclose(logp.cpu(), cpu_logp.detach(), atol=1e-4)


@pytest.mark.parametrize("variant", [dict(copy_attn=True, coverage_attn=True, layers=2),
                                     dict(global_attention="none", rnn_type="GRU", layers=2)])
def test_training_mode_with_dropout(variant):
    opt = make_opt(dropout=0.3, brnn=True, **variant)
    vocabs = make_vocabs()
    model = build(opt, vocabs).train()
    batch = make_batch(vocabs, B=3, S=6, T=5, seed=6)
    logp, _ = model(batch)
    logp[batch.tgt[:, 1:] != 1].max(-1).values.sum().backward()
    assert torch.isfinite(logp).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("variant", [dict(copy_attn=True, coverage_attn=True), dict(),
                                     dict(share_decoder_embeddings=True, word_vec_size=8)],
                         ids=["copy", "plain", "tied"])
def test_decoding_packs_the_generator_weight_once_and_follows_its_updates(variant):
    # without autograd decode_step uses the vocabulary projection packed once (PackedLinear); with
    # autograd the generator's own nn.Linear is the reference. An in-place update of the weight (an
    # optimizer step, load_state_dict) must be seen by the next decoding step.
    vocabs = make_vocabs()
    model = build(make_opt(**variant), vocabs).eval()
    batch = make_batch(vocabs, B=3, S=6, T=4, seed=6)
    state = model.init_state(batch, model.encode(batch))
    inp = torch.tensor([4, 5, 6])
    for round_ in range(2):
        with torch.no_grad():
            packed_logp, _, _ = model.decode_step(inp, state)
            packed = model._decoding_projection()
            assert packed is not None and model._decoding_projection() is packed  # packed once, weight unchanged
        plain_logp, _, _ = model.decode_step(inp, state)
        assert torch.allclose(packed_logp, plain_logp.detach(), atol=1e-5)
        if round_ == 0:
            before = packed_logp
            with torch.no_grad():
                model.generator.linear.weight.mul_(3.0)  # in place, as an optimizer step writes
    assert not torch.allclose(before, packed_logp, atol=1e-3)
    with torch.no_grad():
        assert model._decoding_projection() is packed
    assert model._decoding_projection() is None   # under autograd: the generator's own nn.Linear
    model.train()
    assert "_decoding_weight_cache" not in model.__dict__  # no idle packed copy while training


@pytest.mark.parametrize("variant", [dict(copy_attn=True, coverage_attn=True, brnn=True),
                                     dict(global_attention="dot"), dict(global_attention="general"),
                                     dict(global_attention="none", rnn_type="GRU", layers=2)],
                         ids=["copy_coverage_mlp", "dot", "general", "none"])
def test_a_state_holding_each_source_once_steps_as_one_holding_it_per_row(variant):
    """A beam's reorder in groups of K rows per source keeps the source once per example (source_rows K);
    two decoding steps from it give the log-probabilities and states of the state with a copy per row."""
    vocabs = make_vocabs()
    model = build(make_opt(**variant), vocabs).eval()
    batch = make_batch(vocabs, B=3, S=6, T=4, seed=7)
    K = 4
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch))
        rows = torch.arange(3).repeat_interleave(K)  # (3K,) each example's K hypotheses
        grouped, per_row = state.reorder(rows, rows_per_source=K), state.reorder(rows)
        assert grouped.source_rows == K and grouped.memory.size(0) == 3 and per_row.memory.size(0) == 3 * K
        inp = torch.arange(4, 4 + 3 * K) % 10 + 4
        for _ in range(2):
            logp_g, grouped, _ = model.decode_step(inp, grouped)
            logp_r, per_row, _ = model.decode_step(inp, per_row)
            assert torch.allclose(logp_g, logp_r, atol=1e-5)
            inp = logp_g.argmax(-1).clamp(max=model.tgt_vocab_size - 1)
        assert grouped.source_rows == K
        h_g = grouped.hidden[0] if isinstance(grouped.hidden, tuple) else grouped.hidden
        h_r = per_row.hidden[0] if isinstance(per_row.hidden, tuple) else per_row.hidden
        assert torch.allclose(h_g, h_r, atol=1e-5)
