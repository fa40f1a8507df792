"""The training loop. It knows nothing about the model: it calls `loss_fn(model, batch)` to train
and `loss_fn.validate(model, batch)` to validate, and the loss names its own figures; its
`Reporter` (trainer_reporting.py) writes the validation, report and early-stopping lines.

Exact resume: a checkpoint holds the model, optimizer, RNG states, step and the data position
(epoch, batches consumed), so N steps + N resumed steps equal 2N steps bit for bit on CPU; also the
early-stopping state and `train_seconds`, the time spent in training steps since the first run
(CPU seconds of the process on the CPU, wall seconds elsewhere; validation and saving excluded).

Each validation that improves the early-stopping criteria (onmt/utils/early_stopping.py) saves its
step and makes {save_model}_best.pt that checkpoint; -early_stopping N stops after N validations in
a row without improvement; -train_time_limit S stops once this run's training steps took S seconds.
"""
import contextlib
import time

import torch
import torch.distributed as dist

from onmt.errors import UserError
from onmt.hardware import native_bf16_cpu
from onmt.inputters.batch import Batch
from onmt.trainer_checkpoints import CheckpointKeeper
from onmt.trainer_reporting import Reporter
from onmt.utils.checkpoint import best_checkpoint_path, checkpoint_path, link_best, restore_best
from onmt.utils.distributed import World, all_reduce_sum, sum_gradients, sum_statistics
from onmt.utils.early_stopping import EarlyStopping
from onmt.utils.logging import logger
from onmt.utils.moving_average import MovingAverage, applied
from onmt.utils.optim import learning_rate_schedule
from onmt.utils.statistics import Statistics
from onmt.utils.stop import StopSignals
from onmt.utils.update_norms import PartNorms, as_sums


class TrainingError(UserError):
    """Training cannot go on (e.g. a NaN loss); reported in one line."""


class Trainer:
    def __init__(self, model, loss_fn, optimizer, *, save_model, train_steps=100000, epochs=0,
                 valid_steps=10000, save_checkpoint_steps=5000, keep_checkpoint=-1, report_every=50,
                 max_grad_norm=5.0, device="cpu", amp=False, checkpoint_meta=None, rank=0,
                 tensorboard=None, world_size=1, accum_count=1,
                 sample_every=0, sample_max_length=100, amp_dtype="bf16", lr_schedule=None,
                 learning_rate=None, normalization="tokens", early_stopping=None,
                 train_time_limit=0.0, moving_average=None):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.save_model = save_model
        self.train_steps, self.epochs = train_steps, epochs
        self.valid_steps, self.save_checkpoint_steps = valid_steps, save_checkpoint_steps
        self.keep_checkpoint, self.report_every = keep_checkpoint, report_every
        self.max_grad_norm = max_grad_norm
        self.device = torch.device(device)
        # -amp: the forward pass under autocast in bfloat16 (no loss scaling needed) or float16
        # (with a GradScaler, CUDA); the models keep their generators, losses and rewards in float32
        # islands (onmt/modules/precision.py), which take their device from the tensors. On a CPU
        # with native bfloat16 (AVX-512 BF16 / AMX: onmt/hardware.py) -amp_dtype bf16 is CPU
        # autocast with the same islands; elsewhere on the CPU the flag is ignored: training is
        # float32, bit for bit.
        cpu_bf16 = self.device.type == "cpu" and amp_dtype == "bf16" and native_bf16_cpu()
        self.amp = amp and (self.device.type == "cuda" or cpu_bf16)
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[amp_dtype]
        if amp and rank == 0 and self.amp and self.device.type == "cpu":
            logger.info("-amp: bfloat16 autocast on the CPU (native bfloat16)")
        elif amp and not self.amp and rank == 0:
            logger.info("-amp: mixed precision needs CUDA, or -amp_dtype bf16 on a CPU with native "
                        "bfloat16 (avx512_bf16 / amx_bf16); training in float32 on the CPU")
        self.scaler = (torch.amp.GradScaler("cuda") if self.amp and self.amp_dtype == torch.float16
                       else None)
        self.checkpoint_meta = checkpoint_meta or {}
        self.rank = rank
        # utils/distributed.py
        self.world = World(rank=rank, world_size=world_size, device=self.device)
        self.accum_count = accum_count  # batches per optimizer step (on each rank)
        self.tensorboard = tensorboard  # utils/tensorboard.py TensorBoard (-tensorboard) or None
        # this run's step checkpoints: written, pruned (-keep_checkpoint), which steps are saved
        self.checkpoints = CheckpointKeeper(save_model, keep_checkpoint, self.world,
                                            self.checkpoint_meta)
        # -decay_method & co. (utils/optim.py learning_rate_schedule): step -> multiplier of
        # `learning_rate`, set before each optimizer step; None: the optimizer's rate is left alone
        self.lr_schedule, self.learning_rate = lr_schedule, learning_rate
        # -normalization: divide the summed loss by tokens or sentences
        self.normalization = normalization
        # tracks the best checkpoint even at patience 0
        self.early_stopping = early_stopping or EarlyStopping()
        self.train_time_limit = train_time_limit  # seconds of training steps in this run (0: none)
        # training-step time since the first run (resumed from checkpoints)
        self.train_seconds = 0.0
        self._run_seconds = 0.0    # ... in this run
        # CPU seconds of this process on the CPU (fair between runs sharing cores), wall time
        # elsewhere
        self._clock = time.process_time if self.device.type == "cpu" else time.perf_counter
        # the report lines'
        self.clock_name = "training CPU" if self.device.type == "cpu" else "training wall"
        self._profile = None   # a ProfileRun while train(profile=...) runs
        # -average_decay: the weights' moving average (utils/moving_average.py), validated and saved
        self.moving_average = moving_average
        self._stop = None   # the StopSignals while train() runs (utils/stop.py)
        # the validation, report and early-stopping lines; -sample_every's sample (its greedy
        # search stops at sample_max_length)
        self.reporter = Reporter(model, loss_fn, optimizer, device=self.device, rank=rank,
                                 world=self.world, tensorboard=tensorboard,
                                 autocast=self._autocast, clock_name=self.clock_name,
                                 report_every=report_every, early_stopping=self.early_stopping,
                                 sample_every=sample_every, sample_max_length=sample_max_length,
                                 vocab=self.checkpoint_meta.get("vocab"))

    @classmethod
    def from_opt(cls, opt, model, loss_fn, optimizer, device, checkpoint_meta, tensorboard=None,
                 rank=0, world_size=1):
        return cls(model, loss_fn, optimizer, save_model=opt.save_model,
                   train_steps=opt.train_steps, epochs=opt.epochs, valid_steps=opt.valid_steps,
                   save_checkpoint_steps=opt.save_checkpoint_steps,
                   keep_checkpoint=opt.keep_checkpoint,
                   report_every=opt.report_every, max_grad_norm=opt.max_grad_norm, device=device,
                   amp=opt.amp, checkpoint_meta=checkpoint_meta, tensorboard=tensorboard,
                   rank=rank, world_size=world_size, accum_count=opt.accum_count,
                   sample_every=opt.sample_every, sample_max_length=opt.max_gen_length,
                   amp_dtype=opt.amp_dtype, lr_schedule=learning_rate_schedule(opt),
                   learning_rate=opt.learning_rate, normalization=opt.normalization,
                   early_stopping=EarlyStopping(opt.early_stopping, opt.early_stopping_criteria),
                   train_time_limit=opt.train_time_limit,
                   moving_average=MovingAverage.from_opt(opt))

    def restore(self, ckpt, same_run, path=None):
        """Go on from checkpoint `ckpt` (read from `path`): its train_seconds always; its
        early-stopping state (patience used, best so far) only when `same_run` (the same
        -save_model: an interrupted run goes on; a new phase from it starts its own count and its
        own best)."""
        self.train_seconds = float(ckpt.get("train_seconds", 0.0))
        if same_run and "early_stopping" in ckpt:
            self.early_stopping.load_state_dict(ckpt["early_stopping"])
        if same_run:   # -keep_checkpoint counts the run's earlier checkpoints too
            self.checkpoints.resume(ckpt, path)
            if self.rank == 0:
                restore_best(self.save_model, self.early_stopping.best_step)
        self.restore_scaler(ckpt.get("scaler"))
        if self.moving_average is not None:   # -average_decay: a new phase has its own average
            self.moving_average.restore(ckpt if same_run else {}, self.model, path,
                                        log=self.rank == 0)

    def restore_scaler(self, state):
        """fp16 -amp's loss scale goes on from the checkpoint's GradScaler `state` (its scale and
        growth count: the resumed run skips the steps the uninterrupted one would); when one side
        has no scaler, one log line says what changes."""
        if self.scaler is not None and state:
            self.scaler.load_state_dict(state)
        elif self.scaler is not None and self.rank == 0:
            logger.info(f"-amp fp16: the checkpoint has no loss scale (trained without fp16 -amp); "
                        f"the scale starts at {self.scaler.get_scale():g}")
        elif state and self.rank == 0:
            logger.info(f"the checkpoint's fp16 loss scale ({state.get('scale', '?')}) is dropped: "
                        "this run trains without fp16 -amp")

    # ------------------------------------------------------------------ loop
    def _done(self, step, epoch):
        if self._profile is not None:
            return step >= self._profile.last
        if self._out_of_time() or self.early_stopping.should_stop:
            return True
        if self.epochs > 0:
            return epoch >= self.epochs
        return step >= self.train_steps

    def _out_of_time(self):
        """-train_time_limit reached (every rank agrees: rank 0's clock decides)."""
        if self.train_time_limit <= 0:
            return False
        out = self._run_seconds >= self.train_time_limit
        if self.world.distributed:
            flag = torch.tensor([int(out)], device=self.device)
            dist.broadcast(flag, 0)
            out = bool(flag.item())
        return out

    def train(self, train_data, valid_data=None, start_step=0, data_pos=(0, 0), profile=None):
        """Train from `start_step` at data position (epoch, batches consumed); returns the last
        step. A SIGTERM or ^C (utils/stop.py) ends the step in progress, saves it and raises
        Stopped. `profile` (-profile, onmt/utils/profiling.py ProfileRun): the loop runs the
        profiled steps, then stops with no report line, sample or checkpoint."""
        self._profile = profile
        try:
            with StopSignals() as self._stop:
                return self._train(train_data, valid_data, start_step, data_pos)
        finally:
            self._profile = None

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
                window.update(self._timed_step(group, step))
                group = []
                if step % self.report_every == 0 and self._profile is None:
                    # every rank's figures, logged by rank 0
                    window = sum_statistics(window, self.world)
                    self.reporter.report(step, total, epoch, window, time.time() - t0,
                                         time.time() - t_start, self.train_seconds)
                    window, t0 = Statistics(), time.time()
                if valid_data is not None and self.valid_steps > 0 and step % self.valid_steps == 0:
                    saving = self._done(step, epoch) or (self.save_checkpoint_steps > 0 and
                                                         step % self.save_checkpoint_steps == 0)
                    self._validate_and_keep_best(valid_data, step, (epoch, pos), save_step=saving)
                if self.reporter.sample_due(step) and self._profile is None:
                    with applied(self.moving_average, self.model):
                        self.reporter.log_sample(valid_data, step)
                if self._done(step, epoch):
                    break
                if self.save_checkpoint_steps > 0 and step % self.save_checkpoint_steps == 0 and \
                        step not in self.checkpoints.saved_steps:
                    self.save(step, (epoch, pos))
                self._stop_if_signalled(step, (epoch, pos))
            else:
                if pos == 0:  # an epoch without a batch would loop forever
                    raise TrainingError(f"epoch {epoch} gave this process no training batch")
                epoch, pos = epoch + 1, 0
                # -epochs: the last step takes the batches left
                if group and self._done(step, epoch):
                    step += 1
                    window.update(self._timed_step(group, step))
                    group = []
        self.reporter.log_why_stopped(step, self.train_time_limit, self._run_seconds)
        if valid_data is not None and self.valid_steps > 0 and step % self.valid_steps != 0 \
                and not self.early_stopping.should_stop:
            # -valid_steps 0: no validation
            self._validate_and_keep_best(valid_data, step, (epoch, pos),
                                         save_step=step > start_step)
        if step > start_step and step not in self.checkpoints.saved_steps:
            self.save(step, (epoch, pos))
        self._stop_if_signalled(step, (epoch, pos))   # a signal during the last validation
        return step

    def _timed_step(self, group, step):
        profiler = self._profile.profiler if self._profile is not None else None
        if profiler is not None and step == self._profile.first + 1:
            profiler.start()
        t0 = self._clock()
        stats = self.train_step(group, step)
        spent = self._clock() - t0
        if profiler is not None and step > self._profile.first:
            profiler.done_one()
        self._run_seconds += spent
        self.train_seconds += spent
        return stats

    def _validate_and_keep_best(self, valid_data, step, data_pos, save_step=False):
        """Validate at `step`; a new best (every early-stopping criterion improved) is saved and
        becomes {save_model}_best.pt. `save_step`: save the step's own checkpoint too (the last
        step's)."""
        with applied(self.moving_average, self.model):   # -average_decay: the average's figures
            stats = self.validate(valid_data, step)
        if stats is None:   # interrupted: the caller saves and stops (_stop_if_signalled)
            return
        improved = self.early_stopping.update(self.reporter.validation_figures(stats), step)
        if save_step and step not in self.checkpoints.saved_steps:
            self.save(step, data_pos)
        if not improved:
            self.reporter.log_no_improvement()
            return
        path, best = checkpoint_path(self.save_model, step), best_checkpoint_path(self.save_model)
        if step not in self.checkpoints.saved_steps:
            # this step's checkpoint, under the best's name only
            self.save(step, data_pos, path=best)
        elif self.rank == 0:
            link_best(path, best)
        if self.rank == 0:
            logger.info(f"New best: {self.early_stopping.describe()} -> {best}")

    def validate(self, valid_data, step=None):
        """The Reporter's validation (its figures logged) at `step`, stopped by a signal (None)."""
        return self.reporter.validate(valid_data, step, self.train_seconds, self._stop)

    def _stop_if_signalled(self, step, data_pos):
        """After a step: when a SIGTERM or ^C came (every rank agrees), save this step, with its
        data position, unless just saved, and raise Stopped (one line; -train_from it resumes
        exactly)."""
        stop, world = self._stop, self.world
        if stop is None:
            return
        if world.distributed:      # every rank stops at the same step
            if all_reduce_sum(int(stop.received is not None), self.device) == 0:
                return
            if stop.received is None:
                stop.received, stop.signum = "SIGTERM", 15     # another rank's signal
        elif stop.received is None:
            return
        path = checkpoint_path(self.save_model, step)
        if step not in self.checkpoints.saved_steps:
            path = self.save(step, data_pos)
        # every rank leaves once rank 0's file is written:
        # a rank leaving the group mid-write aborts gloo
        if world.distributed:
            all_reduce_sum(0, self.device)
        raise stop.stopped(step, path if self.rank == 0 else None)

    def _loss_parts(self, batch):
        """({name: loss}, Statistics): the loss's terms (onmt/interface.py Loss)."""
        return self.loss_fn.parts(self.model, batch)

    def _backward(self, loss, retain_graph=False):
        (self.scaler.scale(loss) if self.scaler is not None
         else loss).backward(retain_graph=retain_graph)

    def _autocast(self):
        if self.amp:
            return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)
        return contextlib.nullcontext()

    def train_step(self, batches, step):
        """One optimizer step on `batches`
        (this rank's -accum_count Batches; one Batch alone is one).

        Normalization: each loss (a sum over target tokens) is divided by the target tokens of the
        whole step, every batch of every rank (counted before any forward pass, Batch.n_tgt_tokens,
        which the loss's Statistics.n_words must equal), and gradients are summed over batches and
        ranks: the gradient of one batch holding them all, not a mean of per-batch means. With
        -normalization sents the divisor is the step's examples (Batch.batch_size) instead."""
        self.model.train()
        self.model.begin_training_step(step)   # e.g. scheduled sampling's probability of this step
        batches = [batches] if isinstance(batches, Batch) else list(batches)
        counts = [b.n_tgt_tokens for b in batches]
        normalizer = (sum(counts) if self.normalization == "tokens"
                      else sum(b.batch_size for b in batches))
        if self.world.distributed:
            normalizer = all_reduce_sum(normalizer, self.device)
        normalizer = max(normalizer, 1)
        self.optimizer.zero_grad(set_to_none=True)
        stats = Statistics()
        norms = None   # the gradient each part of a loss in parts adds (utils/update_norms.py)
        for batch, count in zip(batches, counts):
            # on the host batch, before the move: no device sync
            n_src = int(batch.src_lengths.sum())
            batch = batch.to(self.device)
            with self._autocast():
                parts, batch_stats = self._loss_parts(batch)
            loss = sum(parts.values())
            # the step's one sync (with the statistics' one copy)
            if not torch.isfinite(loss).item():
                raise TrainingError(f"loss is {loss.item()} at step {step}; stopping "
                                    "(lower -learning_rate or set -max_grad_norm)")
            if batch_stats.n_words != count:
                raise RuntimeError(f"the loss counted {batch_stats.n_words} target tokens, "
                                   f"the batch has {count}")
            if len(parts) > 1:
                norms = norms or PartNorms(self.model.parameters())
                norms.backward(parts, normalizer, self._backward)
            else:
                self._backward(loss / normalizer)
            stats.update(batch_stats)
            stats.n_src_words += n_src
        if self.world.distributed:
            # before unscaling: an inf on any rank skips the step on all
            sum_gradients(self.model.parameters())
        if norms is not None:   # before clipping: what each term asked for
            scale = float(self.scaler.get_scale()) if self.scaler is not None else 1.0
            stats.extra.update(as_sums(norms.finish(self.world, scale)))
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
        if self.moving_average is not None:
            self.moving_average.update(self.model, step)
        return stats

    # ------------------------------------------------------------------ validation / reporting
    def save(self, step, data_pos, path=None):
        """Write the checkpoint of `step` to {save_model}_step_{step}.pt (pruned with
        -keep_checkpoint), or to `path` (not pruned); every rank calls it, rank 0 writes. Returns
        the path on rank 0 (None, and nothing written, while profiling)."""
        if self._profile is not None:
            return None
        state = {"model": self.model.state_dict(), "optim": self.optimizer.state_dict(),
                 "train_seconds": self.train_seconds,
                 "early_stopping": self.early_stopping.state_dict()}
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        if self.moving_average is not None:   # "model": the average; "train_model": the weights
            state.update(self.moving_average.checkpoint_weights(self.model))
        return self.checkpoints.save(step, data_pos, state, path)
