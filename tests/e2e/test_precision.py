"""-precision on a tiny trained model of each family: bf16 and int8 decoding give the float32
predictions wherever float32's best hypothesis wins by a clear margin, with scores close to float32's.
(bf16 runs here whatever the CPU: its native-hardware check is simulated; on a CPU without native
bfloat16 oneDNN emulates it, same values.)"""
import pytest
import torch

import onmt.hardware as hardware
from helpers.e2e import random_pair_data, torch_threads
from onmt import opts
from onmt.bin import train as train_bin
from onmt.translate.session import load_session, translate_lines

FAMILIES = {"reinforced": ["-reinforced", "-brnn"],
            "copy": ["-copy_attn", "-brnn", "-global_attention", "mlp", "-dropout", "0"],
            "rnn": ["-brnn", "-global_attention", "general", "-dropout", "0"]}
MARGIN = 1.0   # a line is "clear" when float32's best beats its second best by this much


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("precision")
    data = random_pair_data(str(folder), seed=0, n_examples=200, max_len=8, target=lambda words: words[:3])
    models = {}
    with torch_threads(1):
        for family, args in FAMILIES.items():
            train_bin.main(["-data", data, *args, "-layers", "1", "-rnn_size", "32", "-word_vec_size", "16",
                            "-optim", "adam", "-learning_rate", "0.01", "-batch_size", "16", "-train_steps", "300",
                            "-valid_steps", "300", "-report_every", "100", "-save_checkpoint_steps", "300",
                            "-seed", "1", "-save_model", str(folder / family), "-log_file", str(folder / "log")])
            models[family] = str(folder / f"{family}_step_300.pt")
    src = [line.rstrip("\n") for line in open(folder / "src.txt", encoding="utf-8")][:120]
    return models, src


def _translate(ckpt, src, precision, compile=False):
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", ckpt, "-src", "-", "-beam_size", "3", "-n_best",
                                                          "2", "-precision", precision])
    opts.update_translate_opts(opt)
    with torch_threads(1):
        session = load_session(ckpt, torch.device("cpu"), precision, compile)
        return translate_lines(opt, session, src, show_progress=False)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_low_precision_keeps_clear_predictions(monkeypatch, trained, family, precision):
    monkeypatch.setattr(hardware, "native_bf16_cpu", lambda: True)
    models, src = trained
    ref, low = _translate(models[family], src, "fp32"), _translate(models[family], src, precision)
    clear = [i for i, nbest in enumerate(ref) if nbest[0].score - nbest[1].score > MARGIN]
    assert len(clear) >= len(src) // 10, len(clear)   # the model is trained: enough lines are clear
    for i in clear:
        assert low[i][0].tokens == ref[i][0].tokens, (i, precision)
    diffs = [abs(low[i][0].score - ref[i][0].score) for i in clear]
    assert max(diffs) < 0.1 and 0 < sum(diffs)   # close, and really computed in low precision



def test_compiled_mlp_attention_gives_the_same_predictions(trained, caplog):
    """translate -compile on See et al.'s family (mlp attention with copy): every prediction as without it,
    scores to float32 rounding; on the reinforced model (no mlp attention) nothing is compiled, said once."""
    from onmt.hardware import compile_problem
    if compile_problem("cpu"):
        pytest.skip(compile_problem("cpu"))
    models, src = trained
    ref, got = _translate(models["copy"], src, "fp32"), _translate(models["copy"], src, "fp32", compile=True)
    assert "execution: kernels fused, precision fp32 (prepared decoding), compile mlp-scores; every fused path" \
        in caplog.text
    assert [r[0].tokens for r in got] == [r[0].tokens for r in ref]
    assert max(abs(g[0].score - r[0].score) for g, r in zip(got, ref)) < 1e-4
    caplog.clear()
    _translate(models["reinforced"], src[:2], "fp32", compile=True)
    assert "compile mlp-scores: this model has no mlp attention, nothing is compiled" in caplog.text


@pytest.mark.parametrize("family", ["rnn", "copy"])
def test_a_beam_keeping_each_source_once_gives_the_per_row_predictions(trained, family, monkeypatch):
    """The RNN decoders' beam state keeps the source (memory, keys, mask, copy ids) once per example
    (RNNDecoderState.source_rows): the same n-best lists and scores as the state with one copy per
    hypothesis (forced here by expanding it after every reorder), and it really was kept once."""
    from dataclasses import replace

    from onmt.models.rnn_decoder import RNNDecoderState
    models, src = trained
    grouped_reorder, seen = RNNDecoderState.reorder, []

    def recording(self, *args, **kwargs):
        state = grouped_reorder(self, *args, **kwargs)
        seen.append((state.source_rows, state.memory.size(0), state.hidden[0].size(1)))
        return state

    def per_row(self, *args, **kwargs):
        state = grouped_reorder(self, *args, **kwargs)
        return replace(state, source_rows=1, **{name: state.per_row(name) for name in state._source_fields})

    monkeypatch.setattr(RNNDecoderState, "reorder", recording)
    grouped = _translate(models[family], src, "fp32")
    assert any(g == 3 and rows * 3 == hyps for g, rows, hyps in seen)   # beam 3: one source per 3 rows
    monkeypatch.setattr(RNNDecoderState, "reorder", per_row)
    ref = _translate(models[family], src, "fp32")
    for got, want in zip(grouped, ref):
        assert [h.tokens for h in got] == [h.tokens for h in want]
        assert max(abs(g.score - w.score) for g, w in zip(got, want)) < 1e-4
