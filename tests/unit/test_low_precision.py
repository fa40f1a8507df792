"""-precision (translate.py, the API): the vocabulary product in bf16 / fp16 / int8
(onmt/fused/low_precision.py) against the float32 product, prepared once per model, and the one-line
refusal of a precision the device cannot run fast (onmt/hardware.py, simulated hardware)."""
import argparse

import pytest
import torch

import onmt.hardware as hardware
from helpers.checkpoints import build_tiny, save_tiny_checkpoint
from onmt import opts
from onmt.errors import OptionError
from onmt.execution import Execution
from onmt.fused import low_precision
from onmt.fused.low_precision import CastLinear, Int8Linear, prepared_linear
from onmt.fused.packed_linear import PackedLinear


def _weights(V=300, D=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(V, D, generator=g) * 0.2, torch.randn(V, generator=g),
            torch.randn(40, D, generator=g))  # W (V, D), b (V,), x (N, D)


@pytest.mark.parametrize("precision, tol", [("bf16", 0.03), ("fp16", 0.005), ("int8", 0.03)])
def test_products_are_float32_and_close_to_the_float32_product(precision, tol):
    w, b, x = _weights()
    exact = torch.addmm(b.double(), x.double(), w.double().t())  # (N, V)
    lin = prepared_linear(w, b, precision)
    assert isinstance(lin, Int8Linear if precision == "int8" else CastLinear)
    out = lin(x)
    assert out.dtype == torch.float32 and out.shape == (40, 300)
    err = ((out.double() - exact).abs().max() / exact.abs().max()).item()
    assert 0 < err < tol, err                       # low precision, but close
    fp32 = (prepared_linear(w, b, "fp32")(x).double() - exact).abs().max() / exact.abs().max()
    assert fp32 < 1e-5 < err                        # ... and really lower than float32
    assert isinstance(prepared_linear(w, b, "fp32"), PackedLinear)


def test_int8_product_is_pytorch_dynamic_quantization_per_row():
    """upstream's -precision int8 is torch.ao.quantization.quantize_dynamic of nn.Linear (one scale for
    the whole weight): ours is the same scheme with one scale per output row, so close to it and closer
    to the float32 product."""
    import warnings
    w, b, x = _weights()
    w[:10] *= 8   # rows of larger weights: one scale for all loses the small rows' precision
    lin = torch.nn.Linear(64, 300)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin.weight.copy_(w), lin.bias.copy_(b)
        q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
        exact, theirs = lin(x), q(x)   # (N, V)
    ours = Int8Linear(w, b)(x)
    assert (ours - theirs).abs().max() < 0.1 * exact.abs().max()
    small = slice(10, None)   # the rows of small weights (the large ones share a scale either way)
    assert (ours - exact)[:, small].abs().max() < 0.5 * (theirs - exact)[:, small].abs().max()


def _refusal(monkeypatch, precision, device_type, native):
    monkeypatch.setattr(hardware, "native_bf16_cpu", lambda: native)
    return hardware.precision_problem(precision, device_type)


def test_the_device_decides_what_is_refused(monkeypatch):
    assert _refusal(monkeypatch, "bf16", "cpu", native=False).startswith("this CPU has no native bfloat16")
    assert _refusal(monkeypatch, "bf16", "cpu", native=True) is None
    assert "CUDA only" in _refusal(monkeypatch, "fp16", "cpu", native=True)
    assert "CPU kernel" in _refusal(monkeypatch, "int8", "cuda", native=True)
    assert _refusal(monkeypatch, "fp16", "cuda", native=False) is None
    for device_type in ("cpu", "cuda"):
        assert _refusal(monkeypatch, "fp32", device_type, native=False) is None


def test_translate_and_the_api_refuse_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(hardware, "native_bf16_cpu", lambda: False)
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", "m", "-src", "s", "-precision", "bf16"])
    opts.update_translate_opts(opt)
    with pytest.raises(OptionError, match=r"^-precision bf16: this CPU has no native bfloat16"):
        opts.validate_translate_opts(opt)
    from onmt import Summarizer
    ckpt = save_tiny_checkpoint(tmp_path / "m.pt", "rnn")
    with pytest.raises(OptionError, match=r"^-precision fp16: float16 products are fast on CUDA only") as e:
        Summarizer.load(ckpt, precision="fp16")
    assert "\n" not in str(e.value)


class _Counting:
    """Wrap a class so that its constructions are counted."""

    def __init__(self, cls):
        self.cls, self.n, self.shapes = cls, 0, []

    def __call__(self, weight, *args, **kwargs):
        self.n += 1
        self.shapes.append(tuple(weight.shape))
        return self.cls(weight, *args, **kwargs)


@pytest.mark.parametrize("family", ["reinforced", "copy", "rnn"])
@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_low_precision_weights_are_built_once_per_model(monkeypatch, family, precision):
    """Two translations of two batches each: each quantized / cast weight (the vocabulary product's, and
    the decoder LSTM's gate product per layer: low_precision.decoding_gates) is built once."""
    from helpers.toy_models import toy_batches
    from onmt.translate.translator import SearchSettings, Translator
    counter = _Counting(Int8Linear if precision == "int8" else CastLinear)
    monkeypatch.setattr(low_precision, "Int8Linear" if precision == "int8" else "CastLinear", counter)
    model, _ = build_tiny(family, execution=Execution.for_decoding(precision))
    from helpers.checkpoints import VOCABS
    assert model.execution.precision == model.decoder.execution.precision == precision
    tr = Translator(model, VOCABS, SearchSettings(beam_size=3, max_length=4), batch_size=2, batch_fn=toy_batches,
                    log=lambda m: None)
    for _ in range(2):
        tr.translate(["w1 w2 w3", "w4 w5", "w6 w1", "w2"])
    rnn = model.decoder.rnn
    gates = [(4 * rnn.hidden_size, (rnn.input_size if k == 0 else rnn.hidden_size) + rnn.hidden_size)
             for k in range(rnn.num_layers)]   # [W_ih ; W_hh]: (4H, E+H) per layer
    vocabulary = [shape for shape in counter.shapes if shape[0] == model.tgt_vocab_size]
    assert counter.n == 1 + rnn.num_layers and len(vocabulary) == 1
    assert sorted(counter.shapes) == sorted(gates + vocabulary)
    fp32, _ = build_tiny(family, execution=Execution.for_decoding("fp32"))   # float32: no low-precision build
    Translator(fp32, VOCABS, SearchSettings(beam_size=3, max_length=4), batch_size=2, batch_fn=toy_batches,
               log=lambda m: None).translate(["w1 w2 w3"])
    assert counter.n == 1 + rnn.num_layers


def test_precision_choices_are_translate_options():
    p = opts.translate_parser()
    opt = opts.parse_with_given(p, ["-model", "m", "-src", "s"])
    assert opt.precision == "fp32" and isinstance(opt, argparse.Namespace)
    assert hardware.PRECISIONS == ("fp32", "bf16", "fp16", "int8")


def test_int8_linear_engine_is_onednn_only_where_the_cpu_has_an_int8_dot_product(monkeypatch):
    engines = torch.backends.quantized.supported_engines
    monkeypatch.setattr(hardware, "cpu_flags", lambda: {"avx2", "avx512_vnni"})
    assert hardware.int8_engine(linear=True) == ("onednn" if "onednn" in engines else hardware.int8_engine())
    monkeypatch.setattr(hardware, "cpu_flags", lambda: {"avx2", "avx512f"})
    assert hardware.int8_engine(linear=True) == hardware.int8_engine() != "onednn"


@pytest.mark.skipif(not {"onednn", "x86"} <= set(torch.backends.quantized.supported_engines),
                    reason="needs PyTorch's onednn and x86 quantized engines")
def test_int8_engines_give_the_same_product():
    w, b, x = _weights()
    a, c = Int8Linear(w, b, engine="x86")(x), Int8Linear(w, b, engine="onednn")(x)
    assert torch.allclose(a, c, atol=1e-4 * a.abs().max().item())   # the same quantization, another order


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_int8_encoder_is_quantize_dynamics_rnn_built_once(monkeypatch, rnn_type):
    """-precision int8 runs the encoder's recurrent layers as torch.ao's dynamically quantized module
    (upstream's quantize_dynamic takes nn.LSTM / nn.GRU too): close to float32, built once while the
    parameters are unchanged, rebuilt after they change, float32 outputs; bf16 runs under autocast."""
    from onmt.models.fused import FusedRNNEncoder
    from onmt.models.rnn_encoder import RNNEncoder
    from onmt.modules.embeddings import Embeddings
    torch.manual_seed(0)
    enc = RNNEncoder(rnn_type, 2, 32, Embeddings(50, 16), bidirectional=True).eval()
    low = FusedRNNEncoder(rnn_type, 2, 32, Embeddings(50, 16), bidirectional=True,
                          execution=Execution.for_decoding("int8")).eval()
    low.load_state_dict(enc.state_dict())
    src, lengths = torch.randint(4, 50, (5, 9)), torch.tensor([9, 7, 9, 3, 1])
    builds = []
    original = torch.ao.quantization.quantize_dynamic
    monkeypatch.setattr(torch.ao.quantization, "quantize_dynamic",
                        lambda *a, **k: builds.append(1) or original(*a, **k))
    with torch.no_grad():
        exact = enc(src, lengths)
        assert not builds                            # fp32 (no precision chosen): not lowered
        enc = low
        first, second = enc(src, lengths), enc(src, lengths)
    assert len(builds) == 1 and first.memory.dtype == torch.float32
    assert torch.equal(first.memory, second.memory)
    finals = zip(first.final, exact.final) if rnn_type == "LSTM" else [(first.final, exact.final)]
    err = max((first.memory - exact.memory).abs().max(), *((a - b).abs().max() for a, b in finals))
    assert 0 < err < 0.05, err                       # lowered, but close
    assert torch.equal(first.mask, exact.mask)
    with torch.no_grad():
        enc.rnn.weight_hh_l0.mul_(0.5)               # an optimizer step writes in place: rebuilt
        enc(src, lengths)
    assert len(builds) == 2


@pytest.mark.parametrize("precision, tol", [("fp32", 1e-5), ("bf16", 0.05), ("int8", 0.05)])
def test_decoding_gates_are_one_prepared_product_per_layer(monkeypatch, precision, tol):
    """With fused kernels, a decoding precision chosen (Execution.for_decoding: translate.py, the API), no autograd in
    eval mode, lstm_step's gates come from [W_ih ; W_hh] prepared once in that precision
    (decoding_gates): close to the plain step (float32: equal to rounding), built once per set of
    parameters, rebuilt after a parameter update; plain kernels, training mode and autograd keep the
    plain path."""
    import torch.nn as nn

    from onmt.modules.lstm_step import lstm_step
    torch.manual_seed(0)
    rnn = nn.LSTM(16, 32, num_layers=2, batch_first=True).eval()
    x, h, c = torch.randn(5, 16), torch.randn(2, 5, 32), torch.randn(2, 5, 32)

    decoding = Execution.for_decoding(precision)

    def step(execution=decoding):
        return lstm_step(rnn, x, (h, c), low_precision.decoding_gates(execution, rnn, x, h))
    with torch.no_grad():
        ref = step(Execution())   # no precision chosen (training, validation): the plain path
        built, original = [], low_precision.prepared_linear
        monkeypatch.setattr(low_precision, "prepared_linear",
                            lambda *a, **k: built.append(a[0].shape) or original(*a, **k))
        got = [step() for _ in range(3)]
        assert built == [(128, 48), (128, 64)]          # (4H, E+H), (4H, H+H): once each
        assert low_precision.decoding_gates(Execution("plain", "fp32"), rnn, x, h) is None
        rnn.weight_hh_l1.add_(0.01)                     # an optimizer step: rebuilt once
        moved = step()
        assert len(built) == 4
    assert low_precision.decoding_gates(decoding, rnn, x, h) is None   # under autograd
    for top, (h_new, c_new) in got:
        err = max((top - ref[0]).abs().max(), (c_new - ref[1][1]).abs().max()).item()
        assert err < tol and (precision == "fp32" or err > 1e-5), err   # really in that precision
        assert top.dtype == torch.float32
    assert not torch.allclose(moved[0], got[0][0])
    rnn.train()
    with torch.no_grad():
        step()
    assert len(built) == 4


def test_a_plain_model_decodes_in_float32_only():
    """Low precisions are fused kernels: an Execution refuses them with kernels="plain"."""
    from helpers.checkpoints import FAMILIES, VOCABS
    from helpers.models import make_opt
    from onmt.model_builder import build_model
    model = build_model(make_opt(**FAMILIES["copy"]), VOCABS, execution=Execution("plain", "fp32"))
    assert model.execution.decoding_precision == "fp32"
    with pytest.raises(ValueError, match="fused"):
        Execution("plain", "bf16")


def test_cpu_description_names_the_flags_that_decide_the_precisions_speed(monkeypatch):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: {"avx2", "avx512_bf16", "sse2"})
    line = hardware.cpu_description()
    assert line.endswith("cores, flags avx2 avx512_bf16") and "sse2" not in line
    monkeypatch.setattr(hardware, "cpu_flags", lambda: set())
    assert hardware.cpu_description().endswith("flags none of " + " ".join(hardware.SPEED_FLAGS))


def test_a_prepared_lstm_layer_is_the_cell_with_tanh_from_sigmoids():
    """DecodingLSTMLayer: its product is [x ; h] [W_ih ; W_hh]^T + b with the g rows doubled, its cell the
    LSTM cell (lstm_step's formula) to float32 rounding, tanh(g) and tanh(c) both from sigmoids; large
    pre-activations saturate as tanh does."""
    from onmt.modules.lstm_step import _cell
    g = torch.Generator().manual_seed(0)
    H, D = 32, 48
    w, b = torch.randn(4 * H, D, generator=g) * 0.3, torch.randn(4 * H, generator=g)
    layer = low_precision.DecodingLSTMLayer(w, b, "fp32")
    x_h, c_prev = torch.randn(7, D, generator=g) * 2, torch.randn(7, H, generator=g)
    z = torch.addmm(b, x_h, w.t())                                     # (7, 4H) the plain pre-activations
    got_z = layer(x_h)
    torch.testing.assert_close(got_z[:, 2 * H:3 * H], 2 * z[:, 2 * H:3 * H], atol=1e-5, rtol=1e-6)
    torch.testing.assert_close(got_z[:, :2 * H], z[:, :2 * H], atol=1e-5, rtol=1e-6)
    h, c = layer.cell(got_z, c_prev)
    want_h, want_c = _cell(z, c_prev)
    torch.testing.assert_close(h, want_h, atol=1e-6, rtol=0)
    torch.testing.assert_close(c, want_c, atol=1e-6, rtol=0)
    big = torch.full((2, 4 * H), 60.0)
    h, c = low_precision.DecodingLSTMLayer.cell(big, torch.full((2, H), 50.0))
    assert torch.equal(h, torch.ones(2, H)) and torch.equal(c, torch.full((2, H), 51.0))


def test_precision_and_compile_are_checked_once(monkeypatch, tmp_path):
    """translate.py checks -precision and -compile with its options, the API in Summarizer.load; neither
    again when the checkpoint is loaded (session.load_session)."""
    from onmt import Summarizer
    from onmt.bin.translate import main
    calls = []
    monkeypatch.setattr(hardware, "precision_problem", lambda precision, device: calls.append("precision"))
    monkeypatch.setattr(hardware, "compile_problem", lambda device: calls.append("compile"))
    ckpt = save_tiny_checkpoint(tmp_path / "m.pt", "rnn")
    (tmp_path / "src.txt").write_text("w1 w2\n")
    main(["-model", ckpt, "-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / "out.txt"), "-compile",
          "-beam_size", "1", "-max_length", "3"])
    assert calls == ["precision", "compile"]
    calls.clear()
    Summarizer.load(ckpt, precision="fp32", compile=True)
    assert calls == ["precision", "compile"]
