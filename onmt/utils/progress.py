"""Progress reporting that suits where stderr goes.

    from onmt.utils.progress import progress

    for batch in progress(batches, desc="translate", unit="sent", total=n_sentences, weight=len):
        ...

    bar = progress(n_lines, desc="preprocess", unit="line")   # a total instead of an iterable
    for line in lines:
        ...
        bar.update(1)
    bar.close()

`progress(iterable_or_total, desc="", unit="it", total=None, weight=None, log_every=0.1,
log_every_n=1000, min_interval=0.0, disable=False)` (a stable signature: the translator and
preprocessing use it):

- on a terminal (`sys.stderr.isatty()`) a tqdm bar on stderr (rate in `unit`/s, ETA); in a Jupyter
  notebook, tqdm's auto bar (a widget where ipywidgets is installed);
- otherwise (a pipe, a log file, a batch job) plain lines through the `onmt` logger, e.g.
  `translate: 300/1000 sent (30%), 52.1 sent/s, ETA 0:00:13`, about every `log_every` of the total
  (a fraction, default 10%) or, with no known total, every `log_every_n` units; at most one line
  every `min_interval` seconds; at close, a last line ending "(done)" when the final count was not
  logged.

Arguments:
    iterable_or_total: an iterable to wrap, or an int (the total) for manual `update(n)` calls.
    desc: a short label that starts every line.
    unit: the name of one counted thing ("sent", "line", "batch").
    total: the number of units (default: `len(iterable)` when it has one, or the int given).
    weight: a function of an item giving how many units it is (e.g. `len` of a batch of sentences);
        default 1 unit per item. Only used when iterating.
    log_every: non-terminal: log about every this fraction of the total (0 < log_every <= 1).
    log_every_n: non-terminal with no known total: log every this many units (default 1000).
    min_interval: non-terminal: at least this many seconds between two lines (default 0).
    disable: report nothing at all (the iterable is still iterated).

The returned object is iterable (when given an iterable) and has `update(n=1)`, `close()`, and works
as a context manager; closing twice is harmless. Iterating to the end closes it.
"""
import os
import sys
import time
from datetime import timedelta

from onmt.utils.logging import logger


def progress(iterable_or_total, desc="", unit="it", total=None, weight=None, log_every=0.1,
             log_every_n=1000, min_interval=0.0, disable=False):
    """A tqdm bar when stderr is a terminal, otherwise periodic plain log lines
    (see the module doc)."""
    if isinstance(iterable_or_total, int):
        iterable, total = None, iterable_or_total if total is None else total
    else:
        iterable = iterable_or_total
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
    if disable:
        return _Silent(iterable)
    if _on_terminal() or _in_notebook():
        return _Bar(iterable, desc, unit, total, weight, notebook=_in_notebook())
    return _LogLines(iterable, desc, unit, total, weight, log_every, log_every_n, min_interval)


def _in_notebook():
    """Whether this runs in a Jupyter kernel (whose stderr is no terminal but shows a bar)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def _on_terminal():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):   # a replaced or closed stderr
        return False


class _Base:
    def __init__(self, iterable, weight=None):
        self._iterable = iterable
        self._weight = weight
        self._closed = False

    def __iter__(self):
        if self._iterable is None:
            raise TypeError("progress() was given a total, not an iterable: call update(n)")
        try:
            for item in self._iterable:
                yield item
                self.update(self._weight(item) if self._weight is not None else 1)
        finally:
            self.close()

    def update(self, n=1):
        pass

    def close(self):
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _Silent(_Base):
    pass


class _Bar(_Base):
    """tqdm on stderr; imported only here so that `import onmt.utils.progress` stays cheap."""

    def __init__(self, iterable, desc, unit, total, weight, notebook=False):
        super().__init__(iterable, weight)
        # tqdm on first use (class docstring); which one depends on where it runs
        if notebook:   # a notebook widget where ipywidgets is installed, text on stderr otherwise
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        # a terminal that reports no width (e.g. a pseudo-terminal never sized)
        # would get an empty bar
        width = {"dynamic_ncols": True} if columns > 0 else {"ncols": 100, "nrows": 24}
        self._bar = tqdm(total=total, desc=desc or None, unit=unit, file=sys.stderr, **width)
        # while the bar is drawn, the toolkit's log lines go through tqdm.write:
        # above the bar, not into it
        from tqdm.contrib.logging import logging_redirect_tqdm
        self._redirect = logging_redirect_tqdm(loggers=[logger])
        self._redirect.__enter__()

    def update(self, n=1):
        self._bar.update(n)

    def close(self):
        if not self._closed:
            self._redirect.__exit__(None, None, None)
            self._bar.close()
        super().close()


def _fmt_eta(seconds):
    return str(timedelta(seconds=int(round(seconds))))


class _LogLines(_Base):
    """Plain `logger.info` lines at about every `log_every` of the total
    (or every `log_every_n`)."""

    def __init__(self, iterable, desc, unit, total, weight, log_every, log_every_n, min_interval):
        super().__init__(iterable, weight)
        self.desc, self.unit, self.total = desc, unit, total
        self.n = 0
        self._start = self._last_time = time.monotonic()
        if total:
            self._step = max(1, int(total * min(max(log_every, 1e-9), 1.0)))
        else:
            self._step = max(1, int(log_every_n))
        self._next = self._step
        self._min_interval = min_interval
        self._last_logged_n = 0

    def _line(self):
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = self.n / elapsed
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            pct = 100.0 * self.n / self.total
            left = max(self.total - self.n, 0)
            eta = f", ETA {_fmt_eta(left / rate)}" if rate > 0 and left else ""
            return (f"{head}{self.n}/{self.total} {self.unit} ({pct:.0f}%), "
                    f"{rate:.1f} {self.unit}/s{eta}")
        return f"{head}{self.n} {self.unit}, {rate:.1f} {self.unit}/s"

    def update(self, n=1):
        self.n += n
        if self.n < self._next:
            return
        while self._next <= self.n:
            self._next += self._step
        now = time.monotonic()
        if now - self._last_time < self._min_interval:
            return
        self._last_time = now
        self._last_logged_n = self.n
        logger.info(self._line())

    def close(self):
        if not self._closed and self.n and self.n != self._last_logged_n:
            logger.info(self._line() + " (done)")
        super().close()
