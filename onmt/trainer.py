"""The training loop. It knows nothing about the model: it calls `loss_fn(model, batch)`.

Exact resume: a checkpoint holds the model, optimizer, RNG states, step and the data position
(epoch, batches consumed), so N steps + N resumed steps equal 2N steps bit for bit on CPU.
"""
import contextlib
import os
import time

import torch

from onmt.utils.checkpoint import atomic_torch_save, checkpoint_path, prune_checkpoints, rng_state
from onmt.utils.cli import UserError
from onmt.utils.logging import logger
from onmt.utils.statistics import Statistics


class TrainingError(UserError):
    """Training cannot go on (e.g. a NaN loss); reported in one line."""


class Trainer:
    def __init__(self, model, loss_fn, optimizer, *, save_model, train_steps=100000, epochs=0,
                 valid_steps=10000, save_checkpoint_steps=5000, keep_checkpoint=-1, report_every=50,
                 max_grad_norm=5.0, device="cpu", amp=False, checkpoint_meta=None, rank=0, tensorboard=None,
                 sample_every=0, sample_max_length=100):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.save_model = save_model
        self.train_steps, self.epochs = train_steps, epochs
        self.valid_steps, self.save_checkpoint_steps = valid_steps, save_checkpoint_steps
        self.keep_checkpoint, self.report_every = keep_checkpoint, report_every
        self.max_grad_norm = max_grad_norm
        self.device = torch.device(device)
        self.amp = amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda") if self.amp else None
        self.checkpoint_meta = checkpoint_meta or {}
        self.rank = rank
        self.tensorboard = tensorboard  # utils/tensorboard.py TensorBoard (-tensorboard) or None
        self.saved = []
        self.sample_every = sample_every  # log a validation example's greedy prediction every N steps
        self.sample_max_length = sample_max_length  # the sample's greedy search stops there
        self._sample_batch = None

    @classmethod
    def from_opt(cls, opt, model, loss_fn, optimizer, device, checkpoint_meta, tensorboard=None):
        return cls(model, loss_fn, optimizer, save_model=opt.save_model, train_steps=opt.train_steps,
                   epochs=opt.epochs, valid_steps=opt.valid_steps,
                   save_checkpoint_steps=opt.save_checkpoint_steps, keep_checkpoint=opt.keep_checkpoint,
                   report_every=opt.report_every, max_grad_norm=opt.max_grad_norm, device=device,
                   amp=opt.amp, checkpoint_meta=checkpoint_meta, tensorboard=tensorboard,
                   sample_every=opt.sample_every, sample_max_length=opt.max_gen_length or 100)

    # ------------------------------------------------------------------ loop
    def _done(self, step, epoch):
        if self.epochs > 0:
            return epoch >= self.epochs
        return step >= self.train_steps

    def train(self, train_data, valid_data=None, start_step=0, data_pos=(0, 0)):
        """Train from `start_step` at data position (epoch, batches consumed); returns the last step."""
        step = start_step
        epoch, pos = data_pos
        window, t0, t_start = Statistics(), time.time(), time.time()
        total = f"{self.train_steps}" if self.epochs <= 0 else f"epoch {self.epochs}"
        while not self._done(step, epoch):
            for batch in train_data.iter_epoch(epoch, start=pos):
                pos += 1
                step += 1
                window.update(self.train_step(batch, step))
                if step % self.report_every == 0:
                    self._report(step, total, epoch, window, time.time() - t0, time.time() - t_start)
                    window, t0 = Statistics(), time.time()
                if valid_data is not None and self.valid_steps > 0 and step % self.valid_steps == 0:
                    self.validate(valid_data, step)
                if self.sample_every > 0 and step % self.sample_every == 0:
                    self.log_sample(valid_data, step)
                if self._done(step, epoch):
                    break
                if self.save_checkpoint_steps > 0 and step % self.save_checkpoint_steps == 0:
                    self.save(step, (epoch, pos))
            else:
                epoch, pos = epoch + 1, 0
        if valid_data is not None and (self.valid_steps <= 0 or step % self.valid_steps != 0):
            self.validate(valid_data, step)
        if step > start_step:
            self.save(step, (epoch, pos))
        return step

    def _autocast(self):
        if self.amp:
            return torch.autocast(device_type="cuda", dtype=torch.float16)
        return contextlib.nullcontext()

    def train_step(self, batch, step):
        self.model.train()
        batch = batch.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        with self._autocast():
            loss, stats = self.loss_fn(self.model, batch)
        if not torch.isfinite(loss).item():
            raise TrainingError(f"loss is {loss.item()} at step {step}; stopping "
                                "(lower -learning_rate or set -max_grad_norm)")
        loss = loss / max(stats.n_words, 1)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
        else:
            loss.backward()
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        return stats

    # ------------------------------------------------------------------ validation / reporting
    def validate(self, valid_data, step=None):
        self.model.eval()
        stats = Statistics()
        with torch.no_grad(), self._autocast():
            for batch in valid_data.iter_epoch(0):
                _, s = self.loss_fn(self.model, batch.to(self.device))
                stats.update(s)
        self.model.train()
        if self.rank == 0:
            at = f" (step {step})" if step is not None else ""
            logger.info(f"Validation perplexity: {stats.ppl():.2f}; accuracy: {stats.accuracy():.2f}{at}")
            rouge = stats.valid_rouge_report()
            if rouge:
                logger.info(rouge + at)
            if self.tensorboard is not None and step is not None:
                self.tensorboard.add_scalars("valid", step, stats.scalars())
        return stats

    def log_sample(self, valid_data, step):
        """-sample_every: log the first validation example (the first row of the first validation
        batch, always the same one) with its greedy prediction (onmt/inspection/sample.py)."""
        if self.rank != 0:
            return
        from onmt.inputters.vocab import Vocabs
        from onmt.inspection.sample import describe_example, select_example
        if self._sample_batch is None:
            first = next(iter(valid_data.iter_epoch(0)), None) if valid_data is not None else None
            if first is None:
                logger.info("-sample_every: no validation example to sample; no samples")
                self.sample_every = 0
                return
            self._sample_batch = (select_example(first, 0), Vocabs.from_dict(self.checkpoint_meta["vocab"]))
        batch, vocabs = self._sample_batch
        logger.info(describe_example(self.model, batch.to(self.device), vocabs, step=step,
                                     max_length=self.sample_max_length))

    def _report(self, step, total, epoch, stats, window_s, elapsed_s):
        if self.rank != 0:
            return
        lr = self.optimizer.param_groups[0]["lr"]
        tok_s = stats.n_words / max(window_s, 1e-9)
        rl = stats.rl_report()
        p_copy = stats.mean_p_copy()
        logger.info(f"Step {step}/{total}; epoch {epoch}; acc: {stats.accuracy():6.2f}; "
                    f"ppl: {stats.ppl():8.2f}; xent: {stats.xent():5.2f}; lr: {lr:.2e}; "
                    f"{tok_s:.0f} tgt tok/s; {elapsed_s:.0f} sec"
                    + (f"; p(copy) {p_copy:.2f}" if p_copy is not None else "")
                    + (f"; {rl}" if rl else ""))
        if self.tensorboard is not None:
            scalars = {**stats.scalars(), "lr": lr, "tgt_per_sec": tok_s}
            self.tensorboard.add_scalars("progress", step, scalars)

    # ------------------------------------------------------------------ checkpoints
    def save(self, step, data_pos):
        if self.rank != 0:
            return None
        path = checkpoint_path(self.save_model, step)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        payload = dict(self.checkpoint_meta)
        payload.update({
            "model": self.model.state_dict(),
            "optim": self.optimizer.state_dict(),
            "step": step,
            "data_pos": list(data_pos),
            "rng": rng_state(),
        })
        if self.scaler is not None:
            payload["scaler"] = self.scaler.state_dict()
        atomic_torch_save(payload, path)
        logger.info(f"Saved checkpoint {path}")
        if path not in self.saved:
            self.saved.append(path)
        self.saved = prune_checkpoints(self.saved, self.keep_checkpoint)
        return path
