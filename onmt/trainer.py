"""The training loop. It knows nothing about the model: it calls `loss_fn(model, batch)`.

Exact resume: a checkpoint holds the model, optimizer, RNG states, step and the data position
(epoch, batches consumed), so N steps + N resumed steps equal 2N steps bit for bit on CPU.
"""
import contextlib
import os
import time

import torch

from onmt.errors import UserError
from onmt.inputters.batch import Batch
from onmt.utils.checkpoint import atomic_torch_save, checkpoint_path, prune_checkpoints, rng_state
from onmt.utils.distributed import World, all_reduce_sum, gather_objects, sum_gradients, sum_statistics
from onmt.utils.logging import logger
from onmt.utils.optim import learning_rate_schedule
from onmt.utils.statistics import Statistics


class TrainingError(UserError):
    """Training cannot go on (e.g. a NaN loss); reported in one line."""


class Trainer:
    def __init__(self, model, loss_fn, optimizer, *, save_model, train_steps=100000, epochs=0,
                 valid_steps=10000, save_checkpoint_steps=5000, keep_checkpoint=-1, report_every=50,
                 max_grad_norm=5.0, device="cpu", amp=False, checkpoint_meta=None, rank=0, tensorboard=None,
                 world_size=1, accum_count=1,
                 sample_every=0, sample_max_length=100, amp_dtype="bf16", lr_schedule=None, learning_rate=None,
                 normalization="tokens"):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.save_model = save_model
        self.train_steps, self.epochs = train_steps, epochs
        self.valid_steps, self.save_checkpoint_steps = valid_steps, save_checkpoint_steps
        self.keep_checkpoint, self.report_every = keep_checkpoint, report_every
        self.max_grad_norm = max_grad_norm
        self.device = torch.device(device)
        # -amp: the forward pass under CUDA autocast in bfloat16 (no loss scaling needed) or float16 (with
        # a GradScaler); the models keep their generators, losses and rewards in float32 islands
        # (onmt/modules/precision.py). On the CPU the flag is ignored: training is float32, bit for bit.
        self.amp = amp and self.device.type == "cuda"
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[amp_dtype]
        if amp and not self.amp and rank == 0:
            logger.info("-amp: mixed precision needs CUDA; training in float32 on the CPU")
        self.scaler = torch.amp.GradScaler("cuda") if self.amp and self.amp_dtype == torch.float16 else None
        self.checkpoint_meta = checkpoint_meta or {}
        self.rank = rank
        self.world = World(rank=rank, world_size=world_size, device=self.device)  # utils/distributed.py
        self.accum_count = accum_count  # batches per optimizer step (on each rank)
        self.tensorboard = tensorboard  # utils/tensorboard.py TensorBoard (-tensorboard) or None
        self.saved = []
        self.sample_every = sample_every  # log a validation example's greedy prediction every N steps
        self.sample_max_length = sample_max_length  # the sample's greedy search stops there
        self._sample_batch = None
        # -decay_method & co. (utils/optim.py learning_rate_schedule): step -> multiplier of
        # `learning_rate`, set before each optimizer step; None: the optimizer's rate is left alone
        self.lr_schedule, self.learning_rate = lr_schedule, learning_rate
        self.normalization = normalization  # -normalization: divide the summed loss by tokens or sentences

    @classmethod
    def from_opt(cls, opt, model, loss_fn, optimizer, device, checkpoint_meta, tensorboard=None, rank=0,
                 world_size=1):
        return cls(model, loss_fn, optimizer, save_model=opt.save_model, train_steps=opt.train_steps,
                   epochs=opt.epochs, valid_steps=opt.valid_steps,
                   save_checkpoint_steps=opt.save_checkpoint_steps, keep_checkpoint=opt.keep_checkpoint,
                   report_every=opt.report_every, max_grad_norm=opt.max_grad_norm, device=device,
                   amp=opt.amp, checkpoint_meta=checkpoint_meta, tensorboard=tensorboard,
                   rank=rank, world_size=world_size, accum_count=opt.accum_count,
                   sample_every=opt.sample_every, sample_max_length=opt.max_gen_length or 100,
                   amp_dtype=opt.amp_dtype, lr_schedule=learning_rate_schedule(opt),
                   learning_rate=opt.learning_rate, normalization=opt.normalization)

    # ------------------------------------------------------------------ loop
    def _done(self, step, epoch):
        if self.epochs > 0:
            return epoch >= self.epochs
        return step >= self.train_steps

    def train(self, train_data, valid_data=None, start_step=0, data_pos=(0, 0)):
        """Train from `start_step` at data position (epoch, batches consumed); returns the last step.
        A SIGTERM or ^C (utils/stop.py) ends the step in progress, saves it and raises Stopped."""
        from onmt.utils.stop import StopSignals
        with StopSignals() as self._stop:
            return self._train(train_data, valid_data, start_step, data_pos)

    def _train(self, train_data, valid_data, start_step, data_pos):
        step = start_step
        epoch, pos = data_pos
        window, t0, t_start = Statistics(), time.time(), time.time()
        group = []  # this rank's batches of the next optimizer step (-accum_count of them)
        total = f"{self.train_steps}" if self.epochs <= 0 else f"epoch {self.epochs}"
        while not self._done(step, epoch):
            for batch in train_data.iter_epoch(epoch, start=pos):
                pos += 1
                group.append(batch)
                if len(group) < self.accum_count:
                    continue
                step += 1
                window.update(self.train_step(group, step))
                group = []
                if step % self.report_every == 0:
                    window = sum_statistics(window, self.world)  # every rank's figures, logged by rank 0
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
                self._stop_if_signalled(step, (epoch, pos))
            else:
                if pos == 0:  # an epoch without a batch would loop forever
                    raise TrainingError(f"epoch {epoch} gave this process no training batch")
                epoch, pos = epoch + 1, 0
                if group and self._done(step, epoch):  # -epochs: the last step takes the batches left
                    step += 1
                    window.update(self.train_step(group, step))
                    group = []
        if valid_data is not None and (self.valid_steps <= 0 or step % self.valid_steps != 0):
            self.validate(valid_data, step)
        if step > start_step:
            self.save(step, (epoch, pos))
        return step

    def profile(self, train_data, n_steps, path, start_step=0, data_pos=(0, 0), warmup=2):
        """-profile N: `warmup` training steps, then `n_steps` steps under torch.profiler
        (onmt/utils/profiling.py: tables logged by rank 0, Chrome trace written to `path`). No
        checkpoint is written: training stops there. Returns the number of profiled steps."""
        from onmt.utils.profiling import Profiler
        profiler = Profiler(n_steps, path, self.device, "training steps", log=logger.info) if self.rank == 0 else None
        epoch, pos = data_pos
        step, group, total = start_step, [], warmup + n_steps
        while step - start_step < total:
            got = 0
            for batch in train_data.iter_epoch(epoch, start=pos):
                got += 1
                group.append(batch)
                if len(group) < self.accum_count:
                    continue
                if profiler is not None and step - start_step == warmup:
                    profiler.start()
                step += 1
                self.train_step(group, step)
                group = []
                if profiler is not None:
                    profiler.done_one()
                if step - start_step >= total:
                    break
            else:
                if got == 0 and pos == 0:
                    raise TrainingError(f"epoch {epoch} gave this process no training batch")
                epoch, pos = epoch + 1, 0
        if profiler is not None:
            profiler.stop()
        return n_steps

    def _stop_if_signalled(self, step, data_pos):
        """After a step: when a SIGTERM or ^C came (every rank agrees), save this step, with its data
        position, unless just saved, and raise Stopped (one line; -train_from it resumes exactly)."""
        stop = getattr(self, "_stop", None)
        if stop is None:
            return
        world = getattr(self, "world", None)
        if world is not None and world.distributed:      # every rank stops at the same step
            from onmt.utils.distributed import all_reduce_sum
            if all_reduce_sum(int(stop.received is not None), self.device) == 0:
                return
            if stop.received is None:
                stop.received, stop.signum = "SIGTERM", 15     # another rank's signal
        elif stop.received is None:
            return
        path = checkpoint_path(self.save_model, step)
        if not (self.save_checkpoint_steps > 0 and step % self.save_checkpoint_steps == 0):
            path = self.save(step, data_pos)
        raise stop.stopped(step, path if self.rank == 0 else None)

    def _autocast(self):
        if self.amp:
            return torch.autocast(device_type="cuda", dtype=self.amp_dtype)
        return contextlib.nullcontext()

    def train_step(self, batches, step):
        """One optimizer step on `batches` (this rank's -accum_count Batches; one Batch alone is one).

        Normalization: each loss (a sum over target tokens) is divided by the target tokens of the
        whole step, every batch of every rank (counted before any forward pass, Batch.n_tgt_tokens,
        which the loss's Statistics.n_words must equal), and gradients are summed over batches and
        ranks: the gradient of one batch holding them all, not a mean of per-batch means. With
        -normalization sents the divisor is the step's examples (Batch.batch_size) instead."""
        self.model.train()
        batches = [batches] if isinstance(batches, Batch) else list(batches)
        counts = [b.n_tgt_tokens for b in batches]
        normalizer = sum(counts) if self.normalization == "tokens" else sum(b.batch_size for b in batches)
        if self.world.distributed:
            normalizer = all_reduce_sum(normalizer, self.device)
        normalizer = max(normalizer, 1)
        self.optimizer.zero_grad(set_to_none=True)
        stats = Statistics()
        for batch, count in zip(batches, counts):
            batch = batch.to(self.device)
            with self._autocast():
                loss, batch_stats = self.loss_fn(self.model, batch)
            if not torch.isfinite(loss).item():
                raise TrainingError(f"loss is {loss.item()} at step {step}; stopping "
                                    "(lower -learning_rate or set -max_grad_norm)")
            if batch_stats.n_words != count:
                raise RuntimeError(f"the loss counted {batch_stats.n_words} target tokens, the batch has {count}")
            loss = loss / normalizer
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            stats.update(batch_stats)
            stats.n_src_words += int(batch.src_lengths.sum())
        if self.world.distributed:
            sum_gradients(self.model.parameters())  # before unscaling: an inf on any rank skips the step on all
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if self.lr_schedule is not None:
            lr = self.learning_rate * self.lr_schedule(step)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
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
        stats = sum_statistics(stats, self.world)  # each rank validated its share of the batches
        if self.rank == 0:
            at = f" (step {step})" if step is not None else ""
            # OpenNMT-py's two lines first (scripts read them), then this project's
            logger.info(f"Validation perplexity: {stats.ppl():g}")
            logger.info(f"Validation accuracy: {stats.accuracy():g}")
            logger.info(f"Validation xent: {stats.xent():.4f}{at}")
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
        """One line in OpenNMT-py's form, then this project's figures:
        `Step 50/300; acc: 45.21; ppl: 12.34; xent: 2.51; lr: 1.00e-03; 1234/567 tok/s; 12 sec; epoch 0`
        then `[; p(copy) 0.31][; RL figures]`
        (tok/s: source/target tokens, padding excluded, per second of this report window; sec: since
        training started)."""
        if self.rank != 0:
            return
        lr = self.optimizer.param_groups[0]["lr"]
        tok_s = stats.n_words / max(window_s, 1e-9)
        src_s = stats.n_src_words / max(window_s, 1e-9)
        rl = stats.rl_report()
        p_copy = stats.mean_p_copy()
        logger.info(f"Step {step}/{total}; acc: {stats.accuracy():.2f}; "
                    f"ppl: {stats.ppl():.2f}; xent: {stats.xent():.2f}; lr: {lr:.2e}; "
                    f"{src_s:.0f}/{tok_s:.0f} tok/s; {elapsed_s:.0f} sec; epoch {epoch}"
                    + (f"; p(copy) {p_copy:.2f}" if p_copy is not None else "")
                    + (f"; {rl}" if rl else ""))
        if "sampled_inputs" in stats.extra:   # a model trained with scheduled sampling (the reinforced one)
            share = 100.0 * stats.extra["sampled_inputs"] / max(stats.n_words, 1)
            logger.info(f"Step {step}: {share:.1f}% of decoder inputs were the model's own predictions "
                        "(scheduled sampling)")
        if self.tensorboard is not None:
            scalars = {**stats.scalars(), "lr": lr, "tgt_per_sec": tok_s}
            self.tensorboard.add_scalars("progress", step, scalars)

    # ------------------------------------------------------------------ checkpoints
    def save(self, step, data_pos):
        rng_ranks = gather_objects(rng_state(), self.world)  # every rank's: each resumes its own draws
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
            "data_pos": list(data_pos),   # (epoch, batches read by EACH rank: they read as many)
            "rng": rng_ranks[0],
            "world_size": self.world.world_size,
        })
        if self.world.world_size > 1:
            payload["rng_ranks"] = rng_ranks
        if self.scaler is not None:
            payload["scaler"] = self.scaler.state_dict()
        atomic_torch_save(payload, path)
        logger.info(f"Saved checkpoint {path}")
        if path not in self.saved:
            self.saved.append(path)
        self.saved = prune_checkpoints(self.saved, self.keep_checkpoint)
        return path
