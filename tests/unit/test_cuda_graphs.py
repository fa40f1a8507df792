"""-cuda_graphs (issue 56): the teacher-forced pass and the ML loss captured as CUDA graphs on CUDA
(Execution capture "cuda-graphs", onmt/execution.py `captured`), eager everywhere else.

On the CPU: the selector says "off" there, the captured region gets the encoding from outside (the
encoder's packing reads host lengths) and gives the eager loss, and train.py says it runs eagerly. On
CUDA (skipped without one; bench/gpu_suite.sh runs the CUDA tests): the captured loss and gradients
of a bucketed batch, twice (capture, then replay), equal the eager ones, for every family.
"""
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from helpers.e2e import random_pair_data
from helpers.models import build, make_batch, make_opt, make_vocabs
from onmt.bin import train as train_bin
from onmt.constants import PAD
from onmt.execution import Execution, captured
from onmt.losses import build_loss

FAMILIES = {
    "rnn": dict(brnn=True, global_attention="general"),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp"),
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6),
}


def _padded(batch, extra_src, extra_tgt):
    """The batch with more PAD source positions and target steps (a bucketed batch's)."""
    def more(t, n):
        return F.pad(t, (0, n), value=PAD)  # (B, L + n)
    return replace(batch, src=more(batch.src, extra_src), src_ex=more(batch.src_ex, extra_src),
                   tgt=more(batch.tgt, extra_tgt), tgt_ex=more(batch.tgt_ex, extra_tgt))


def test_the_selector_captures_on_cuda_only():
    opt = make_opt()
    opt.compile, opt.cuda_graphs = False, True
    assert Execution.for_training(opt, "cpu") == Execution()
    on_cuda = Execution.for_training(opt, "cuda")   # no CUDA needed to make the selector
    assert on_cuda.capture == "cuda-graphs" and on_cuda.describe().endswith(", capture cuda-graphs")
    opt.cuda_graphs = False
    assert Execution.for_training(opt, "cuda").capture == "off"
    assert "capture" not in Execution().describe()   # the line as before where nothing is captured
    with pytest.raises(ValueError):
        Execution(capture="graphs")


def test_the_region_gets_the_encoding_and_gives_the_eager_loss():
    torch.manual_seed(0)
    opt, vocabs = make_opt(**FAMILIES["copy"]), make_vocabs()
    model, loss_fn = build(opt, vocabs), build_loss(opt)
    batch = make_batch(vocabs, B=3, S=7, T=6, copy_source=True)
    eager, stats = loss_fn(model, batch)
    seen = []

    def wrap(terms):
        def region(model, batch, enc):
            seen.append(enc)
            return terms(model, batch, enc)
        return region
    loss_fn.capture_with(wrap)
    loss, stats_c = loss_fn(model, batch)
    assert len(seen) == 1 and seen[0] is not None   # encoded outside the region
    torch.testing.assert_close(loss, eager)
    assert stats_c.n_words == stats.n_words


def test_train_py_says_it_runs_eagerly_on_the_cpu(tmp_path):
    data = random_pair_data(str(tmp_path), seed=0, n_examples=12, max_len=6, target=lambda w: w[:2])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "m"), "-copy_attn", "-layers", "1",
                    "-rnn_size", "8", "-word_vec_size", "8", "-batch_size", "4", "-train_steps", "2",
                    "-valid_steps", "0", "-save_checkpoint_steps", "2", "-cuda_graphs", "-length_buckets", "4",
                    "-log_file", str(tmp_path / "log")])
    log = open(tmp_path / "log", encoding="utf-8").read()
    assert log.count("-cuda_graphs: CUDA only; the teacher-forced pass runs eagerly on this device") == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("family", list(FAMILIES))
def test_captured_step_equals_eager_on_cuda(family):
    torch.manual_seed(0)
    opt, vocabs = make_opt(**FAMILIES[family]), make_vocabs()
    batch = _padded(make_batch(vocabs, B=3, S=7, T=6, copy_source=True), 1, 2).to("cuda")
    results = {}
    for name in ("eager", "captured"):
        torch.manual_seed(0)
        model, loss_fn = build(opt, vocabs).cuda(), build_loss(opt)
        if name == "captured":
            loss_fn.capture_with(captured)
        for _ in range(3):   # capture, then replays
            model.zero_grad()
            loss, _ = loss_fn(model, batch)
            loss.backward()
        results[name] = (loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None])
    torch.testing.assert_close(results["captured"][0], results["eager"][0], rtol=1e-4, atol=1e-5)
    for a, b in zip(results["captured"][1], results["eager"][1]):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)
