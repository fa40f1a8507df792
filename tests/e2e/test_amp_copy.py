"""See et al.'s model (copy attention + coverage) under bf16 autocast on the CPU (issue 56), on the GPU
suite's copy task (bench/gpu_suite.sh step 5: tools/make_toy_data.py -task copy, 3000 / 200 examples,
-rnn_size 128 -word_vec_size 64 -batch_size 32, 300 steps, SGD 1.0).

The validation perplexity at step 300 of this task is chaotic in float32 itself: seeds 1-4 gave 17.87,
4.81, 1.52, 5.98 (docs/GPU.md, issue 56); a single bf16 run cannot be told from float32 by it. What
is sharp is the gradient: on the float32 seed-2 model at step 300, the gradient of one batch under
bfloat16 autocast was 2.9 % off float32's with the attention scores in bfloat16, 0.3 % with them a
float32 island (onmt/modules/global_attention.py); seeds 3, 4: 7.0 / 2.3 % before, 0.4 / 0.3 % after.
CPU time: two trainings of ~15 s and a few passes (47 s in all, wall, on a 2-core host with native
bfloat16; CPU autocast emulates bfloat16 elsewhere, slower).
"""
from argparse import Namespace

import pytest
import torch

import onmt.trainer as trainer_module
from helpers.e2e import make_data, preprocess, train
from onmt.hardware import native_bf16_cpu
from onmt.inputters.dataset import ShardedDataset
from onmt.inputters.vocab import Vocabs
from onmt.losses import build_loss
from onmt.model_builder import build_model
from onmt.utils.checkpoint import load_checkpoint

# one thread: the float32 run is chaotic, and two threads sum in another order (seed 2 then reached ppl
# 22.27 on the AMX host, against 16.29 with one)
pytestmark = pytest.mark.usefixtures("one_torch_thread")

FP32_SPREAD = (1.52, 17.87)   # seeds 1-4, float32, step 300 (module docstring)
CALIBRATED_PPL = 4.81         # seed 2's float32 model where the gradient bound was measured
SEE = ["-brnn", "-copy_attn", "-coverage_attn", "-global_attention", "mlp", "-rnn_size", "128",
       "-word_vec_size", "64", "-batch_size", "32", "-train_steps", "300", "-valid_steps", "300",
       "-save_checkpoint_steps", "300", "-report_every", "100"]


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    folder = tmp_path_factory.mktemp("amp_copy")
    data = make_data("copy", folder / "data", seed=1, train_size=3000, valid_size=200, test_size=200)
    return preprocess(data, folder / "prep" / "data")


def _ppl(log):
    lines = [x for x in open(log, encoding="utf-8") if "Validation perplexity:" in x]
    return float(lines[-1].split()[-1])


def _gradients(ckpt, prefix, bf16):
    opt = Namespace(**ckpt["opt"])
    model = build_model(opt, Vocabs.from_dict(ckpt["vocab"]), ckpt["model"]).train()
    batch = next(iter(ShardedDataset.from_data(prefix, "train", 32, seed=1).iter_epoch(0)))
    torch.manual_seed(0)   # the same dropout masks
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss, _ = build_loss(opt)(model, batch)
    loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def test_see_et_al_under_bf16_autocast(prefix, tmp_path, monkeypatch):
    if not native_bf16_cpu():
        # seen on an AVX2 host (AMD EPYC): the encoder's nn.LSTM under CPU bfloat16 autocast fails in oneDNN
        # ("could not create a primitive descriptor for the LSTM forward propagation primitive"; its verbose
        # log: bf16 forward_training, "unsupported datatype"), with the code before and after issue 55 alike
        pytest.skip("bf16 autocast training on a CPU without native bfloat16: oneDNN has no bf16 LSTM "
                    "training primitive here (train.py's -amp runs float32 on such a CPU)")
    fp32 = train(prefix, tmp_path / "fp32", *SEE, "-seed", "2", "-log_file", tmp_path / "fp32.log")
    ppl32 = _ppl(tmp_path / "fp32.log")
    assert FP32_SPREAD[0] <= ppl32 <= FP32_SPREAD[1]
    g32 = _gradients(load_checkpoint(fp32), prefix, bf16=False)
    g16 = _gradients(load_checkpoint(fp32), prefix, bf16=True)
    error = float((g16 - g32).norm() / g32.norm())
    # the bound was measured on the float32 model this seed reached on the calibrating host (ppl 4.81);
    # the float32 run is chaotic and another host's arithmetic reaches another model, where the bound
    # may not hold: an AMX host reached ppl 16.29, its bf16 gradient 11.6 % off (12.2 % without the
    # attention island): a known gap of issue 56, reported below as xfail, never passed silently
    calibrated = abs(ppl32 - CALIBRATED_PPL) < 0.01
    if calibrated:
        assert error < 0.01   # 0.029 with bfloat16 attention scores
    # -amp on any CPU: the trainer's CPU bfloat16 autocast (as on one with native bfloat16)
    monkeypatch.setattr(trainer_module, "native_bf16_cpu", lambda: True)
    train(prefix, tmp_path / "bf16", *SEE, "-seed", "2", "-amp", "-log_file", tmp_path / "bf16.log")
    assert "-amp: bfloat16 autocast on the CPU" in open(tmp_path / "bf16.log", encoding="utf-8").read()
    assert FP32_SPREAD[0] <= _ppl(tmp_path / "bf16.log") <= FP32_SPREAD[1]
    if not calibrated and error >= 0.01:
        pytest.xfail(f"bf16 gradient {100 * error:.1f} % off float32 on this host's float32 model "
                     f"(ppl {ppl32:.2f}, not the calibrated {CALIBRATED_PPL}): issue 56")
