"""experiments/cnndm.py, its views and its report: lead-3, the jobs and what they need, the baselines, the
ablations' models, the multi-sentence diagnostics, and a tiny train -> tune -> score -> report run on
CNN/DM-shaped toy data (articles of several sentences, ` . ` between sentences, as the shared data has)."""
import gzip
import json
import os
import random
import sys

import numpy as np
import pytest
import torch

from helpers.models import build, make_opt, make_vocabs

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from experiments import cnndm as exp  # noqa: E402
from experiments import cnndm_report as report  # noqa: E402
from experiments import cnndm_views as cv  # noqa: E402
from experiments.cnndm_arms import ALPHAS, ARMS, MIN_LENGTHS, baseline, views  # noqa: E402
from onmt.evaluation import METRICS, score, summarize  # noqa: E402
from onmt.evaluation.diagnostics import novel_ngrams, repeated_ngrams  # noqa: E402


def test_lead3_is_the_first_three_sentences_of_the_uncut_article(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("( cnn ) -- a man was seen . he ran ! why ? nobody knows . the end .\nonly one sentence\n")
    assert cv.lead3(str(src), str(tmp_path / "lead.txt")) == ["( cnn ) -- a man was seen . he ran ! why ?",
                                                              "only one sentence"]


def test_views_and_what_each_job_needs(tmp_path):
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-results", str(tmp_path / "results")])
    a.argv = []
    wanted = exp.wanted_views(a)
    assert wanted == views((1, 2)) and wanted[:3] == ["lead3", "r_ml", "pg_ml"]
    assert set(wanted) == {"lead3", "pg_ml", "pg_cov", "r_ml", "r_noid", "r_nota", "r_none",
                           "a1", "b1", "m1", "a2", "b2", "m2", "c1", "r_ss0", "r_ssramp"}
    assert wanted[-2:] == ["r_ss0", "r_ssramp"]   # scheduled sampling's arms last
    jobs = exp.job_list(a, wanted)
    needs = {n: set(d) for n, d, _ in jobs}
    names = [n for n, _, _ in jobs]
    assert needs["train:a1"] == needs["train:c1"] == {"train:r_ml", "tune:r_ml"}   # from r_ml's chosen one
    assert needs["train:pg_cov"] == {"train:pg_ml"} and needs["train:r_noid"] == set()
    assert needs["tune:a1"] == {"train:a1"} and needs["score:a1"] == {"tune:a1"} and needs["score:lead3"] == set()
    assert names.index("tune:r_ml") < names.index("train:a1") and all(cmd is not None for _, _, cmd in jobs)
    # -views a1: what a1 continues comes with it
    a.views = "a1"
    assert exp.wanted_views(a) == ["r_ml", "a1"]


def test_a_fresh_machine_retrains_nothing_whose_figures_are_committed(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for view in ("lead3", "pg_ml", "r_ml", "r_noid", "a1", "b1", "m1", "c1"):
        (results / f"{view}.json").write_text("{}")
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-results", str(results)])
    a.argv = []
    cmds = {n: cmd for n, _, cmd in exp.job_list(a, exp.wanted_views(a))}
    assert cmds["score:lead3"] is None and cmds["train:r_noid"] is None and cmds["tune:pg_ml"] is None
    assert cmds["train:a1"] is None and cmds["tune:a1"] is None
    # a2, b2, m2 are not scored: they continue r_ml's chosen checkpoint, which this machine lacks; r_ml is
    # trained again (to its committed step), its committed choice reused, not tuned again
    assert cmds["train:a2"] is not None and cmds["train:r_ml"] is not None and cmds["tune:r_ml"] is None
    assert cmds["score:r_ml"] is None
    needs = {n: set(d) for n, d, _ in exp.job_list(a, exp.wanted_views(a))}
    assert needs["train:a2"] == {"train:r_ml", "tune:r_ml"}
    # pg_cov is not scored and pg_ml's best checkpoint is missing: pg_ml trains again, not once pg_cov is scored
    assert cmds["train:pg_ml"] is not None
    (tmp_path / "results" / "pg_cov.json").write_text("{}")
    cmds = {n: cmd for n, _, cmd in exp.job_list(a, exp.wanted_views(a))}
    assert cmds["train:pg_ml"] is None and cmds["train:pg_cov"] is None


def _result(tuning_lsum, per_example):
    fig = {"per_example": {m: per_example for m in METRICS}}
    return {"tuning": {"best": 0, "rows": [{"rouge": {"rougeLsum": tuning_lsum, "rougeL": 0.0}}]},
            "dev": fig, "test": fig}


def test_baselines_and_the_control_chosen_on_tuning():
    results = {"b1": _result(30.0, [0.9, 0.9]), "m1": _result(31.0, [0.1, 0.1]), "b2": _result(20.0, [0.0, 0.0])}
    control = report.control_of(results)
    assert control("1") == "m1" and control("2") == "b2" and control("3") is None   # tuning, not test
    assert [baseline(v, control) for v in ("r_noid", "r_nota", "r_none", "pg_ml", "pg_cov", "lead3")] == ["r_ml"] * 6
    assert baseline("a1", control) == "m1" and baseline("c1", control) == "m1" and baseline("a2", control) == "b2"
    assert baseline("r_ml", control) is None and baseline("b1", control) is None


def _reinforced(view):
    flags = {f.lstrip("-"): True for f in ARMS[view].options if f != "-reinforced"}
    return build(make_opt(reinforced=True, brnn=True, rnn_size=8, word_vec_size=6, **flags), make_vocabs())


def test_each_ablation_builds_the_model_the_paper_describes():
    full, no_dec, no_temp, none = (_reinforced(v) for v in ("r_ml", "r_noid", "r_nota", "r_none"))
    assert full.decoder.dec_attn is not None and full.decoder.enc_attn.temporal
    assert no_dec.decoder.dec_attn is None and no_dec.decoder.enc_attn.temporal
    assert no_temp.decoder.dec_attn is not None and not no_temp.decoder.enc_attn.temporal
    assert none.decoder.dec_attn is None and not none.decoder.enc_attn.temporal
    # the intra-decoder attention's matrix W^d_attn is gone, the rest keeps its shapes
    n = {k: v.shape for k, v in full.state_dict().items()}
    assert {k: v.shape for k, v in no_dec.state_dict().items()} == {k: s for k, s in n.items() if "dec_attn" not in k}
    # behaviour: without temporal normalization, an attention step ignores the attention history
    att = no_temp.decoder.enc_attn
    q, mem, mask = torch.randn(2, 8), torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.bool)
    keys = att.keys(mem)
    _, first, lse = att(q, keys, mem, mask)
    _, again, _ = att(q, keys, mem, mask, lse)
    assert torch.allclose(first, again)
    _, first_t, lse_t = full.decoder.enc_attn(q, full.decoder.enc_attn.keys(mem), mem, mask)
    _, again_t, _ = full.decoder.enc_attn(q, full.decoder.enc_attn.keys(mem), mem, mask, lse_t)
    assert not torch.allclose(first_t, again_t)      # the paper's: attended positions are penalized


def test_multi_sentence_repetition_novelty_and_sentences_by_hand():
    """tests/unit/test_diagnostics.py checks the counts on single sentences; here summaries of several
    sentences, as CNN/DM's: n-grams run across the ` . ` between sentences."""
    pred = "the cat sat . the cat sat . a dog ran ."
    # trigrams: the-cat-sat cat-sat-. sat-.-the .-the-cat the-cat-sat cat-sat-. sat-.-a .-a-dog a-dog-ran dog-ran-.
    assert repeated_ngrams(pred.split(), 3) == (2, 10)
    src = "the cat sat on a mat . a dog ran by ."
    # bigrams of pred: the-cat cat-sat sat-. .-the the-cat cat-sat sat-. .-a a-dog dog-ran ran-. -> novel: sat-. x2,
    # .-the, ran-. (the source has "mat ." and ". a", "ran by")
    assert novel_ngrams(pred.split(), src.split(), 2) == (4, 11)
    fig = cv.figures([pred, "one two . three"], [src, "one two three"], ["the cat sat on a mat .", "one two ."],
                     copied=[[True] * 12, [False] * 4])
    assert fig["sentences"] == pytest.approx((3 + 2) / 2) and fig["ref_sentences"] == pytest.approx(1.0)
    assert fig["repeated_trigrams"] == pytest.approx(100 * 2 / 12)                   # 2 of 10 + 0 of 2
    assert fig["novel_ngrams"]["2"] == pytest.approx(100 * (4 + 2) / (11 + 3))      # two-. and .-three
    assert fig["novel_ngrams"]["1"] == pytest.approx(100 * 1 / 16)                  # the second's "."
    assert fig["copy_share"] == pytest.approx(100 * 12 / 16)
    assert fig["rouge"]["rougeLsum"] == pytest.approx(100 * np.mean(fig["per_example"]["rougeLsum"]), abs=0.01)


# --------------------------------------------------------------------------- a tiny run
WORDS = [f"w{i}" for i in range(30)]


def _toy_pair(rng):
    """An article of 4-6 sentences ` . `-separated; its summary: two of its sentences, a word changed."""
    sents = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) + " ." for _ in range(rng.randint(4, 6))]
    summary = " ".join(sents[:2]).split()
    summary[0] = rng.choice(WORDS)
    return " ".join(sents), " ".join(summary)


def _write(folder, split, pairs, gz=True):
    for i, side in enumerate(("src", "tgt")):
        text = "".join(p[i] + "\n" for p in pairs)
        if gz:
            with gzip.open(folder / f"{split}.{side}.txt.gz", "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (folder / f"{split}.{side}.txt").write_text(text)


def toy_data(tmp, valid):
    """tmp/data: 60 training, `valid` validation and 4 test pairs of CNN/DM-shaped toy text (.gz)."""
    data = tmp / "data"
    data.mkdir()
    rng = random.Random(1)
    for split, n in (("train", 60), ("valid", valid), ("test", 4)):
        _write(data, split, [_toy_pair(rng) for _ in range(n)])
    return data


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cnndm")
    data = toy_data(tmp, valid=7)
    argv = ["-workdir", str(tmp / "work"), "-data", str(data), "-results", str(tmp / "results"),
            "-views", "lead3,a1,b1", "-seeds", "1", "-tune_pairs", "3", "-noblock_pairs", "2", "-jobs", "2",
            "-ml_seconds", "3", "-arm_seconds", "2", "-valid_steps", "10", "-save_steps", "5", "-poll", "0.2",
            "-vocab", "40,25", "-trunc", "30,16", "-model_sizes", "8,16"]
    exp.main(argv)
    a = exp.parse_args(argv)
    results = {v: json.load(open(tmp / "results" / f"{v}.json")) for v in ("lead3", "r_ml", "a1", "b1")}
    return a, argv, results


def test_tiny_run_scores_what_tuning_chose(tiny_run):
    a, _, res = tiny_run
    work = a.workdir
    read = cv.read_lines
    tune, dev = read(f"{work}/data/tune.src.txt"), read(f"{work}/data/dev.tgt.txt")
    assert len(tune) == 3 and len(dev) == 4 and len(read(f"{work}/data/test.src.txt")) == 4
    for v in ("r_ml", "a1", "b1"):
        grid = res[v]["tuning"]
        n_models = len({r["model"] for r in grid["rows"]})
        assert len(grid["rows"]) >= n_models * len(ALPHAS) * len(MIN_LENGTHS) and grid["chosen"]["beam_size"] == 5
        assert not {"top edge", "bottom edge"} & set(grid["edges"].values())      # widened off every edge
        assert grid["chosen"]["block_ngram_repeat"] == 3 and grid["src"].endswith("tune.src.txt")
        best = max(grid["rows"], key=lambda r: r["rouge"]["rougeLsum"])["rouge"]["rougeLsum"]
        assert grid["rows"][grid["best"]]["rouge"]["rougeLsum"] == best
        # the figures are the chosen setting's predictions, scored again here
        for split in ("dev", "test"):
            preds = read(os.path.join(work, "tuned", v, f"{split}.txt"))
            want = summarize(score(preds, read(f"{work}/data/{split}.tgt.txt")))
            assert res[v][split]["rouge"]["rougeLsum"] == pytest.approx(want["rougeLsum"]["f"], abs=1e-3)
        assert res[v]["noblock"]["pairs"] == 2 and "rougeLsum" in res[v]["test"]["rouge_official"]
    # a1 and b1 start from the checkpoint r_ml's tuning chose; their candidates come after it
    start = torch.load(res["r_ml"]["tuning"]["chosen"]["model"], weights_only=True)
    assert res["a1"]["step"] > start["step"] and res["a1"]["phase_seconds"] > 0
    lead = read(os.path.join(work, "tuned", "lead3", "test.txt"))
    assert lead == [" . ".join(s.split(" . ")[:3]) + " ." for s in read(f"{work}/data/test.src.txt")]
    assert res["lead3"]["test"]["copy_share"] == 100.0 and res["lead3"]["test"]["sentences"] == 3.0


def test_tiny_run_report_and_resume(tiny_run):
    a, argv, res = tiny_run
    table = open(os.path.join(a.results, "table.md")).read()
    test_part = table.split("## Development")[0]
    (row,) = [line for line in test_part.splitlines() if line.startswith("| a1: ")]
    delta = 100 * np.mean(np.array(res["a1"]["test"]["per_example"]["rougeLsum"]) -
                          np.array(res["b1"]["test"]["per_example"]["rougeLsum"]))
    assert f"| {delta:+.2f} |" in row and "| b1 |" in row and "39.87 / 15.82 / 36.90" in row
    assert "40.34 / 17.70 / 36.57" in test_part and "## Samples" in table
    # again: every job is done, nothing runs
    b = exp.parse_args(argv)
    b.argv = argv
    assert all(cmd is None for _, _, cmd in exp.job_list(b, exp.wanted_views(b)))


def test_a_fresh_machine_trains_r_ml_again_to_the_same_weights(tiny_run, tmp_path):
    """Only the figures survive a session: a1 wanted again on a fresh machine trains r_ml again to its
    committed step with the same seed and gets the committed weights (same CPU), reusing its choice."""
    a, argv, res = tiny_run
    results = tmp_path / "results"
    results.mkdir()
    for view in ("lead3", "r_ml", "b1"):        # a1 lost: it is wanted again
        (results / f"{view}.json").write_text(json.dumps(res[view]))
    fresh = [*argv]
    fresh[fresh.index("-workdir") + 1] = str(tmp_path / "work")
    fresh[fresh.index("-results") + 1] = str(results)
    b = exp.parse_args(fresh)
    b.argv = fresh
    cmds = {n: cmd for n, _, cmd in exp.job_list(b, exp.wanted_views(b))}
    assert cmds["train:r_ml"] is not None and cmds["tune:r_ml"] is None and cmds["train:b1"] is None
    train = exp.train_command(b, exp.prepare_data(b), "r_ml")
    assert train[train.index("-train_steps") + 1] == str(res["r_ml"]["step"]) and "-train_time_limit" not in train
    exp.main(fresh)
    regen = json.load(open(tmp_path / "work" / "tuned" / "r_ml" / "regen.json"))
    assert regen["step"] == res["r_ml"]["step"] and regen["identical"], regen
    assert regen["sha256"] == res["r_ml"]["weights_sha256"]
    chosen = cv.read_lines(str(tmp_path / "work" / "tuned" / "r_ml" / "chosen.yaml"))
    assert any(line.startswith("model: " + str(tmp_path / "work")) for line in chosen)
    assert not os.path.exists(tmp_path / "work" / "tuned" / "r_ml" / "grid.json")     # not tuned again
    a1 = json.load(open(results / "a1.json"))
    assert a1["step"] > res["r_ml"]["step"] and "weights_sha256" in a1


def test_the_plan_says_what_it_trains_skips_and_how_long(tmp_path, monkeypatch, capsys):
    """Issue 53: `./run.sh cnndm_small` on a fresh clone preprocessed 39k pairs, reprinted the committed
    tables and exited 0 having trained nothing, without saying so."""
    results = tmp_path / "results"
    results.mkdir()
    for view in ("lead3", "pg_ml", "pg_cov", "r_ml", "r_noid", "r_nota", "r_none", "a1", "b1", "m1", "c1"):
        (results / f"{view}.json").write_text("{}")
    a = exp.parse_args(["-workdir", str(tmp_path / "w"), "-results", str(results), "-jobs", "2"])
    a.argv = []
    wanted = exp.wanted_views(a)
    lines = exp.plan(a, wanted, exp.job_list(a, wanted))
    assert lines[0] == f"cnndm_small: figures in {results}, checkpoints in {tmp_path / 'w'}"
    assert lines[1].startswith("  skipped, their figures are committed: lead3, pg_ml, pg_cov, a1, b1, m1, c1, r_none, "
                               "r_noid, r_nota; ")
    assert "trained again to their committed step, a later arm continues them: r_ml" in lines[1]
    assert "cnndm_small_results=DIR" in lines[1]
    assert lines[2] == ("  to train: r_ml (at most 90 min), a2 (at most 30 min), b2 (at most 30 min), "
                        "m2 (at most 30 min), r_ss0 (at most 90 min), r_ssramp (at most 90 min)")
    assert lines[3].startswith("  training: at most 6.0 h of CPU time, about 3.0 h of wall time with -jobs 2")
    # everything committed: nothing preprocessed, the tables written again, and it says so
    for view in wanted:
        (results / f"{view}.json").write_text("{}")
    monkeypatch.setattr(exp, "prepare_data", lambda a: pytest.fail("preprocessed with nothing to train"))
    monkeypatch.setattr(report, "write_report", lambda folder: None)
    exp.main(["-workdir", str(tmp_path / "w"), "-results", str(results)])
    out = capsys.readouterr().out
    assert "nothing to train, tune or score: the tables are written again from the committed figures" in out
    assert not (tmp_path / "w").exists()
