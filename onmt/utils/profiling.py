"""-profile N (train.py and translate.py): N training steps or translation batches
under torch.profiler.

At the end: the top 25 operators by self CPU time (and by self CUDA time on a GPU) are logged as
torch.profiler tables, then the top 15 (operator, input shapes) pairs, which tell one product from
another, and a Chrome trace (chrome://tracing, https://ui.perfetto.dev) is written to
the trace path, atomically (a temporary file renamed when complete).
"""
from typing import NamedTuple

import torch

from onmt.utils.files import check_output, write_atomic
from onmt.utils.logging import logger

TOP_OPERATORS = 25
TOP_SHAPES = 15


def trace_path(opt, prefix):
    """The trace path: -profile_trace, else `{prefix}_profile.json`."""
    return opt.profile_trace or f"{prefix}_profile.json"


class Profiler:
    """Profile `n` units of work (steps or batches): `start()`, then `done_one()` after each unit;
    after the n-th, the profiler stops and `report()` runs (tables logged, trace written). `log`:
    where the tables go (logger.info by default)."""

    def __init__(self, n, path, device, what="steps", log=None):
        self.n, self.path, self.what = n, path, what
        self.cuda = torch.device(device).type == "cuda" and torch.cuda.is_available()
        self.log = log or logger.info
        self.count = 0
        self.prof = None
        check_output(path, f"-profile_trace {path}")

    def start(self):
        # torch.profiler only under -profile
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        self.prof = profile(activities=activities, record_shapes=True)
        self.prof.start()

    @property
    def active(self):
        return self.prof is not None

    def done_one(self):
        """After one unit of work; True once the n-th is done (the profile then reported)."""
        if self.prof is None:
            return False
        self.count += 1
        if self.count < self.n:
            return False
        self.stop()
        return True

    def stop(self):
        if self.prof is None:
            return
        if self.cuda:
            torch.cuda.synchronize()
        prof, self.prof = self.prof, None
        prof.stop()
        self.report(prof)

    def report(self, prof):
        averages = prof.key_averages()
        self.log(f"Profile of {self.count} {self.what}: top {TOP_OPERATORS} operators "
                 "by self CPU time\n"
                 + averages.table(sort_by="self_cpu_time_total", row_limit=TOP_OPERATORS))
        if self.cuda:
            self.log(f"Profile of {self.count} {self.what}: top {TOP_OPERATORS} operators "
                     "by self CUDA time\n"
                     + averages.table(sort_by=_device_key(averages), row_limit=TOP_OPERATORS))
        by_shape = prof.key_averages(group_by_input_shape=True)
        sort = _device_key(by_shape) if self.cuda else "self_cpu_time_total"
        self.log(f"Profile of {self.count} {self.what}: top {TOP_SHAPES} (operator, input shapes) "
                 f"by self {'CUDA' if self.cuda else 'CPU'} time\n"
                 + by_shape.table(sort_by=sort, row_limit=TOP_SHAPES))
        write_atomic(self.path, prof.export_chrome_trace, "-profile_trace", by_name=True)
        self.log(f"Chrome trace of the profiled {self.what} in {self.path}")


def _device_key(averages):
    """The self CUDA time's sort key: self_device_time_total (torch >= 2.4),
    else self_cuda_time_total."""
    first = next(iter(averages), None)
    return "self_device_time_total" if first is None or hasattr(first, "self_device_time_total") \
        else "self_cuda_time_total"


class ProfileRun(NamedTuple):
    """-profile: the training loop stops after step `last`; its steps after `first` run under
    `profiler` (rank 0; None on the other ranks)."""
    first: int
    last: int
    profiler: object


def profile_training(trainer, train_data, n_steps, path, start_step=0, data_pos=(0, 0), warmup=2):
    """-profile N: the trainer's own loop (onmt/trainer.py `train`), `warmup` steps, then `n_steps`
    steps under torch.profiler (tables logged by rank 0, a Chrome trace written to `path`), then a
    stop with no validation and no checkpoint. Returns the number of profiled steps."""
    profiler = (Profiler(n_steps, path, trainer.device, "training steps") if trainer.rank == 0
                else None)
    try:
        trainer.train(train_data, None, start_step, data_pos,
                      profile=ProfileRun(start_step + warmup, start_step + warmup + n_steps,
                                         profiler))
    finally:
        if profiler is not None:
            profiler.stop()
    return n_steps
