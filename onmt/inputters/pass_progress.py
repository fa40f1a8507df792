"""The progress of one preprocessing pass (preprocess.py), shown by utils/progress.py: a tqdm bar on
a terminal, log lines otherwise.

The pass says how many lines it has processed, at the end of each chunk, in order (`done(n)`).
Over a text file (`PassProgress.of_file`) the bar counts the file's bytes on disk, in MB (kB below
10 MB; compressed bytes for a .gz), so it needs no line count before the pass: the chunk reader
records where each chunk ends in the file (`read_up_to(n, position)`), and `done(n)` moves the bar
to that position, so the bar follows the chunks processed, not those read ahead for the worker
processes. A file without a size (a pipe) is counted in lines, with no total, and logged every
`report_every` lines off a terminal. Over the token cache (`PassProgress.of_lines`, pass 2) the unit
is a line.
"""
import math

from onmt.inputters.corpus import disk_size
from onmt.utils.progress import progress

KB, MB = 10 ** 3, 10 ** 6


class PassProgress:
    """A progress() bar (or log lines) for one pass; `done(n)`: the first n lines are processed."""

    def __init__(self, desc, total, unit, scale=1, report_every=0):
        self.scale, self.shown, self.positions = scale, 0, None
        self.total = max(1, math.ceil(total / scale)) if total is not None else None
        self.bar = progress(self.total or 0, desc=desc, unit=unit, log_every_n=report_every or 1000)

    @classmethod
    def of_file(cls, desc, path, report_every=0):
        size = disk_size(path)
        if size is None:
            return cls(desc, None, "line", report_every=report_every)
        bar = (cls(desc, size, "MB", scale=MB) if size >= 10 * MB
               else cls(desc, size, "kB", scale=KB))
        bar.positions = {}
        return bar

    @classmethod
    def of_lines(cls, desc, n_lines):
        return cls(desc, n_lines, "line")

    def read_up_to(self, n_lines, position):
        """The first `n_lines` lines of the file end at byte `position` on disk (None: unknown)."""
        if self.positions is not None and position is not None:
            self.positions[n_lines] = position

    def done(self, n_lines):
        """The first `n_lines` lines of the pass are processed."""
        if self.positions is None:
            self._show(n_lines)
        else:
            position = self.positions.pop(n_lines, None)
            if position is not None:
                self._show(position // self.scale)

    def _show(self, n):
        n = min(n, self.total) if self.total else n
        if n > self.shown:
            self.bar.update(n - self.shown)
            self.shown = n

    def close(self, completed=True):
        """Close the bar, full when the pass `completed`."""
        if completed and self.total:
            self._show(self.total)
        self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        self.close(completed=exc_type is None)
        return False
