"""-amp: the float32 islands (onmt/modules/precision.py) under autocast, and the trainer's -amp on the CPU.
The generators' vocabulary products themselves run in autocast's precision, their results widened at once.

The islands take their device from the tensors, so CPU bfloat16 autocast runs the same code as CUDA's:
these tests run under `torch.autocast("cpu", dtype=torch.bfloat16)`, give the generators decoder outputs
in bfloat16 (what CUDA autocast's LSTM and attention products hand them) and compare with a float64
reference on the same (widened) inputs, and with a naive all-bfloat16 computation, to show the islands
matter. (The baselines' nn.LSTM cannot run under CPU bfloat16 autocast on a CPU without AVX-512 BF16:
oneDNN has no primitive for it; so their generators are tested on hand-made decoder outputs.)
"""
import glob
import os

import pytest
import torch
import torch.nn as nn

import onmt.hardware as hardware
import onmt.trainer as trainer_module
from helpers.e2e import random_pair_data
from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.bin import train as train_bin
from onmt.constants import PAD
from onmt.fused.gold_mixture import gold_mixture, packed_weight
from onmt.fused.packed_linear import PackedLinear
from onmt.interface import gold_targets
from onmt.losses.ml import MLLoss, coverage_penalty
from onmt.losses.rewards import REWARDS
from onmt.losses.rl import MixedLoss
from onmt.models.fused import copy_gold_log_prob
from onmt.models.rnn_decoder import DecoderOutput
from onmt.modules.copy_generator import CopyGenerator, Generator
from onmt.modules.copy_mixture import first_occurrence
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.modules.precision import float32_region, widen
from onmt.reinforced.fused import FusedPointerGenerator
from onmt.trainer import Trainer

BF16 = torch.bfloat16


def bf16_autocast():
    return torch.autocast("cpu", dtype=BF16)


def test_widen_and_the_region():
    x32, x64, ids = torch.randn(3, 4), torch.randn(3, 4, dtype=torch.float64), torch.arange(3)
    assert widen(x32) is x32 and widen(x64) is x64 and widen(ids) is ids and widen(None) is None
    assert widen(x32.to(BF16)).dtype == torch.float32 and widen(x32.half()).dtype == torch.float32
    w = torch.randn(4, 5)
    with bf16_autocast():
        assert (x32 @ w).dtype == BF16  # autocast is really on: the tests below mean something
        with float32_region(x32):
            assert (x32 @ w).dtype == torch.float32
            assert torch.equal(x32 @ w, x32 @ w)
        assert (x32 @ w).dtype == BF16


# --------------------------------------------------------------------------- the reinforced generator
def _generator(tied=True, seed=0, D=96, E=32, V=400):
    """A pointer-generator with realistic logits (std ~5, as a trained model's)."""
    torch.manual_seed(seed)
    full = nn.Embedding(V + 50, E, padding_idx=PAD)
    gen = FusedPointerGenerator(D, V, embedding=PartialEmbedding(full, V), tied=tied)
    with torch.no_grad():
        if tied:
            gen.proj.mul_(3.0)
            gen.bias.normal_(0, 0.5)
        else:
            gen.out.weight.normal_(0, 0.6)
        gen.switch.bias.fill_(-0.5)
    return gen


def _reference(gen):
    """The same generator in float64 (its own embedding copy)."""
    ref = FusedPointerGenerator(gen.proj.size(1) if gen.tied else gen.out.in_features, gen.tgt_vocab_size,
                           embedding=PartialEmbedding(nn.Embedding(*gen.embedding.full.weight.shape,
                                                                   padding_idx=PAD), gen.tgt_vocab_size),
                           tied=gen.tied)
    ref.load_state_dict(gen.state_dict())
    return ref.double()


def _inputs(gen, N=200, S=10, n_oov=6, seed=1):
    """o and the attention in bfloat16, as the decoder gives them under autocast, and gold ids."""
    g = torch.Generator().manual_seed(seed)
    D, V = gen.switch.in_features, gen.tgt_vocab_size
    o = torch.tanh(torch.randn(N, D, generator=g)).to(BF16)
    src_ex = torch.randint(4, V + n_oov, (N, S), generator=g)
    attn = torch.softmax(torch.randn(N, S, generator=g) * 3, 1).to(BF16)
    gold = torch.where(torch.rand(N, generator=g) < 0.3, src_ex[:, 0], torch.randint(4, V, (N,), generator=g))
    return o, attn, src_ex, first_occurrence(src_ex), gold, n_oov


@pytest.mark.parametrize("tied", [True, False])
def test_out_weight_is_float32_under_autocast(tied):
    """(a) W_out = tanh(E W_proj): the product in autocast's bfloat16 (the speed of -amp), widened at
    once, the tanh in float32, so W_out is float32 and within bfloat16's rounding of the float32 one
    (a free W_out, untied, is the parameter itself, bit for bit)."""
    gen = _generator(tied)
    want_w, want_b = gen.out_weight(n_oov=3)
    with bf16_autocast():
        w, b = gen.out_weight(n_oov=3)
        naive = torch.tanh(gen.embedding.target_weight() @ gen.proj) if tied else None
    assert w.dtype == b.dtype == torch.float32 and torch.equal(b, want_b)
    if not tied:
        assert torch.equal(w, want_w)
        return
    V = gen.tgt_vocab_size
    low = torch.tanh((gen.embedding.target_weight().to(BF16) @ gen.proj.to(BF16)).float())  # (V, D)
    assert torch.equal(w[:V], low) and not w[V:].any()
    assert 0 < (w - want_w).abs().mean() < 2e-3 and (w - want_w).abs().max() < 0.05
    assert naive.dtype == BF16   # a tanh in bfloat16 too: rounded twice
    assert (naive.float() - want_w[:V]).abs().mean() > (w - want_w)[:V].abs().mean()


def test_pointer_generator_under_autocast_is_float32_with_low_precision_products():
    """(b) log p(gold) (the fused path), the full mixture, the argmax under autocast: float32, computed
    from vocabulary products in bfloat16 (logits and W_out within bfloat16's rounding: ~0.015 nats per
    token here, logits of std ~5) and everything after them in float32: each token's log-likelihood is
    closer to the float64 one than a naive all-bfloat16 mixture's (whose log-sum-exp and sums are rounded
    too; 0.014 against 0.032 nats), and the errors mostly cancel over tokens (the signed sum is a small
    part of the absolute one: under 7 % over six generator seeds). Gradients float32, ~1 % off."""
    gen = _generator()
    ref = _reference(gen)
    o, attn, src_ex, first, gold, n_oov = _inputs(gen, N=2000)
    want, _ = ref.gold_log_prob(o.double(), attn.double(), src_ex, first, gold)  # (N,)
    want_full = ref(o.double(), attn.double(), src_ex, first, n_oov)  # (N, X)
    o_req = o.clone().requires_grad_()
    with bf16_autocast():
        ll, pred = gen.gold_log_prob(o_req, attn, src_ex, first, gold)
        logp, p_copy = gen(o, attn, src_ex, first, n_oov, return_p_copy=True)
        predicted = gen.predict(o, attn, src_ex, first, weight=packed_weight(gen.out_weight()))
        logits = packed_weight(gen.out_weight())(o)
        naive, _ = gold_mixture(o, torch.tanh(gen.embedding.target_weight() @ gen.proj), gen.bias,
                                -gen.switch(o), attn, src_ex, first, gold)
    assert ll.dtype == logp.dtype == p_copy.dtype == logits.dtype == torch.float32 and naive.dtype == BF16
    err, naive_err = ll.double() - want, naive.double() - want   # (N,) each
    assert 0 < err.abs().mean() < 0.02 and err.abs().max() < 0.15
    assert err.abs().mean() < 0.6 * naive_err.abs().mean()
    assert err.sum().abs() < 0.15 * err.abs().sum()
    real = want_full > -1e3    # the impossible ids read -1e4 in both
    assert (logp.double() - want_full)[real].abs().mean() < 0.02
    assert torch.equal(logp[~real], want_full[~real].float())
    assert (pred == want_full.argmax(1)).float().mean() > 0.99 and (predicted == pred).float().mean() > 0.99
    ll.sum().backward()
    assert o_req.grad.dtype == BF16 and gen.proj.grad.dtype == torch.float32
    ref_o = o.double().requires_grad_()
    ref.gold_log_prob(ref_o, attn.double(), src_ex, first, gold)[0].sum().backward()
    for got, exact in ((gen.proj.grad, ref.proj.grad), (o_req.grad, ref_o.grad)):
        assert (got.double() - exact).norm() < 0.02 * exact.norm()


def test_draws_under_autocast_equal_the_float32_draws():
    gen = _generator()
    o, attn, src_ex, first, gold, n_oov = _inputs(gen, N=50)
    weight = gen.out_weight()
    logits32 = packed_weight(weight)(o.float())
    torch.manual_seed(3)
    want = gen.draw(logits32, o.float(), attn.float(), src_ex)
    with bf16_autocast():
        logits = packed_weight(weight)(o)
        torch.manual_seed(3)
        got = gen.draw(logits, o, attn, src_ex)
    assert torch.equal(logits, logits32)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_packed_linear_is_float32_under_autocast():
    w, b, x = torch.randn(300, 16), torch.randn(300), torch.randn(8, 16)
    for lin in (PackedLinear(w, b), PackedLinear(w, b, pack=False)):
        want = lin(x)
        with bf16_autocast():
            got = lin(x.to(BF16))
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, lin(x.to(BF16).float()), rtol=0, atol=0)
        assert (want - got).abs().max() < 0.1  # only x's bfloat16 rounding


# --------------------------------------------------------------------------- the baselines' generators
def _dec(B=4, T=5, S=7, H=48, E=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([S, 5, 3, 6])[:B]
    mask = (torch.arange(S) < lengths[:, None])[:, None, :].expand(B, T, S)
    attn = torch.softmax((torch.randn(B, T, S, generator=g) * 3).masked_fill(~mask, -1e9), -1)
    dec = DecoderOutput(out=torch.tanh(torch.randn(B, T, H, generator=g)), rnn_out=torch.randn(B, T, H, generator=g),
                        context=torch.randn(B, T, H, generator=g), emb=torch.randn(B, T, E, generator=g),
                        attn=attn, coverage=attn.cumsum(1) - attn)
    return DecoderOutput(**{k: v.to(BF16) for k, v in vars(dec).items()}), lengths


def _as(dec, dtype):
    return DecoderOutput(**{k: v.to(dtype) for k, v in vars(dec).items()})


def test_copy_generator_and_generator_are_float32_under_autocast():
    torch.manual_seed(0)
    dec, lengths = _dec()
    B, T, S = dec.attn.shape
    V, n_oov = 300, 4
    src_ex = torch.randint(4, V + n_oov, (B, S))
    gold = torch.where(torch.rand(B, T) < 0.5, src_ex[:, :1], torch.randint(4, V, (B, T)))  # reachable ids
    for gen in (CopyGenerator(48, V, 16), Generator(48, V)):
        with torch.no_grad():
            gen.linear.weight.normal_(0, 0.8)  # logits of std ~5
        ref = type(gen)(48, V, 16) if isinstance(gen, CopyGenerator) else type(gen)(48, V)
        ref.load_state_dict(gen.state_dict())
        ref = ref.double()
        want = ref(_as(dec, torch.float64), src_ex, n_oov)
        with bf16_autocast():
            logp = gen(dec, src_ex, n_oov)
            naive = torch.log_softmax(gen.linear(dec.out), -1)  # the product and log-softmax in bfloat16
        assert logp.dtype == torch.float32
        torch.testing.assert_close(logp.double(), want.float().double(), rtol=0, atol=1e-4)
        if isinstance(gen, Generator):
            real = torch.arange(V) != PAD
            naive_err = (naive.double() - want)[..., real].abs().mean()
            assert naive_err > 100 * (logp.double() - want)[..., real].abs().mean()
        else:   # the fused training path: its vocabulary product in bfloat16, the rest in float32
            with bf16_autocast():
                ll, _ = copy_gold_log_prob(gen, dec, src_ex, first_occurrence(src_ex), gold)
            assert ll.dtype == torch.float32
            err = (ll.double() - want.gather(-1, gold[..., None]).squeeze(-1)).abs()
            assert 0 < err.mean() < 0.02 and err.max() < 0.1


def test_coverage_penalty_is_float32_under_autocast():
    dec, _ = _dec()
    mask = torch.ones(dec.attn.shape[:2], dtype=torch.bool)
    attns = {"std": dec.attn, "coverage": dec.coverage}
    want = coverage_penalty({k: v.double() for k, v in attns.items()}, mask)
    with bf16_autocast():
        got = coverage_penalty(attns, mask)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- the reinforced model end to end
VOCABS = make_vocabs(src_vocab_size=60, tgt_vocab_size=40)


def _model(**overrides):
    opt = make_opt(**({"reinforced": True, "rnn_size": 32, "word_vec_size": 16, "brnn": True} | overrides))
    model = build(opt, VOCABS, seed=0)
    model.train()
    return model


@pytest.mark.parametrize("scheduled_sampling", [0.0, 0.5])
def test_reinforced_model_losses_are_float32_and_close(scheduled_sampling):
    """(b) the whole model under autocast (the decoder's products in bfloat16): float32 log-likelihoods
    and loss, per-token NLL within 1e-2 of float32 training; backward gives float32 gradients."""
    model = _model(scheduled_sampling=scheduled_sampling)
    batch = make_batch(VOCABS, B=4, S=9, T=8, seed=1)
    _, mask = gold_targets(batch, model.tgt_vocab_size + batch.n_oov)
    torch.manual_seed(0)
    ll32, _, _ = model.gold_log_likelihood(batch)
    loss32, _ = MLLoss()(model, batch)
    with bf16_autocast():
        torch.manual_seed(0)
        ll, _, attns = model.gold_log_likelihood(batch)
        loss, stats = MLLoss()(model, batch)
        logp, _ = model(batch)
    assert ll.dtype == loss.dtype == logp.dtype == attns["p_copy"].dtype == torch.float32
    diff = (ll - ll32)[mask].abs()
    assert diff.mean() < 1e-2 and diff.max() < 5e-2
    assert abs(loss.item() - loss32.item()) < 1e-2 * stats.n_words
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)


def test_rollout_rewards_and_mixed_loss_are_float32():
    """(c) the rollouts' log p, the rewards and the mixed loss under autocast."""
    model = _model()
    batch = make_batch(VOCABS, B=3, S=8, T=6, seed=2)
    loss_fn = MixedLoss(MLLoss(), gamma=0.5, max_length=6)
    with bf16_autocast():
        enc = model.encode(batch)
        sampled, greedy = model.rollout(batch, enc, 6, ("sample", "greedy"))
        logp, _, _ = model.decode_step(batch.tgt[:, 0], model.init_state(batch, enc))
        hyp, ref = sampled.tokens, batch.tgt_ex[:, 1:]
        rewards = [f(hyp, sampled.lengths, ref, torch.full((3,), ref.size(1))) for f in REWARDS.values()]
        loss, stats = loss_fn(model, batch)
        rl, _ = loss_fn.rl_term(model, batch)
    assert sampled.log_probs.dtype == logp.dtype == torch.float32
    assert all(r.dtype == torch.float32 for r in rewards)
    assert loss.dtype == rl.dtype == torch.float32
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# --------------------------------------------------------------------------- the trainer
def _trainer(device, amp, amp_dtype):
    model = nn.Linear(2, 2)
    return Trainer(model, None, torch.optim.SGD(model.parameters(), lr=0.1), save_model="unused",
                   device=device, amp=amp, amp_dtype=amp_dtype)


@pytest.mark.filterwarnings("ignore::UserWarning")  # this machine has no CUDA: GradScaler / autocast warn
def test_trainer_picks_autocast_dtype_and_scaler():
    """bf16: autocast in bfloat16 without loss scaling; fp16: float16 with a GradScaler; CPU: neither."""
    bf16, fp16 = _trainer("cuda", True, "bf16"), _trainer("cuda", True, "fp16")
    assert bf16.amp and bf16.scaler is None and bf16._autocast().fast_dtype == torch.bfloat16
    assert fp16.amp and fp16.scaler is not None and fp16._autocast().fast_dtype == torch.float16
    for dtype in ("bf16", "fp16"):
        cpu = _trainer("cpu", True, dtype)
        assert cpu.amp == (dtype == "bf16" and hardware.native_bf16_cpu()) and cpu.scaler is None


@pytest.mark.filterwarnings("ignore::UserWarning")  # this machine has no CUDA: autocast("cuda") warns
def test_cpu_amp_is_cuda_amp_on_the_cpu_where_bf16_is_native(monkeypatch):
    """Simulated native bfloat16: -amp bf16 on the CPU is CPU autocast in bfloat16, without a scaler,
    the islands the same code (they take the device from the tensors); fp16 stays float32 on the CPU;
    without native bfloat16 nothing changes."""
    monkeypatch.setattr(trainer_module, "native_bf16_cpu", lambda: True)
    cpu, cuda = _trainer("cpu", True, "bf16"), _trainer("cuda", True, "bf16")
    assert cpu.amp and cpu.scaler is None
    ctx = cpu._autocast()
    assert isinstance(ctx, torch.autocast) and ctx.device == "cpu" and ctx.fast_dtype == cuda._autocast().fast_dtype
    assert not _trainer("cpu", True, "fp16").amp
    monkeypatch.setattr(trainer_module, "native_bf16_cpu", lambda: False)
    assert not _trainer("cpu", True, "bf16").amp


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("amp")), seed=0, n_examples=40, max_len=8,
                            target=lambda words: words[:3])


def test_amp_on_cpu_logs_once_and_trains_bit_for_bit(data, tmp_path, monkeypatch):
    """(d) -amp on a CPU without native bfloat16 (simulated): one notice, then exactly the float32 training."""
    monkeypatch.setattr(trainer_module, "native_bf16_cpu", lambda: False)
    common = ["-data", data, "-reinforced", "-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn",
              "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "8", "-train_steps", "4",
              "-valid_steps", "2", "-report_every", "2", "-save_checkpoint_steps", "4", "-seed", "3",
              "-rl_gamma", "0.5", "-max_gen_length", "5"]
    for name, more_args in (("plain", []), ("amp", ["-amp"])):
        train_bin.main(common + ["-save_model", str(tmp_path / name), "-log_file", str(tmp_path / f"{name}.log"),
                                 *more_args])
    notice = "-amp: mixed precision needs CUDA, or -amp_dtype bf16 on a CPU with native bfloat16"
    logs = {name: open(tmp_path / f"{name}.log", encoding="utf-8").read() for name in ("plain", "amp")}
    assert logs["amp"].count(notice) == 1 and notice not in logs["plain"]
    a = torch.load(tmp_path / "plain_step_4.pt", weights_only=True)
    b = torch.load(tmp_path / "amp_step_4.pt", weights_only=True)
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert "scaler" not in b and sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "*_step_*.pt"))) == [
        "amp_step_4.pt", "plain_step_4.pt"]


@pytest.mark.skipif(not hardware.native_bf16_cpu(), reason="this CPU has no native bfloat16 (avx512_bf16 / amx_bf16)")
def test_amp_on_a_native_bf16_cpu_trains_in_bfloat16_close_to_float32(data, tmp_path):
    """-amp where the CPU has native bfloat16: the notice, a different (low precision) training, close
    to the float32 one, every loss finite."""
    common = ["-data", data, "-reinforced", "-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn",
              "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "8", "-train_steps", "4",
              "-valid_steps", "4", "-report_every", "2", "-save_checkpoint_steps", "4", "-seed", "3"]
    for name, more_args in (("plain", []), ("amp", ["-amp"])):
        train_bin.main(common + ["-save_model", str(tmp_path / name), "-log_file", str(tmp_path / f"{name}.log"),
                                 *more_args])
    log = open(tmp_path / "amp.log", encoding="utf-8").read()
    assert log.count("-amp: bfloat16 autocast on the CPU (native bfloat16)") == 1
    a = torch.load(tmp_path / "plain_step_4.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "amp_step_4.pt", weights_only=True)["model"]
    assert any(not torch.equal(a[k], b[k]) for k in a)
    for k in a:
        assert b[k].dtype == torch.float32 and torch.allclose(a[k], b[k], atol=0.05), k

