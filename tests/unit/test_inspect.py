"""Inspection: the attns keys "p_copy" / "intra", kept per hypothesis by the searches, the records,
the plots and the -attn_debug dump (onmt/inspection)."""
import os
import random

import numpy as np
import pytest
import torch

from helpers.checkpoints import VOCABS, build_tiny, save_tiny_checkpoint
from helpers.paths import load_module
from helpers.search import search
from helpers.toy_models import toy_batches
from onmt.constants import BOS, PAD
from onmt.inspection.sample import select_example
from onmt.translate.records import copied_marks, read_dump

V = len(VOCABS.tgt)


def random_lines(n, seed, lo=3, hi=10):
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(14)}" for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def one_batch(n=4, seed=0, tgt=False):
    lines = random_lines(n, seed)
    return next(toy_batches(lines, random_lines(n, seed + 1) if tgt else None, VOCABS, n))


# --------------------------------------------------------------------------- the model interface
def test_reinforced_decode_step_p_copy_and_intra_against_direct_computation():
    model, _ = build_tiny("reinforced")
    batch = one_batch()
    B, H = batch.batch_size, model.decoder.hidden_size
    state = model.init_state(batch, model.encode(batch))
    inputs = torch.full((B,), BOS, dtype=torch.long)
    with torch.no_grad():
        for t in range(5):
            o_t, _, plain_state = model.decoder.step(inputs, state)           # the step without return_intra
            logp, new_state, attns = model.decode_step(inputs, state)
            assert set(attns) == {"std", "p_copy", "intra"}
            assert attns["p_copy"].shape == (B,) and attns["intra"].shape == (B, t)
            # p_copy = p(u=1) = sigmoid(W_u o_t + b_u) = 1 - p_gen
            assert torch.allclose(attns["p_copy"], torch.sigmoid(model.generator.switch(o_t)).squeeze(1), atol=1e-6)
            assert torch.equal(new_state.history, plain_state.history)      # return_intra changes nothing
            if t == 0:
                assert torch.equal(o_t[:, 2 * H:], torch.zeros(B, H))        # c^d_1 = 0
            else:
                h_t, prev = new_state.history[:, -1], state.history          # (B, H), (B, t, H)
                w = model.decoder.dec_attn.weight * model.decoder.dec_attn.scale  # s W^d (-intra_attn_scale)
                scores = torch.bmm(prev, (h_t @ w).unsqueeze(2)).squeeze(2)
                assert torch.allclose(attns["intra"], torch.softmax(scores, 1), atol=1e-6)
                assert torch.allclose(attns["intra"].sum(1), torch.ones(B), atol=1e-6)
                # c^d_t, the part of o_t the intra attention makes, is exactly that weighting
                c_dec = torch.bmm(attns["intra"].unsqueeze(1), prev).squeeze(1)
                assert torch.allclose(o_t[:, 2 * H:], c_dec, atol=1e-6)
            state, inputs = new_state, logp.argmax(1)


def test_no_intra_decoder_attention_means_no_intra_key():
    model, _ = build_tiny("reinforced_no_intra")
    batch = one_batch()
    state = model.init_state(batch, model.encode(batch))
    with torch.no_grad():
        _, _, attns = model.decode_step(torch.full((batch.batch_size,), BOS, dtype=torch.long), state)
    assert set(attns) == {"std", "p_copy"}


def test_copy_and_rnn_decode_step_keys():
    model, _ = build_tiny("copy")
    batch = one_batch()
    state = model.init_state(batch, model.encode(batch))
    inputs = torch.full((batch.batch_size,), BOS, dtype=torch.long)
    with torch.no_grad():
        dec, _ = model.decoder.step(model.embed_target(inputs), state)
        _, _, attns = model.decode_step(inputs, state)
    assert set(attns) == {"std", "coverage", "p_copy"} and attns["p_copy"].shape == (batch.batch_size,)
    p_gen = torch.sigmoid(model.generator.switch(torch.cat([dec.context, dec.rnn_out, dec.emb], -1))).squeeze(1)
    assert torch.allclose(attns["p_copy"], 1 - p_gen, atol=1e-6)
    rnn, _ = build_tiny("rnn")
    with torch.no_grad():
        _, _, attns = rnn.decode_step(inputs, rnn.init_state(batch, rnn.encode(batch)))
    assert "p_copy" not in attns and "intra" not in attns


@pytest.mark.parametrize("family", ["reinforced", "copy"])
def test_teacher_forced_p_copy_equals_the_steps_and_carries_no_gradient(family):
    model, _ = build_tiny(family)
    batch = one_batch(tgt=True)
    ll, _, attns = model.gold_log_likelihood(batch)
    _, fwd_attns = model(batch)
    B, T1 = batch.tgt.size(0), batch.tgt.size(1) - 1
    assert attns["p_copy"].shape == fwd_attns["p_copy"].shape == (B, T1)
    assert not attns["p_copy"].requires_grad and ll.requires_grad
    state = model.init_state(batch, model.encode(batch))
    steps = []
    with torch.no_grad():
        for t in range(T1):
            _, state, a = model.decode_step(batch.tgt_ex[:, t], state)
            steps.append(a["p_copy"])
    steps = torch.stack(steps, 1)                                             # (B, T-1)
    real = batch.tgt[:, 1:] != PAD  # gold_log_likelihood's p_copy is unspecified at padding
    assert (~real).any()
    assert torch.allclose(attns["p_copy"][real], steps[real], atol=1e-5)
    assert torch.allclose(fwd_attns["p_copy"], steps, atol=1e-5)


# --------------------------------------------------------------------------- searches
def replay(model, batch, b, tokens):
    """Per step of `tokens` decoded alone (example b of batch): std (n, S_b), p_copy (n,), intra rows."""
    one = select_example(batch, b)
    state = model.init_state(one, model.encode(one))
    inputs = torch.tensor([BOS])
    std, p_copy, intra = [], [], []
    with torch.no_grad():
        for tok in tokens:
            _, state, a = model.decode_step(inputs, state)
            std.append(a["std"][0])
            p_copy.append(float(a["p_copy"][0]))
            intra.append(a["intra"][0] if "intra" in a else None)
            inputs = torch.tensor([tok])
    return std, p_copy, intra


@pytest.mark.parametrize("family", ["reinforced", "copy"])
@pytest.mark.parametrize("beam_size", [3, 1])   # 1: greedy search
def test_beam_keeps_the_inspection_of_each_final_hypothesis(family, beam_size):
    model, _ = build_tiny(family, seed=1)
    batch = one_batch(n=5, seed=3)
    kw = dict(beam_size=beam_size, n_best=beam_size, max_length=7, block_ngram_repeat=2)
    plain = search(model, batch, **kw)
    kept = search(model, batch, keep_inspection=True, **kw)
    checked = 0
    for b in range(batch.batch_size):
        assert [(h.tokens, h.score) for h in plain[b]] == [(h.tokens, h.score) for h in kept[b]]
        assert all(h.extras is None and h.attn is None for h in plain[b])
        S_b = int(batch.src_lengths[b])
        for h in kept[b]:
            n = len(h.tokens)
            std, p_copy, intra = replay(model, batch, b, h.tokens)
            assert h.attn.shape == (n, batch.src.size(1)) and h.extras["p_copy"].shape == (n,)
            if n:
                assert torch.allclose(h.attn[:, :S_b], torch.stack(std), atol=1e-5)
            assert np.allclose(h.extras["p_copy"].numpy(), p_copy, atol=1e-5)
            if family == "reinforced":
                m = h.extras["intra"]
                assert m.shape == (n, n) and torch.equal(m, torch.tril(m, diagonal=-1))   # lower triangle
                for t in range(n):
                    assert torch.allclose(m[t, :t], intra[t], atol=1e-5)
                    if t:
                        assert abs(float(m[t].sum()) - 1) < 1e-5
            else:
                assert "intra" not in h.extras
            checked += 1
    assert checked >= 3 * beam_size + 2


def test_copied_marks_definition():
    ids = [4, V + 1, 5, 6]
    assert copied_marks(ids, [0.1, 0.2, 0.5, 0.49], V).tolist() == [False, True, True, False]
    assert copied_marks(ids, None, V).tolist() == [False, True, False, False]
    assert copied_marks(ids, [0.9] * 4, V, copy_model=False).tolist() == [False] * 4


# --------------------------------------------------------------------------- plots
def synthetic_record(n=6, s=400, peak=(200, 210), intra=True, p_copy=True, copied=(1, 4)):
    rng = np.random.default_rng(0)
    attn = np.full((n, s), 1e-4, dtype=np.float32)
    for t in range(n):   # the peaks run from peak[0] (first step) to peak[1] (last step)
        attn[t, peak[0] + (peak[1] - peak[0]) * t // max(n - 1, 1)] = 1.0
    attn /= attn.sum(1, keepdims=True)
    m = np.tril(rng.random((n, n)), k=-1).astype(np.float32)
    m[1:] /= m[1:].sum(1, keepdims=True)
    marks = np.zeros(n, dtype=bool)
    marks[list(copied)] = True
    return {"line": 0, "src": [f"s{i}" for i in range(s)], "pred": [f"p{t}" for t in range(n)],
            "ids": np.arange(n), "score": -1.5, "attn": attn, "intra": m if intra else None,
            "p_copy": np.linspace(0.1, 0.9, n).astype(np.float32) if p_copy else None, "copied": marks}


def panels(fig):
    return {ax.get_label(): ax for ax in fig.axes if ax.get_label() != "colorbar"}


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_figure_has_three_panels_and_crops_a_long_source():
    pytest.importorskip("matplotlib")
    from onmt.inspection.plots import attended_span, figure
    rec = synthetic_record()
    assert attended_span(rec["attn"]) == (195, 215)                # 200..210 and a margin of 5
    fig = figure(rec)
    assert set(panels(fig)) == {"encoder", "intra", "p_copy"}
    assert len([ax for ax in fig.axes if ax.get_label() == "colorbar"]) == 2   # a colour bar per heat map
    enc = panels(fig)["encoder"]
    assert enc.get_xlim() == (194.5, 215.5)
    labels = [t.get_text() for t in enc.get_xticklabels()]
    assert labels[0] == "195 s195" and labels[-1] == "215 s215"    # real positions and words
    assert "195-215 of 0-399" in enc.get_xlabel()
    ylabels = [t.get_text() for t in enc.get_yticklabels()]
    assert ylabels == ["p0", "[p1]", "p2", "p3", "[p4]", "p5"]     # copied words marked
    bars = panels(fig)["p_copy"].patches
    assert len(bars) == 6 and [b.get_facecolor() == bars[1].get_facecolor() for b in bars] == \
        [False, True, False, False, True, False]
    short = synthetic_record(s=30, peak=(3, 5))
    assert attended_span(short["attn"]) == (0, 29)                 # short sources are shown whole


def test_panels_only_for_what_the_model_has():
    """A model without intra-decoder attention or pointer gets no empty panel (half the figure was one):
    the encoder attention alone, on a figure one row high."""
    pytest.importorskip("matplotlib")
    from onmt.inspection.plots import figure
    fig = figure(synthetic_record(intra=False, p_copy=False, copied=()))
    assert set(panels(fig)) == {"encoder"} and texts(panels(fig)["encoder"]) == []
    assert tuple(fig.get_size_inches()) == (16.0, 7.0)
    fig = figure(synthetic_record(intra=False))
    assert set(panels(fig)) == {"encoder", "p_copy"}


def test_labels_are_thinned_at_a_hundred_output_steps():
    pytest.importorskip("matplotlib")
    from onmt.inspection.plots import MAX_TICKS_Y, figure
    fig = figure(synthetic_record(n=100))
    for name in ("encoder", "intra"):
        labels = [t.get_text() for t in panels(fig)[name].get_yticklabels()]
        assert 25 <= len(labels) <= MAX_TICKS_Y and labels[0] == "p0" and labels[2] == "p8"   # every 4th


def image(path):
    import matplotlib.image
    return matplotlib.image.imread(path)


def test_png_size_and_not_blank(tmp_path):
    pytest.importorskip("matplotlib")
    from onmt.inspection.plots import plot_record
    path = plot_record(synthetic_record(), str(tmp_path / "x.png"))
    img = image(path)
    assert img.shape[:2] == (1200, 1600)
    top_left = img[80:480, 130:1250, :3]                           # the encoder heat map
    assert top_left.var() > 0.01 and img[..., :3].var() > 0.01
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


# --------------------------------------------------------------------------- translate.py and the tool
@pytest.fixture(scope="module")
def cli_setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("inspect_cli")
    ckpt = save_tiny_checkpoint(d / "r.pt", "reinforced", seed=3)
    lines = random_lines(5, seed=11)
    lines.insert(1, "")
    (d / "src.txt").write_text("\n".join(lines) + "\n")
    return d, ckpt, lines


def translate(d, ckpt, out, *more_args):
    from onmt.bin.translate import main
    main(["-model", ckpt, "-src", str(d / "src.txt"), "-output", str(out), "-beam_size", "3",
          "-max_length", "6", *map(str, more_args)])
    return (out).read_text().splitlines()


def test_translate_plots_and_dumps_without_changing_predictions(cli_setup, tmp_path):
    pytest.importorskip("matplotlib")
    d, ckpt, lines = cli_setup
    plain = translate(d, ckpt, tmp_path / "plain.txt")
    plots, dump = tmp_path / "plots", tmp_path / "debug.npz"
    inspected = translate(d, ckpt, tmp_path / "insp.txt", "-attn_plot", plots, "-attn_plot_n", 3,
                          "-attn_debug", dump)
    assert inspected == plain
    assert sorted(os.listdir(plots)) == ["example_00001.png", "example_00002.png", "example_00003.png"]
    with np.load(dump) as raw:                                     # plain numpy, no pickle
        assert str(raw["format"]) == "onmt-attn-debug" and int(raw["n_examples"]) == len(lines)
    records = read_dump(str(dump))
    assert [r["line"] for r in records] == list(range(len(lines)))
    for r, line, pred in zip(records, lines, plain):
        assert r["src"] == line.split() and " ".join(r["pred"]) == pred
        n, s = len(r["pred"]), len(r["src"])
        if not s:
            assert n == 0 and r["attn"] is None
            continue
        assert r["attn"].shape == (n, s) and np.allclose(r["attn"].sum(1), 1, atol=1e-5)
        assert r["intra"].shape == (n, n) and np.array_equal(r["intra"], np.tril(r["intra"], -1))
        assert r["p_copy"].shape == (n,) and r["copied"].dtype == bool
        assert r["copied"].tolist() == copied_marks(r["ids"], r["p_copy"], V).tolist()
    # the tool re-plots the dump: the same images
    tool = load_module(os.path.join("tools", "plot_attention.py"), "plot_attention")
    again = tmp_path / "again"
    tool.main(["-attn_debug", str(dump), "-attn_plot", str(again), "-attn_plot_n", "3"])
    assert sorted(os.listdir(again)) == sorted(os.listdir(plots))
    for name in os.listdir(plots):
        assert np.array_equal(image(plots / name), image(again / name))
    assert len(tool.main(["-attn_debug", str(dump), "-attn_plot", str(tmp_path / "all"), "-attn_plot_n", "0"])) \
        == len(lines)


def test_output_paths_and_matplotlib_checked_before_translating(cli_setup, tmp_path, monkeypatch):
    from onmt.errors import UserError
    d, ckpt, _ = cli_setup
    out = tmp_path / "p.txt"
    with pytest.raises(UserError, match=r"-attn_plot .*folder .*missing.* does not exist"):
        translate(d, ckpt, out, "-attn_plot", tmp_path / "missing" / "plots")
    with pytest.raises(UserError, match=r"-attn_debug .*does not exist"):
        translate(d, ckpt, out, "-attn_debug", tmp_path / "missing" / "d.npz")
    import onmt.translate.session as session
    monkeypatch.setattr(session, "translate_lines", lambda *a, **k: pytest.fail("translated"))
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)    # as if not installed
    with pytest.raises(UserError, match=r"pip install \.\[plot\]"):
        translate(d, ckpt, out, "-attn_plot", tmp_path / "plots")
    assert not out.exists() and not (tmp_path / "plots").exists()
