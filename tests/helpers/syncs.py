"""Count the host-device synchronizations a piece of code asks for: the Tensor methods and torch
functions that wait for the device to hand a value to Python (.item, .tolist, .cpu, nonzero, unique,
bool / int / float of a tensor, indexing with a boolean mask). On the CPU nothing waits, but the same
calls are what stalls a CUDA stream, so a CPU test can pin their number."""
import collections
import contextlib
import sys

import torch

_METHODS = ("item", "tolist", "cpu", "nonzero", "__bool__", "__int__", "__float__", "__index__")


@contextlib.contextmanager
def counting_syncs(under="onmt"):
    """Yields a Counter of (name, 'file:line' of the first caller frame inside `under`) -> calls."""
    counts = collections.Counter()
    saved = {name: getattr(torch.Tensor, name) for name in _METHODS + ("__getitem__",)}
    saved_fns = {name: getattr(torch, name) for name in ("unique", "nonzero", "masked_select")}

    def where():
        f = sys._getframe(2)
        while f is not None:
            path = f.f_code.co_filename.replace("\\", "/")
            if f"/{under}/" in path and "/tests/" not in path:
                return f"{path.split(f'/{under}/', 1)[1]}:{f.f_lineno}"
            f = f.f_back
        return "?"

    def wrap(name, fn):
        def counted(*args, **kwargs):
            counts[(name, where())] += 1
            return fn(*args, **kwargs)
        return counted

    def getitem(self, index):
        parts = index if isinstance(index, tuple) else (index,)
        if any(isinstance(p, torch.Tensor) and p.dtype == torch.bool for p in parts):
            counts[("mask-index", where())] += 1
        return saved["__getitem__"](self, index)

    try:
        for name in _METHODS:
            setattr(torch.Tensor, name, wrap(name, saved[name]))
        torch.Tensor.__getitem__ = getitem
        for name, fn in saved_fns.items():
            setattr(torch, name, wrap(name, fn))
        yield counts
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)
        for name, fn in saved_fns.items():
            setattr(torch, name, fn)
