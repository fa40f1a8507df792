"""RTrainer: the baselines' Trainer, extended with what the reinforced model reports.

Scheduled sampling happens inside the model's forward pass (it is part of the ML objective); the
loss counts, in Statistics.extra["sampled_inputs"], the decoder inputs that were the model's own
predictions, and RTrainer logs their share so a user can check that -scheduled_sampling is in effect.
"""
from onmt.trainer import Trainer
from onmt.utils.logging import logger


class RTrainer(Trainer):
    def _report(self, step, total, epoch, stats, window_s, elapsed_s):
        super()._report(step, total, epoch, stats, window_s, elapsed_s)
        if self.rank == 0 and "sampled_inputs" in stats.extra:
            share = 100.0 * stats.extra["sampled_inputs"] / max(stats.n_words, 1)
            logger.info(f"Step {step}: {share:.1f}% of decoder inputs were the model's own predictions "
                        "(scheduled sampling)")
