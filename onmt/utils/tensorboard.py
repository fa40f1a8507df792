"""TensorBoard scalars of a training run (`train.py -tensorboard -tensorboard_log_dir DIR`).

Tags follow OpenNMT-py's: `progress/<name>` at every -report_every window and `valid/<name>` at
every validation, the x axis being the training step. The names are the trainer's
(trainer_reporting.py `scalars`): the token figures of `Statistics.scalars()` (xent, ppl, accuracy),
the loss's own (its `scalars`: p_copy, reward_sample, reward_greedy, rougeL, ... where the model and
objective have them), the update norms (norm_ml, norm_rl) plus, for training windows, `lr` and
`tgt_per_sec` (target tokens per second).

`torch.utils.tensorboard` needs the tensorboard package, an optional dependency: it is imported only
here, when -tensorboard is given, and its absence is a one-line error at start-up, as is a log
folder that cannot be written. The event file itself is opened at the first scalar, so a run that
fails before training leaves none. Writing reads no random numbers and touches no tensor of the
model: training is the same bit for bit with or without it.
"""
import contextlib
import os

from onmt.errors import UserError
from onmt.utils.logging import logger


class TensorBoard:
    """A SummaryWriter on `log_dir`, opened lazily;
    `add_scalars(prefix, step, values)`, `close()`."""

    def __init__(self, log_dir):
        try:
            # tensorboard is optional (pip install .[tensorboard]): only -tensorboard needs it
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise UserError("-tensorboard needs the tensorboard package: "
                            "pip install .[tensorboard] (or pip install tensorboard)") from None
        _check_writable(log_dir)
        self.log_dir = log_dir
        self._summary_writer_cls = SummaryWriter
        self._writer = None

    @classmethod
    def from_opt(cls, opt):
        """A TensorBoard with -tensorboard, else None."""
        return cls(opt.tensorboard_log_dir) if opt.tensorboard else None

    def add_scalars(self, prefix, step, values):
        """Write each name -> value of `values` as the scalar `prefix/name` at `step`. Reporting
        fails soft: an error (a full disk, a removed folder) is one logged line, and training goes
        on (and saves) without TensorBoard."""
        if self.failed:
            return
        with self._soft("write to"):
            if self._writer is None:
                self._writer = self._summary_writer_cls(log_dir=self.log_dir)
            for name, value in values.items():
                self._writer.add_scalar(f"{prefix}/{name}", float(value), step)

    failed = False

    def _soft(self, doing):

        @contextlib.contextmanager
        def guard():
            try:
                yield
            except Exception as e:   # any failure of the writer: reporting must never stop training
                self.failed = True
                logger.warning(f"-tensorboard: cannot {doing} {self.log_dir} ({type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}); "
                               "training goes on without TensorBoard")
                self._writer = None
        return guard()

    def flush(self):
        if self._writer is not None and not self.failed:
            with self._soft("flush"):
                self._writer.flush()

    def close(self):
        """Flush and close the event file; closing twice is harmless."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            if not self.failed:
                with self._soft("close"):
                    writer.close()


def _check_writable(log_dir):
    """Create `log_dir` and check that a file can be written there, else a one-line UserError."""
    if not log_dir:
        raise UserError("-tensorboard_log_dir is empty: give the folder of the event files")
    try:
        os.makedirs(log_dir, exist_ok=True)
        probe = os.path.join(log_dir, f".onmt_write_probe{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UserError(f"cannot write to -tensorboard_log_dir {log_dir}: "
                        f"{e.strerror or e} ({e.filename or log_dir})") from None
