"""fp16 -amp's loss scale across a resume (Trainer.restore_scaler), with PyTorch's CPU-capable GradScaler: a
resumed run's scale, growth count and weights equal the uninterrupted run's; a change of loss scaling is said."""
import pytest
import torch
import torch.nn as nn

from helpers.models import make_batch, make_vocabs
from onmt.models.generic import ModelDefaults
from onmt.trainer import Trainer
from onmt.utils.statistics import Statistics

VOCABS = make_vocabs(src_vocab_size=60, tgt_vocab_size=40)


def _trainer(device, amp, amp_dtype):
    model = nn.Linear(2, 2)
    return Trainer(model, None, torch.optim.SGD(model.parameters(), lr=0.1), save_model="unused",
                   device=device, amp=amp, amp_dtype=amp_dtype)


class _PlantedLoss:
    """A loss of value `factor` and gradient `factor` on a one-weight model: 1 at most steps, 1e37 at the
    steps of `huge` (an overflow under any loss scale >= 64) and 2.5e35 at those of `medium` (an overflow
    under a scale of 2048, none under 1024); counts the steps itself."""

    def __init__(self, huge, medium):
        self.huge, self.medium, self.calls = set(huge), set(medium), 0

    def __call__(self, model, batch):
        self.calls += 1
        factor = 1e37 if self.calls in self.huge else 2.5e35 if self.calls in self.medium else 1.0
        w, n = model.weight.sum(), batch.n_tgt_tokens      # the trainer divides by the n target tokens
        return factor * n * (w - w.detach() + 1), Statistics(loss=0.0, n_words=n)

    def parts(self, model, batch):
        loss, stats = self(model, batch)
        return {"loss": loss}, stats


class _OneWeight(ModelDefaults, nn.Linear):
    """A one-weight model with the interface's defaults (the trainer calls begin_training_step)."""


def _scaled_trainer(done_steps=0):
    model = _OneWeight(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.5)
    loss = _PlantedLoss(huge={2, 3}, medium={6})
    loss.calls = done_steps
    t = Trainer(model, loss, torch.optim.SGD(model.parameters(), lr=0.01), save_model="unused", max_grad_norm=0)
    t.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)   # fp16 -amp's, CPU-capable
    return t


def test_fp16_resume_goes_on_with_the_loss_scale_of_the_checkpoint():
    """6 steps, overflows at 2 and 3 (skipped, the scale 1024 -> 256), growth back to 512 at step 5, step 6
    taken at 512; against 3 steps, a checkpoint's state (model, optimizer, scaler) and 3 more in a new
    trainer: the same scale, growth count and weight. A new trainer that does not restore the scaler
    reaches 2048 by step 6, where the step overflows and is skipped: another weight."""
    batch = make_batch(VOCABS, B=3, S=4, T=4, seed=1)
    whole = _scaled_trainer()
    for step in range(1, 7):
        whole.train_step(batch, step)
    first = _scaled_trainer()
    for step in range(1, 4):
        first.train_step(batch, step)
    ckpt = {"model": first.model.state_dict(), "optim": first.optimizer.state_dict(),
            "scaler": first.scaler.state_dict()}

    def resumed(restore):
        t = _scaled_trainer(done_steps=3)
        t.model.load_state_dict(ckpt["model"])
        t.optimizer.load_state_dict(ckpt["optim"])
        if restore:
            t.restore({"scaler": ckpt["scaler"], "train_seconds": 0.0}, same_run=True)
        for step in range(4, 7):
            t.train_step(batch, step)
        return t
    again, fresh = resumed(True), resumed(False)
    assert whole.scaler.get_scale() == again.scaler.get_scale() == 512.0
    assert whole.scaler.state_dict()["_growth_tracker"] == again.scaler.state_dict()["_growth_tracker"] == 1
    assert torch.equal(whole.model.weight, again.model.weight)
    assert whole.model.weight.item() == pytest.approx(0.5 - 3 * 0.01 - 2.5e35 * 0.01)   # steps 1, 4, 5, 6
    assert fresh.scaler.get_scale() == 1024.0 and not torch.equal(fresh.model.weight, whole.model.weight)


def test_a_change_of_loss_scaling_on_resume_is_said_once(caplog):
    t = _scaled_trainer()
    with caplog.at_level("INFO", logger="onmt"):
        t.restore({"train_seconds": 0.0}, same_run=False)
        plain = _trainer("cpu", False, "bf16")
        plain.restore({"train_seconds": 0.0, "scaler": {"scale": 512.0}}, same_run=False)
    lines = [r.getMessage() for r in caplog.records]
    assert sum("has no loss scale" in m and "1024" in m for m in lines) == 1
    assert sum("(512.0) is dropped" in m for m in lines) == 1
