"""onmt/execution.py: the one implementation selector. Its values and refusals; build_model's line for
each family and selector value (what runs, and every fused path that does not apply, with why); and that a
model built with a value runs only the paths it names (the fused decoder pass or the step loop, the prepared
decoding gates, the compiled step or scores, no onmt/fused kernel with kernels "plain")."""
import logging
import os
import re
import sys

import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from helpers.search import search
from onmt.execution import COMPILE, PRECISIONS, Execution, as_execution
from onmt.fused import low_precision
from onmt.losses import build_loss
from onmt.model_builder import build_model
from onmt.models import fused as models_fused
from onmt.models import rnn_decoder

CASES = {   # name -> (model options, what build_model says of its fused paths with fused kernels)
    "reinforced": (dict(model_family="reinforced", rnn_size=8), "every fused path applies"),
    "copy_coverage": (dict(model_family="copy", coverage_attn=True, global_attention="mlp"),
                      "every fused path applies"),
    "rnn_general": (dict(model_family="rnn", global_attention="general"),
                    "step-loop fallback: the fused decoder pass needs a 1-layer LSTM with input feeding and mlp "
                    "attention (this decoder: general attention)"),
    "rnn_gru": (dict(model_family="rnn", rnn_type="GRU", global_attention="mlp"),
                "step-loop fallback: the fused decoder pass needs a 1-layer LSTM with input feeding and mlp "
                "attention (this decoder: GRU)"),
    "rnn_2layer": (dict(model_family="rnn", layers=2, global_attention="mlp"),
                   "step-loop fallback: the fused decoder pass needs a 1-layer LSTM with input feeding and mlp "
                   "attention (this decoder: 2 layers)"),
}


def _line(caplog, opt, execution):
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="onmt.model_builder"):
        model = build_model(opt, make_vocabs(), execution=execution)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Model ")]
    assert len(lines) == 1, lines
    return model, lines[0]


def test_values_defaults_and_refusals():
    assert Execution() == Execution("fused", None, "off") == as_execution(None)
    assert as_execution("plain") == Execution(kernels="plain") and as_execution(Execution()) == Execution()
    assert PRECISIONS == ("fp32", "bf16", "fp16", "int8") and COMPILE == ("off", "decoder-step", "mlp-scores")
    assert Execution.for_decoding("int8", compile=True) == Execution("fused", "int8", "mlp-scores")
    assert Execution().decoding_precision == "fp32" and not Execution().prepared_decoding
    assert Execution(precision="fp32").prepared_decoding and not Execution("plain", "fp32").prepared_decoding
    for bad in (dict(kernels="fast"), dict(precision="fp8"), dict(compile="on"),
                dict(kernels="plain", precision="bf16"), dict(kernels="plain", compile="mlp-scores")):
        with pytest.raises(ValueError):
            Execution(**bad)
    with pytest.raises(AttributeError):
        Execution().kernels = "plain"   # frozen: made once


def test_for_training_reads_compile():
    opt = make_opt()
    assert Execution.for_training(opt) == Execution(compile="off")
    opt.compile = True
    assert Execution.for_training(opt) == Execution(compile="decoder-step")


@pytest.mark.parametrize("name", sorted(CASES))
def test_build_model_says_what_runs_for_each_family_and_precision(caplog, name):
    options, fused_paths = CASES[name]
    opt = make_opt(**options)
    family = opt.model_family
    model, line = _line(caplog, opt, Execution())
    plain_cls = type(build_model(opt, make_vocabs(), execution="plain")).__name__
    assert type(model).__name__ == f"Fused{plain_cls}"
    head = rf"Model {family} \(Fused{plain_cls}\): \d+ parameters; device cpu; execution: "
    assert re.fullmatch(head + re.escape(f"kernels fused, precision fp32, compile off; {fused_paths}"), line), line
    _, line = _line(caplog, opt, Execution.for_decoding("int8"))
    gates = "; no prepared decoding gates: they are an LSTM's (this decoder: GRU)" if name == "rnn_gru" else ""
    assert re.fullmatch(head + re.escape(f"kernels fused, precision int8 (prepared decoding), compile off; "
                                         f"{fused_paths}{gates}"), line), line
    _, line = _line(caplog, opt, Execution("plain", "fp32"))
    assert re.fullmatch(head.replace(f"Fused{plain_cls}", plain_cls)
                        + re.escape("kernels plain, precision fp32 (prepared decoding), compile off"), line), line
    _, line = _line(caplog, opt, Execution.for_decoding("fp32", compile=True))
    if name in ("reinforced", "rnn_general"):
        assert line.endswith("compile mlp-scores; " + (fused_paths + "; " if name != "reinforced" else "")
                             + "compile mlp-scores: this " + ("model" if name == "reinforced" else "decoder")
                             + " has no mlp attention, nothing is compiled"), line
    assert all(m.execution == model.execution for m in model.modules() if "execution" in vars(m))


def _count(monkeypatch, owner, name):
    calls = []
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


@pytest.mark.parametrize("name", ["copy_coverage", "rnn_general", "rnn_gru", "rnn_2layer"])
def test_a_training_pass_runs_the_fused_decoder_pass_or_the_step_loop_as_the_line_says(monkeypatch, name):
    torch.manual_seed(0)
    options, fused_paths = CASES[name]
    opt = make_opt(**options)
    batch = make_batch(make_vocabs(), B=3, S=6, T=5)
    for execution in (Execution(), Execution("plain")):
        fused_pass = _count(monkeypatch, models_fused, "lstm_mlp_decoder_pass")
        steps = _count(monkeypatch, rnn_decoder.RNNDecoder, "step")
        model = build_model(opt, make_vocabs(), execution=execution).train()
        loss, _ = build_loss(opt)(model, batch)
        loss.backward()
        fused = execution.fused and "fallback" not in fused_paths
        assert (len(fused_pass), len(steps) > 0) == ((1, False) if fused else (0, True)), (execution, name)


@pytest.mark.parametrize("execution, prepared", [(Execution(), False), (Execution.for_decoding("fp32"), True),
                                                 (Execution("plain", "fp32"), False)])
@pytest.mark.parametrize("family", ["reinforced", "copy_coverage"])
def test_decoding_prepares_the_lstm_gates_only_for_a_chosen_precision(monkeypatch, execution, prepared, family):
    torch.manual_seed(0)
    products = _count(monkeypatch, low_precision, "lstm_gate_products")
    vocabs = make_vocabs()
    model = build_model(make_opt(**CASES[family][0]), vocabs, execution=execution).eval()
    with torch.no_grad():
        search(model, make_batch(vocabs, B=2, S=6, T=5), beam_size=2, max_length=3)
    assert (len(products) > 0) == prepared


def test_compile_is_chosen_when_the_model_is_built():
    """decoder-step: the decoder's step is torch.compile's (set when built, not patched after); mlp-scores: the
    mlp attention scores through step_attention.compiled_mlp_scores; off: the class's step, the blocked scores.
    Nothing is called, so nothing compiles."""
    from onmt.fused.step_attention import mlp_scores_blocked
    opt = make_opt(**CASES["copy_coverage"][0])
    plain_step = build_model(opt, make_vocabs())
    assert "step" not in vars(plain_step.decoder) and plain_step.decoder.attn._mlp_score is mlp_scores_blocked
    compiled = build_model(opt, make_vocabs(), execution=Execution(compile="decoder-step"))
    assert "step" in vars(compiled.decoder) and compiled.decoder.step is not plain_step.decoder.step
    scores = build_model(opt, make_vocabs(), execution=Execution.for_decoding(compile=True))
    assert "step" not in vars(scores.decoder)
    assert scores.decoder.attn._mlp_score.__qualname__.startswith("compiled_mlp_scores")


def test_a_plain_model_calls_nothing_of_onmt_fused_but_the_selector():
    """kernels "plain": a mixed training step and a beam search of every family call no function of onmt/fused
    but the selector's and the deciding checks (kernels.py, execution.py, the two gates' checks)."""
    import onmt.fused
    folder = os.path.dirname(onmt.fused.__file__)
    deciding = ("kernels.py:", "execution.py:", "low_precision.py:decoding_gates", "low_precision.py:encoder_lowered",
                "packed_linear.py:drop_cached", "packed_linear.py:_owners")
    called = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(folder):
            called.add(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}")
    vocabs = make_vocabs()
    for name, (options, _) in CASES.items():
        opt = make_opt(**options, rl_gamma=0.5, max_gen_length=3)
        torch.manual_seed(0)
        model = build_model(opt, vocabs, execution=Execution("plain", "fp32")).train()
        batch = make_batch(vocabs, B=2, S=6, T=5)
        sys.setprofile(profile)
        try:
            loss, _ = build_loss(opt)(model, batch)
            loss.backward()
            with torch.no_grad():
                search(model.eval(), batch, beam_size=2, max_length=3)
        finally:
            sys.setprofile(None)
    assert not {c for c in called if not c.startswith(deciding)}, sorted(called)
