"""Translator: words out of ids, batch invariance, empty lines, replace_unk, gold scoring, CLI."""
import os
import random

import pytest
import torch

from helpers.rescoring import rescore
from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.constants import UNK
from onmt.opts import saved_options
from onmt.translate.translator import SearchSettings, Translator

VOCABS = toy_vocabs(n_src_words=14, n_tgt_words=6)   # w6..w13 are outside the target vocabulary


def random_lines(n, seed, max_len=10):
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(14)}" for _ in range(rng.randint(1, max_len))) for _ in range(n)]


def make(model, search, **kw):
    kw.setdefault("batch_fn", toy_batches)
    return Translator(model, VOCABS, search, **kw)


@pytest.mark.parametrize("beam", [1, 3])
def test_batch_invariance(beam):
    lines = random_lines(50, seed=beam)
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=3, sharp=1.0)
    search = SearchSettings(beam_size=beam, n_best=min(beam, 2), max_length=8, block_ngram_repeat=2)
    one = make(model, search, batch_size=1).translate(lines)
    many = make(model, search, batch_size=17).translate(lines)
    for a, b in zip(one, many):
        assert [t.tokens for t in a] == [t.tokens for t in b]
        assert [t.score for t in a] == pytest.approx([t.score for t in b], abs=1e-4)


def test_search_settings_are_the_one_way_to_say_how_to_search():
    """The search options come only as a SearchSettings (None: its defaults), never as keywords."""
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=3)
    assert Translator(model, VOCABS).search == SearchSettings()
    with pytest.raises(TypeError):
        Translator(model, VOCABS, beam_size=3)
    with pytest.raises(TypeError):
        Translator(model, VOCABS, {"beam_size": 3})


def test_the_settings_choose_their_penalties_once():
    """SearchSettings (frozen) choose their LengthPenalty and CoverageScorer once; the Translator checks their
    kinds when it is made, not at its first batch."""
    s = SearchSettings(length_penalty="wu", alpha=0.5, coverage_penalty="summary", beta=0.2)
    assert s.lengths is s.lengths and s.coverage is s.coverage
    assert (s.lengths.kind, s.lengths.alpha, s.coverage.kind, s.coverage.beta) == ("wu", 0.5, "summary", 0.2)
    with pytest.raises(AttributeError):
        s.beam_size = 3
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=3)
    for bad, message in (({"length_penalty": "ww"}, "unknown length penalty"),
                         ({"coverage_penalty": "ww"}, "unknown coverage penalty")):
        with pytest.raises(ValueError, match=message):
            Translator(model, VOCABS, SearchSettings(**bad))


def test_copied_oovs_written_back_and_empty_lines():
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=0, sharp=0.1)
    lines = ["w11 w12 w13 w11", "", "w9 w10 w1", "   "]
    out = make(model, SearchSettings(beam_size=2, n_best=2, min_length=3, max_length=4), batch_size=2).translate(lines)
    assert len(out) == 4 and all(len(n) == 2 for n in out)
    assert out[1][0].tokens == [] and out[3][1].tokens == []
    for i in (0, 2):
        src = set(lines[i].split())
        words = [w for t in out[i] for w in t.tokens]
        copied = [w for w in words if w not in VOCABS.tgt.stoi]
        assert copied and set(copied) <= src          # OOVs come back as this example's words


def test_replace_unk_uses_highest_attention():
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=False, seed=1, sharp=1.0)
    with torch.no_grad():
        model.bias[UNK] = 3.0                         # many <unk> in the output
    lines = random_lines(6, seed=5)
    plain = make(model, SearchSettings(beam_size=3, max_length=6), keep_attn=True).translate(lines)
    replaced = make(model, SearchSettings(beam_size=3, max_length=6), replace_unk=True).translate(lines)
    n_unk = 0
    for line, p, r in zip(lines, plain, replaced):
        src = line.split()
        assert len(p[0].tokens) == len(r[0].tokens)
        for i, (wp, wr) in enumerate(zip(p[0].tokens, r[0].tokens)):
            if wp == "<unk>":
                n_unk += 1
                assert wr == src[int(p[0].attn[i].argmax())]
            else:
                assert wr == wp
    assert n_unk > 0


def test_gold_score_is_teacher_forced_log_prob():
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=2)
    src = ["w1 w9 w2", "w3", "", "w10 w10 w4 w5"]
    tgt = ["w1 w9 w13", "w3 w3 w0", "w1", "w10 w4"]  # w9/w10 copyable OOVs, w13 not copyable
    logs = []
    tr = make(model, SearchSettings(beam_size=2), batch_size=3, verbose=True, log=logs.append)
    gold = tr.score_gold(src, tgt)
    assert gold[2] == (0.0, 0)
    V = len(VOCABS.tgt)
    for i in (0, 1, 3):
        batch = next(toy_batches([src[i]], [tgt[i]], VOCABS, 1))
        ids = batch.tgt_ex[0, 1:-1].tolist()
        ids = [t if t < V + batch.n_oov else UNK for t in ids]
        assert gold[i][0] == pytest.approx(rescore(model, batch, 0, [ids])[0], abs=1e-4)
        assert gold[i][1] == len(tgt[i].split()) + 1
    tr.translate(src, tgt)
    text = "\n".join(logs)
    for needle in ("SENT 1:", "PRED 4:", "PRED SCORE:", "GOLD 2:", "GOLD SCORE:", "PRED AVG SCORE:", "GOLD PPL:"):
        assert needle in text


def real_copy_model():
    from helpers.models import make_opt
    from onmt.model_builder import build_model
    opt = make_opt(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp", param_init=0.5)
    torch.manual_seed(0)
    return build_model(opt, VOCABS), opt


def test_real_copy_model_batch_invariance():
    model, _ = real_copy_model()
    model.eval()
    lines = random_lines(30, seed=9)
    search = SearchSettings(beam_size=3, n_best=1, max_length=6, block_ngram_repeat=3)
    from onmt.inputters.dataset import text_batches as batch_fn
    one = make(model, search, batch_size=1, batch_fn=batch_fn, replace_unk=True).translate(lines)
    many = make(model, search, batch_size=30, batch_fn=batch_fn, replace_unk=True).translate(lines)
    for a, b in zip(one, many):
        assert a[0].tokens == b[0].tokens
        assert a[0].score == pytest.approx(b[0].score, abs=1e-4)


def test_cli_writes_one_line_per_input(tmp_path, monkeypatch):
    from onmt.bin.translate import main
    model, opt = real_copy_model()
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    torch.save(ckpt, tmp_path / "m.pt")
    (tmp_path / "src.txt").write_text("w1 w2 w9\n\nw3 w11 w4 w5\n")
    out = tmp_path / "pred.txt"
    main(["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "src.txt"), "-output", str(out),
          "-beam_size", "3", "-n_best", "2", "-max_length", "5", "-avoid_trigram_repetition"])
    lines = out.read_text().split("\n")
    assert len(lines) == 7 and lines[-1] == "" and lines[2] == lines[3] == ""
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def test_cli_reads_standard_input_writes_scores_and_reports_time(tmp_path, monkeypatch):
    """-src - reads the standard input (upstream: a file only; here "no such file: -" before); -with_score and
    -report_time as upstream OpenNMT-py's."""
    import io

    from onmt.bin.translate import main
    from onmt.errors import UserError
    model, opt = real_copy_model()
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    torch.save(ckpt, tmp_path / "m.pt")
    text = "w1 w2 w9\n\nw3 w11 w4 w5\n"
    (tmp_path / "src.txt").write_text(text)
    base = ["-model", str(tmp_path / "m.pt"), "-beam_size", "3", "-max_length", "5"]
    from_file = main(base + ["-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / "a.txt")])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    log = tmp_path / "log.txt"
    from_stdin = main(base + ["-src", "-", "-output", str(tmp_path / "b.txt"), "-with_score", "-report_time",
                              "-log_file", str(log)])
    assert [t.tokens for r in from_stdin for t in r] == [t.tokens for r in from_file for t in r]
    written = [line.split("\t") for line in (tmp_path / "b.txt").read_text().splitlines()]
    assert [w.split() for w, _ in written] == [t.tokens for r in from_file for t in r]
    assert [float(s) for _, s in written] == [t.score for r in from_file for t in r]
    assert "Total translation time (s): " in log.read_text() and "Sentences per second: " in log.read_text()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"w1 \xff\n")))
    with pytest.raises(UserError, match="-src -: the standard input is not UTF-8 text"):
        main(base + ["-src", "-", "-output", str(tmp_path / "c.txt")])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    lines = random_lines(20, seed=4)
    search = SearchSettings(beam_size=3, n_best=2, max_length=8, block_ngram_repeat=2)
    kw = dict(batch_size=7, replace_unk=True)
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=3, sharp=1.0)
    cpu = make(model, search, **kw).translate(lines)
    gpu = make(model.cuda(), search, **kw).translate(lines)
    for a, b in zip(cpu, gpu):
        assert [t.tokens for t in a] == [t.tokens for t in b]
        assert [t.score for t in a] == pytest.approx([t.score for t in b], abs=1e-4)


def test_cli_dump_beam_coverage_penalty_and_n_best(tmp_path):
    """-n_best N: N consecutive lines per input, best first; -dump_beam: valid JSON whose steps trace
    the best prediction; -coverage_penalty / -beta / -stepwise_penalty reach the search."""
    import json

    from onmt.bin.translate import main
    model, opt = real_copy_model()
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    torch.save(ckpt, tmp_path / "m.pt")
    (tmp_path / "src.txt").write_text("w1 w2 w9\n\nw3 w11 w4 w5\n")
    out, dump = tmp_path / "pred.txt", tmp_path / "beam.json"
    base = ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "src.txt"), "-output", str(out),
            "-beam_size", "3", "-n_best", "2", "-max_length", "5"]
    results = main(base + ["-dump_beam", str(dump), "-coverage_penalty", "summary", "-beta", "0.5",
                           "-stepwise_penalty"])
    lines = out.read_text().split("\n")[:-1]
    assert lines == [" ".join(t.tokens) for nbest in results for t in nbest] and len(lines) == 6
    assert all(n[0].score >= n[1].score for n in (results[0], results[2]))
    data = json.loads(dump.read_text())
    assert data["beam_size"] == 3 and [e["line"] for e in data["examples"]] == [0, 1, 2]
    assert data["examples"][1]["steps"] == [] and data["examples"][0]["src"] == ["w1", "w2", "w9"]
    for e in (0, 2):
        steps = data["examples"][e]["steps"]
        assert all(len(s[k]) == 3 for s in steps for k in ("tokens", "words", "scores", "backpointers"))
        best = results[e][0].tokens
        n = len(best)
        traced = []
        for k in range(3):
            if steps[n]["words"][k] != "</s>":
                continue
            seq, t, j = [], n, k
            while t > 0:
                j = steps[t]["backpointers"][j]
                t -= 1
                seq.append(steps[t]["words"][j])
            traced.append(seq[::-1])
        assert best in traced
    plain = main(base)
    assert [[t.tokens for t in n] for n in plain] != [] and not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    from onmt.errors import OptionError, UserError
    for bad in (["-stepwise_penalty"], ["-beta", "0.3"], ["-coverage_penalty", "wu", "-beta", "-1"]):
        with pytest.raises((OptionError, UserError, SystemExit)):
            main(base + bad)


def test_pred_avg_score_and_ppl_as_opennmt_py():
    """PRED AVG SCORE = sum of the n_best scores / sum of their word counts (</s> not counted);
    PRED PPL = exp(-PRED AVG SCORE); empty source lines left out."""
    import math
    import re
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=2)
    logs = []
    src = ["w1 w9 w2", "", "w3 w4 w5 w1"]
    out = make(model, SearchSettings(beam_size=3, n_best=2, max_length=6, length_penalty="wu", alpha=0.8),
               log=logs.append).translate(src)
    preds = [t for i in (0, 2) for t in out[i]]
    avg = sum(t.score for t in preds) / sum(len(t.tokens) for t in preds)
    line = [x for x in logs if x.startswith("PRED AVG SCORE")][0]
    got = re.fullmatch(r"PRED AVG SCORE: (\S+), PRED PPL: (\S+)", line)
    assert float(got[1]) == pytest.approx(avg, abs=1e-4) and float(got[2]) == pytest.approx(math.exp(-avg), rel=1e-3)
    logs.clear()
    make(model, SearchSettings(beam_size=2, max_length=6), log=logs.append).translate(["", " "])
    assert "PRED No words predicted" in logs


def test_cli_profile_first_batches(tmp_path):
    import json

    from onmt.bin.translate import main
    model, opt = real_copy_model()
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    torch.save(ckpt, tmp_path / "m.pt")
    (tmp_path / "src.txt").write_text("\n".join(random_lines(7, seed=2)) + "\n")
    log = tmp_path / "log.txt"
    base = ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "src.txt"), "-beam_size", "2",
            "-max_length", "4", "-batch_size", "2"]
    plain = main(base + ["-output", str(tmp_path / "plain.txt")])
    prof = main(base + ["-output", str(tmp_path / "pred.txt"), "-profile", "2", "-log_file", str(log)])
    assert [[t.tokens for t in n] for n in plain] == [[t.tokens for t in n] for n in prof]
    text = log.read_text()
    assert "Profile of 2 translation batches" in text and "aten::" in text
    assert json.loads((tmp_path / "pred_profile.json").read_text()).get("traceEvents")


def test_cli_checks_dump_beam_and_profile_paths_first(tmp_path, monkeypatch):
    import onmt.translate.session as session
    from onmt.bin.translate import main
    from onmt.errors import UserError
    model, opt = real_copy_model()
    torch.save({"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0},
               tmp_path / "m.pt")
    (tmp_path / "src.txt").write_text("w1 w2\n")
    monkeypatch.setattr(session, "translate_lines", lambda *a, **k: pytest.fail("translated"))
    base = ["-model", str(tmp_path / "m.pt"), "-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / "p.txt")]
    for flag in (["-dump_beam", str(tmp_path / "no" / "b.json")],
                 ["-profile", "1", "-profile_trace", str(tmp_path / "no" / "t.json")]):
        with pytest.raises(UserError, match="does not exist"):
            main(base + flag)


@pytest.mark.parametrize("failure", [RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't "
                                                  "allocate memory: you tried to allocate 204800000 bytes"),
                                     MemoryError()])
def test_a_line_too_long_for_memory_is_one_error_naming_it(monkeypatch, failure):
    """An allocation failure in the search becomes a UserError (one line at the command line) naming the
    longest input line of the batch, 1-based; any other error passes through unchanged."""
    from onmt.errors import UserError
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=0)
    tr = make(model, SearchSettings(beam_size=2, max_length=4), batch_size=8)
    lines = ["w1 w2", "w3 " * 40, "w4"]

    def fail(*args, **kwargs):
        raise failure
    monkeypatch.setattr(tr, "_search", fail)
    with pytest.raises(UserError, match=r"out of memory translating input line 2 \(40 tokens, in a batch of 3 lines\)"
                                        r": cut long inputs with -src_seq_length_trunc N or lower -batch_size"):
        tr.translate(lines)
    monkeypatch.setattr(tr, "_search", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("shape mismatch")))
    with pytest.raises(RuntimeError, match="^shape mismatch$"):
        tr.translate(lines)


def test_out_of_memory_with_a_huge_max_length_names_max_length_not_the_input(monkeypatch):
    """Issue 53: a huge -max_length ran out of memory and was blamed on long inputs for a 22-token input."""
    from onmt.errors import UserError
    model = ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=True, seed=0)
    tr = make(model, SearchSettings(beam_size=2, max_length=10_000_000), batch_size=8)
    monkeypatch.setattr(tr, "_search", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(UserError) as e:
        tr.translate(["w3 " * 22])
    assert str(e.value).startswith("out of memory translating input line 1 (22 tokens) with -max_length 10,000,000")
    assert "lower -max_length" in str(e.value) and "-src_seq_length_trunc" not in str(e.value)
