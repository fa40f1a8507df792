"""What the trainer reports: validation (its statistics, the log lines scripts read, TensorBoard),
the -sample_every example, the training report line and the early-stopping lines: a `Reporter`,
the collaborator of onmt/trainer.py's Trainer, built with what it reads that does not change during
a run (the model, loss, optimizer, rank, ...); what changes (the step, the clocks, the stop signals)
comes with each call.

The figures of a loss are the loss's (onmt/losses/ml.py, rl.py): it gives the Statistics sums and,
from a window's sums, `report(stats) -> (figures of the step line, lines of their own)`,
`scalars(stats)` (TensorBoard's names) and `valid_report(stats)` (its validation lines); the update
norms are utils/update_norms.py's. Here: the token figures (xent, ppl, accuracy), the rate and the
speed."""
import time

import torch

from onmt.inspection.sample import TrainingSample
from onmt.utils import update_norms
from onmt.utils.distributed import sum_statistics
from onmt.utils.logging import logger
from onmt.utils.statistics import Statistics

VALID_PROGRESS_SECONDS = 30.0   # a validation longer than this logs a progress line this often


class Reporter:
    """Args:
        model, loss_fn, optimizer: the trainer's (the loss names its figures, the optimizer its
            learning rate).
        device, rank, world: where the trainer runs (utils/distributed.py World).
        tensorboard: a utils/tensorboard.py TensorBoard or None.
        autocast: () -> the context the trainer's forward passes run in (-amp).
        clock_name: the report lines' name of the training clock ("training CPU", "training wall").
        report_every: steps per report window (the pace).
        early_stopping: the trainer's utils/early_stopping.py EarlyStopping.
        sample_every, sample_max_length, vocab: -sample_every's (0: no samples), the sample's
            greedy search's length limit, and the checkpoint's vocabulary it is read with.
    """

    def __init__(self, model, loss_fn, optimizer, *, device, rank, world, tensorboard, autocast,
                 clock_name, report_every, early_stopping, sample_every=0, sample_max_length=100,
                 vocab=None):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.device, self.rank, self.world = device, rank, world
        self.tensorboard, self.autocast = tensorboard, autocast
        self.clock_name, self.report_every = clock_name, report_every
        self.early_stopping = early_stopping
        self.sample_every, self.sample_max_length = sample_every, sample_max_length
        self.vocab = vocab
        self._sample_batch = None
        self._diverging_said = False

    def validate(self, valid_data, step=None, seconds=0.0, stop=None):
        """Validation statistics (every rank's shares summed), logged by rank 0 with the training
        clock's `seconds`; None when a SIGTERM or ^C came during it (`stop`, utils/stop.py
        StopSignals) in a one-process run (it stops there: the trainer then saves and stops)."""
        self.model.eval()
        stats = Statistics()
        start = last = time.monotonic()
        with torch.no_grad(), self.autocast():
            for i, batch in enumerate(valid_data.iter_epoch(0)):
                now = time.monotonic()
                # a long validation says so
                if now - last >= VALID_PROGRESS_SECONDS and self.rank == 0:
                    logger.info(f"Validation: {i} batches, {stats.n_examples} examples "
                                f"(wall {now - start:.0f} s)")
                    last = now
                if stop is not None and stop.received is not None and not self.world.distributed:
                    self.model.train()
                    logger.info(f"Validation interrupted by {stop.received}")
                    return None
                stats.update(self.loss_fn.validate(self.model, batch.to(self.device)))
        self.model.train()
        stats = sum_statistics(stats, self.world)  # each rank validated its share of the batches
        if self.rank == 0:
            at = (f" (step {step}; {self.clock_name} {seconds:.0f} s)"
                  if step is not None else "")
            # OpenNMT-py's two lines first (scripts read them), then this project's
            logger.info(f"Validation perplexity: {stats.ppl():g}")
            logger.info(f"Validation accuracy: {stats.accuracy():g}")
            logger.info(f"Validation xent: {stats.xent():.4f}{at}")
            for line in self.loss_fn.valid_report(stats):
                logger.info(line + at)
            if self.tensorboard is not None and step is not None:
                self.tensorboard.add_scalars("valid", step, self.scalars(stats))
        return stats

    def scalars(self, stats):
        """name -> value of every figure of `stats`, TensorBoard's names: the token figures (xent,
        ppl, accuracy), the loss's own (its `scalars`), the update norms (norm_ml, norm_rl)."""
        return {**stats.scalars(), **self.loss_fn.scalars(stats),
                **update_norms.scalars(stats.extra)}

    def validation_figures(self, stats):
        """What early stopping reads (onmt/utils/early_stopping.py): `scalars`, with ppl and
        accuracy even when the validation scored no token."""
        return {"ppl": stats.ppl(), "accuracy": stats.accuracy(), **self.scalars(stats)}

    def sample_due(self, step):
        """Whether -sample_every asks for a sample at `step`."""
        return self.sample_every > 0 and step % self.sample_every == 0

    def log_sample(self, valid_data, step):
        """-sample_every: log the first validation example with its greedy prediction (rank 0;
        onmt/inspection/sample.py `TrainingSample`)."""
        if self.rank != 0:
            return
        if self._sample_batch is None:
            self._sample_batch = TrainingSample.first_of(valid_data, self.vocab)
            if self._sample_batch is None:
                logger.info("-sample_every: no validation example to sample; no samples")
                self.sample_every = 0
                return
        try:
            logger.info(self._sample_batch.describe(self.model, self.device, step,
                                                    self.sample_max_length))
        # reporting fails soft: one line, and training goes on without samples
        except Exception as e:
            logger.warning(f"-sample_every: the sample failed at step {step} "
                           f"({type(e).__name__}: {e}); no more samples")
            self.sample_every = 0

    def report(self, step, total, epoch, stats, window_s, elapsed_s, seconds):
        """One line in OpenNMT-py's form, then this project's figures:
        `Step 50/300; acc: 45.21; ppl: 12.34; xent: 2.51; lr: 1.00e-03; 1234/567 tok/s; wall 190 s;
        training CPU 74 s; epoch 0`
        then, with a known last step, the pace and the time left (`; 2.00 steps/s, ETA 2m05s`), the
        loss's figures and the update norms `[; p(copy) 0.31][; RL figures][; update norm ...]`,
        then the loss's lines of their own (`Step 50: ...`)
        (tok/s: source/target tokens, padding excluded, per second of this report window; each time
        names its clock: `wall`, wall-clock seconds since this run's training started;
        `training CPU`, the process's CPU seconds in training steps since the first run,
        `training wall` off the CPU, what the checkpoints keep as train_seconds and
        -train_time_limit counts: `seconds`)."""
        if self.rank != 0:
            return
        lr = self.optimizer.param_groups[0]["lr"]
        tok_s = stats.n_words / max(window_s, 1e-9)
        src_s = stats.n_src_words / max(window_s, 1e-9)
        figures, lines = self.loss_fn.report(stats)
        # -rl_gamma 1 trains without the ML term: nothing to show
        ml = (f"acc: {stats.accuracy():.2f}; ppl: {stats.ppl():.2f}; xent: {stats.xent():.2f}; "
              if stats.has_token_loss() else "")
        logger.info(f"Step {step}/{total}; {ml}lr: {lr:.2e}; "
                    f"{src_s:.0f}/{tok_s:.0f} tok/s; wall {elapsed_s:.0f} s; "
                    f"{self.clock_name} {seconds:.0f} s; epoch {epoch}"
                    + eta(step, total, self.report_every, window_s)
                    + "".join(f"; {f}" for f in figures + update_norms.report(stats.extra)))
        for line in lines:
            logger.info(f"Step {step}: {line}")
        self._warn_if_diverging(step, stats)
        if self.tensorboard is not None:
            scalars = {**self.scalars(stats), "lr": lr, "tgt_per_sec": tok_s}
            self.tensorboard.add_scalars("progress", step, scalars)

    def _warn_if_diverging(self, step, stats):
        """One warning a run when the training perplexity is above the target vocabulary's size,
        worse than a uniform guess: the model is diverging (a too high -learning_rate, no
        -max_grad_norm, or Adagrad's accumulator started at 0), which would otherwise train on in
        silence."""
        V = getattr(self.model, "tgt_vocab_size", 0)
        if (self._diverging_said or not V or not stats.has_token_loss()
                or stats.ppl() <= V):
            return
        self._diverging_said = True
        hint = (" (-optim adagrad: give -adagrad_accumulator_init 0.1, upstream's recipe)"
                if isinstance(self.optimizer, torch.optim.Adagrad) else "")
        logger.warning(f"Step {step}: perplexity {stats.ppl():.3g} is above the target "
                       f"vocabulary's size {V} (a uniform guess scores {V}): "
                       f"training is diverging; lower -learning_rate or set -max_grad_norm{hint}")

    # ------------------------------------------------------------------ early stopping

    def log_no_improvement(self):
        if self.rank != 0:
            return
        es = self.early_stopping
        count = f"{es.bad} validation{'s' if es.bad > 1 else ''} in a row without improvement"
        limit = (f"early stopping after {es.patience}" if es.patience else "early stopping off")
        logger.info(f"Validation: no improvement of {', '.join(es.criteria)} ({count}; {limit}); "
                    f"best {es.describe()}")

    def log_why_stopped(self, step, train_time_limit, run_seconds):
        """Why the run ends at `step`: early stopping, or -train_time_limit (`run_seconds` of
        training steps in this run); nothing when it reached its last step."""
        if self.rank != 0:
            return
        if self.early_stopping.should_stop:
            logger.info(f"Early stopping at step {step}: {self.early_stopping.bad} validations "
                        f"without improvement of {', '.join(self.early_stopping.criteria)}; "
                        f"best {self.early_stopping.describe()}")
        # rank 0's clock decides (_out_of_time)
        elif 0 < train_time_limit <= run_seconds:
            logger.info(f"-train_time_limit {train_time_limit:g} s reached at step {step} "
                        f"({self.clock_name} {run_seconds:.0f} s in this run)")


def eta(step, total, steps_in_window, window_s):
    """'; 1.93 steps/s, ETA 2m10s' from the last report window's pace (its validations and saves
    included), where the run ends at a known step; '' otherwise (-epochs)."""
    total = int(total) if str(total).isdigit() else None     # "300" steps, or "epoch 3": unknown
    if total is None or total <= step or window_s <= 0:
        return ""
    rate = steps_in_window / window_s
    left = int(round((total - step) / rate))
    h, rest = divmod(left, 3600)
    m, sec = divmod(rest, 60)
    return f"; {rate:.2f} steps/s, ETA " + (f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s")
