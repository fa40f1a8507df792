"""Every benchmark of bench/ runs at a tiny size (issue 53, item 7): nothing ran them, so two of them
(reinforced_step_bench.py, mixed_step_bench.py) broke unseen when the model gained an option. Each runs
in this process (torch imported once: the whole file takes seconds), its command line as `python -m
bench.NAME ...` would get it; a benchmark with sizes of its own gets them tiny, the others -tiny."""
import glob
import os
import runpy
import sys

import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT

TINY_STEP = ["-tiny", "-device", "cpu"]
# bench module -> its tiny command line ({d}: a folder with a tiny checkpoint m.pt and src.txt / tgt.txt)
RUNS = {
    "reinforced_step_bench": TINY_STEP,
    "mixed_step_bench": TINY_STEP,
    "train_bench": ["-tiny", "-threads", "1"],
    "packing_bench": ["-tiny"],
    "padding_bench": ["-tiny"],
    "preprocess_bench": ["-tiny", "-num_threads", "1"],
    "decoder_pass_bench": ["-batch_size", "2", "-steps", "3", "-src_len", "4", "-word_vec_size", "8",
                           "-rnn_size", "8", "-repeats", "1", "-threads", "1"],
    "reward_bench": ["-batch_size", "2", "-length", "5", "-vocab", "20", "-rounds", "1", "-reps", "1",
                     "-ref_reps", "1", "-threads", "1"],
    "rouge_bench": ["-n", "10", "-rounds", "1", "-reference_rounds", "1"],
    "translate_bench": ["-model", "copy", "-batch_sizes", "1,2", "-n_sents", "2", "-n_sents_b1", "2",
                        "-src_min", "3", "-src_max", "5", "-src_vocab", "50", "-tgt_vocab", "30",
                        "-word_vec_size", "8", "-rnn_size", "8", "-max_length", "5", "-min_length", "1",
                        "-threads", "1"],
    "beam_source_bench": ["-model", "{d}/m.pt", "-src", "{d}/src.txt", "-n", "2", "-batch_size", "2",
                          "-beam_size", "2", "-max_length", "4", "-rounds", "1"],
    "compile_translate_bench": ["-model", "{d}/m.pt", "-src", "{d}/src.txt", "-n", "2", "-batch_size", "2",
                                "-beam_size", "2", "-max_length", "4", "-rounds", "1"],
    "precision_quality": ["-model", "{d}/m.pt", "-src", "{d}/src.txt", "-tgt", "{d}/tgt.txt", "-n", "2",
                          "-batch_size", "2", "-precisions", "fp32", "-tiny",
                          "-translate_opts", "-max_length 4 -beam_size 2"],
    "suite_parity": ["-work", "{d}", "-families", "rnn", "-amps", "bf16"],
    "explore_bench": ["-src", "{d}/src.txt", "-ref", "{d}/tgt.txt", "-system", "{d}/tgt.txt", "-repeat", "1"],
    "release_size": ["-sizes", "tiny"],
    "server_bench": ["-n_lines", "4", "-clients", "1,2", "-src_min", "3", "-src_max", "5", "-src_vocab", "50",
                     "-tgt_vocab", "30", "-word_vec_size", "8", "-rnn_size", "8", "-beam_size", "2", "-length", "3",
                     "-rounds", "1", "-threads", "1"],
    "step_files": ["-family", "rnn", "-what", "train"],
    "ab_checkouts": ["-a", ROOT, "-b", ROOT, "-rounds", "1", "-steps", "1", "-families", "rnn", "-batch_size", "2",
                     "-src_len", "5", "-tgt_len", "3", "-rnn_size", "8"],
    # runs upstream OpenNMT-py 3.5.1 (a venv of its own, installed on first use): its options here
    "compare_upstream": ["-h"],
}
# not benchmarks: what compare_upstream.py runs under upstream's Python
NOT_RUN = {"upstream_wrapper"}


def test_every_benchmark_has_a_smoke_run():
    names = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "bench", "*.py"))} - {"__init__"}
    assert names - NOT_RUN == set(RUNS), "a benchmark without a smoke run: add it to RUNS"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    save_tiny_checkpoint(d / "m.pt", "copy", seed=1)
    (d / "src.txt").write_text("w1 w2 w3\nw4 w5 w1\n")
    (d / "tgt.txt").write_text("w1 w2\nw4\n")
    for amp, ppl in (("fp32", "10.0"), ("bf16", "10.05")):
        (d / f"train_rnn_{amp}.log").write_text(f"[x] Validation perplexity: {ppl}\n")
    return d


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_benchmark_runs_at_a_tiny_size(name, inputs, monkeypatch, capsys):
    if name == "explore_bench":
        from bench.lib.browser import find_chromium
        if find_chromium() is None:
            pytest.skip("explore_bench needs Chromium (bench/lib/browser.py finds none here)")
    if name == "rouge_bench":
        from bench.rouge_bench import SHARED
        if not os.path.exists(os.path.join(SHARED, "cnndm", "valid.src.txt.gz")):
            pytest.skip(f"rouge_bench scores the shared CNN/DM data, absent here ({SHARED})")
    if name == "compile_translate_bench":
        from onmt import opts
        try:
            opts.check_compile("cpu")
        except Exception as e:      # no C compiler for torch.compile here: the bench refuses the same way
            pytest.skip(f"-compile unavailable: {e}")
        import functools
        # torch.compile's graph capture, not inductor's code generation (over a minute on a loaded CPU)
        monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    argv = [a.format(d=inputs) for a in RUNS[name]]
    monkeypatch.setattr(sys, "argv", [f"bench/{name}.py", *argv])
    threads = torch.get_num_threads()
    try:
        sys.modules.pop(f"bench.{name}", None)      # as `python -m` runs it (mixed_step_bench imports one)
        runpy.run_module(f"bench.{name}", run_name="__main__")
    except SystemExit as e:
        assert e.code in (0, None), f"bench/{name}.py exited with {e.code}"
    finally:
        torch.set_num_threads(threads)
        if name == "compile_translate_bench":
            torch._dynamo.reset()
    out = capsys.readouterr().out
    assert out.strip(), f"bench/{name}.py printed nothing"
