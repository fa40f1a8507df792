"""What the trainer reports: validation (its statistics, the log lines scripts read, TensorBoard), the
-sample_every example, and the training report line. A mixin of onmt/trainer.py's Trainer, whose
attributes it reads (model, loss_fn, device, rank, world, tensorboard, ...)."""
import time

import torch

from onmt.utils.distributed import sum_statistics
from onmt.utils.logging import logger
from onmt.utils.statistics import Statistics

VALID_PROGRESS_SECONDS = 30.0   # a validation longer than this logs a progress line this often


class Reporting:
    def validate(self, valid_data, step=None):
        """Validation statistics (every rank's shares summed), logged by rank 0; None when a SIGTERM or
        ^C came during it in a one-process run (it stops there: the trainer then saves and stops)."""
        self.model.eval()
        stats = Statistics()
        stop = getattr(self, "_stop", None)
        start = last = time.monotonic()
        with torch.no_grad(), self._autocast():
            for i, batch in enumerate(valid_data.iter_epoch(0)):
                now = time.monotonic()
                if now - last >= VALID_PROGRESS_SECONDS and self.rank == 0:   # a long validation says so
                    logger.info(f"Validation: {i} batches, {stats.n_examples} examples ({now - start:.0f} s)")
                    last = now
                if stop is not None and stop.received is not None and not self.world.distributed:
                    self.model.train()
                    logger.info(f"Validation interrupted by {stop.received}")
                    return None
                _, s = self.loss_fn(self.model, batch.to(self.device))
                stats.update(s)
        self.model.train()
        stats = sum_statistics(stats, self.world)  # each rank validated its share of the batches
        if self.rank == 0:
            at = f" (step {step}; {self.train_seconds:.0f} s of training)" if step is not None else ""
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
        """-sample_every: log the first validation example with its greedy prediction (rank 0;
        onmt/inspection/sample.py `TrainingSample`)."""
        if self.rank != 0:
            return
        from onmt.inspection.sample import TrainingSample
        if self._sample_batch is None:
            self._sample_batch = TrainingSample.first_of(valid_data, self.checkpoint_meta["vocab"])
            if self._sample_batch is None:
                logger.info("-sample_every: no validation example to sample; no samples")
                self.sample_every = 0
                return
        try:
            logger.info(self._sample_batch.describe(self.model, self.device, step, self.sample_max_length))
        except Exception as e:   # reporting fails soft: one line, and training goes on without samples
            logger.warning(f"-sample_every: the sample failed at step {step} ({type(e).__name__}: {e}); "
                           "no more samples")
            self.sample_every = 0

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
        ml = (f"acc: {stats.accuracy():.2f}; ppl: {stats.ppl():.2f}; xent: {stats.xent():.2f}; "
              if stats.has_ml() else "")   # -rl_gamma 1 trains without the ML term: nothing to show
        logger.info(f"Step {step}/{total}; {ml}lr: {lr:.2e}; "
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
