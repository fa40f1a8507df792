"""One PNG per example: what the model attended to and what it copied.

Up to three panels (`figure`), only those the model has, each axes labelled with its PANELS name
(ax.get_label()), the heat maps with a colour bar (labelled "colorbar"):
- "encoder": the encoder attention as a heat map, output steps (rows) x source words (columns).
  For a source longer than FULL_SOURCE words, only the attended span: the columns between the
  first and the last source position that some output step gives at least MIN_WEIGHT, widened by
  MARGIN positions on each side; the tick labels carry the real positions ("17 word").
- "intra": the intra-decoder attention, output step x previous output steps (the lower triangle;
  the rest is blank); only for models with it (the reinforced model).
- "p_copy": p(copy) per output step as horizontal bars on the heat map's rows, copied words
  (records.copied_marks) in red and in [brackets] in every panel's labels; only for pointer models.
Tick labels are thinned to what the axis can hold (every k-th output word at 100 output steps).
The figure is FIG_SIZE inches at DPI (1600 x 1200 pixels; 1600 x 700 without the intra panel),
drawn with matplotlib's Agg canvas (no pyplot, no global backend), imported only when a plot is
made (`require_matplotlib` checks it up front: translate.py calls it before translating).
"""
import math
import os
import re

import numpy as np

from onmt.errors import UserError
from onmt.utils.files import write_atomic

FIG_SIZE = (16, 12)   # inches, with the intra-decoder panel
FIG_SIZE_ONE_ROW = (16, 7)
DPI = 100
PANELS = ("encoder", "intra", "p_copy")
FULL_SOURCE = 50      # sources up to this many words are shown whole
MIN_WEIGHT = 0.01     # attention that counts as attended when cropping a long source
MARGIN = 5            # source positions shown on each side of the attended span
MAX_TICKS = 60        # at most this many tick labels along x (every k-th word beyond)
MAX_TICKS_Y = 32      # ... along y, where the labels stack (a panel is about 5 inches high)
MAX_WORD = 18         # characters of a word shown in a tick label


def require_matplotlib(flag="-attn_plot"):
    """Raise a one-line UserError when matplotlib is missing (before any work is done)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError(f"{flag} needs matplotlib: pip install .[plot]") from None


def example_path(folder, line):
    """The PNG of input line `line` (0-based): FOLDER/example_00001.png for the first line."""
    return os.path.join(folder, f"example_{line + 1:05d}.png")


def attended_span(attn, min_weight=MIN_WEIGHT, margin=MARGIN, full=FULL_SOURCE):
    """(lo, hi), the inclusive source columns to show for attention (n, s)."""
    s = attn.shape[1]
    if s <= full or attn.shape[0] == 0:
        return 0, s - 1
    hot = np.nonzero(attn.max(axis=0) >= min_weight)[0]
    if hot.size == 0:
        return 0, s - 1
    return max(0, int(hot[0]) - margin), min(s - 1, int(hot[-1]) + margin)


def _short(word):
    return word if len(word) <= MAX_WORD else word[:MAX_WORD - 1] + "…"


def _pred_labels(record):
    return [f"[{_short(w)}]" if c else _short(w) for w, c in zip(record["pred"], record["copied"])]


def _ticks(ax, axis, positions, labels, colors=None):
    """Tick labels at `positions`, every k-th one when there are more than MAX_TICKS (x) or
    MAX_TICKS_Y (y)."""
    k = max(1, math.ceil(len(positions) / (MAX_TICKS if axis == "x" else MAX_TICKS_Y)))
    keep = list(range(0, len(positions), k))
    pos = [positions[i] for i in keep]
    lab = [labels[i] for i in keep]
    size = 7 if len(pos) <= 40 else 5
    if axis == "x":
        ax.set_xticks(pos)
        ax.set_xticklabels(lab, rotation=90, fontsize=size)
        texts = ax.get_xticklabels()
    else:
        ax.set_yticks(pos)
        ax.set_yticklabels(lab, fontsize=size)
        texts = ax.get_yticklabels()
    if colors is not None:
        for t, i in zip(texts, keep):
            t.set_color(colors[i])


def _placeholder(ax, message):
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=14, color="0.35",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _encoder_panel(ax, record, colors):
    attn, src, n = record["attn"], record["src"], len(record["pred"])
    ax.set_title("encoder attention (output step x source word)", fontsize=10)
    if attn is None:
        _placeholder(ax, "no encoder attention")
        return
    if n == 0 or attn.shape[1] == 0:
        _placeholder(ax, "empty prediction")
        return
    lo, hi = attended_span(attn)
    image = ax.imshow(attn[:, lo:hi + 1], aspect="auto", cmap="Blues", interpolation="nearest",
                      vmin=0.0, extent=(lo - 0.5, hi + 0.5, n - 0.5, -0.5))
    _colorbar(ax, image, "attention weight")
    positions = list(range(lo, hi + 1))
    _ticks(ax, "x", positions,
           [f"{p} {_short(src[p])}" if p < len(src) else str(p) for p in positions])
    _ticks(ax, "y", list(range(n)), _pred_labels(record), colors)
    s = attn.shape[1]
    shown = (f"source positions {lo}-{hi} of 0-{s - 1} (the attended span)"
             if (lo, hi) != (0, s - 1) else f"source words (all {s})")
    ax.set_xlabel(shown, fontsize=9)
    ax.set_ylabel("output step", fontsize=9)


def _intra_panel(ax, record, colors):
    intra, n = record["intra"], len(record["pred"])
    ax.set_title("intra-decoder attention (output step x previous output step)", fontsize=10)
    if intra is None:
        _placeholder(ax, "no intra-decoder attention")
        return
    if n < 2:
        _placeholder(ax, "fewer than two output steps")
        return
    lower = np.tril(np.ones((n, n), dtype=bool), k=-1)       # row t: steps 0..t-1
    shown = np.ma.masked_array(intra[:n, :n], mask=~lower)
    # matplotlib is optional (pip install .[plot]): only the plots need it
    from matplotlib import colormaps
    image = ax.imshow(shown, aspect="auto", cmap=colormaps["Oranges"].with_extremes(bad="white"),
                      interpolation="nearest", vmin=0.0, vmax=1.0)
    _colorbar(ax, image, "attention weight")
    labels = _pred_labels(record)
    _ticks(ax, "x", list(range(n)), labels, colors)
    _ticks(ax, "y", list(range(n)), labels, colors)
    ax.set_xlabel("previous output step (its word)", fontsize=9)
    ax.set_ylabel("output step", fontsize=9)


def _colorbar(ax, image, label):
    bar = ax.figure.colorbar(image, ax=ax, fraction=0.025, pad=0.01)
    bar.ax.set_label("colorbar")
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)


def _copy_panel(ax, record, colors):
    p_copy, n = record["p_copy"], len(record["pred"])
    ax.set_title("p(copy) per output step", fontsize=10)
    if p_copy is None:
        _placeholder(ax, "no pointer")
        return
    if n == 0:
        _placeholder(ax, "empty prediction")
        return
    ax.barh(np.arange(n), p_copy[:n], color=colors, height=0.8)
    ax.axvline(0.5, color="0.4", linestyle="--", linewidth=0.8)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(n - 0.5, -0.5)
    ax.tick_params(axis="y", labelleft=False)
    ax.set_xlabel("p(copy); red: copied (OOV copy or p >= 0.5)", fontsize=9)


def figure(record):
    """The matplotlib Figure of a record (records.py), on an Agg canvas; nothing is saved."""
    # matplotlib is optional (pip install .[plot]): only the plots need it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.gridspec import GridSpec

    has_intra, has_copy = record["intra"] is not None, record["p_copy"] is not None
    fig = Figure(figsize=FIG_SIZE if has_intra else FIG_SIZE_ONE_ROW, dpi=DPI)
    FigureCanvasAgg(fig)
    rows, cols = (2 if has_intra else 1), (2 if has_copy else 1)
    grid = GridSpec(rows, cols, figure=fig, width_ratios=[4, 1][:cols], hspace=0.45, wspace=0.12,
                    left=0.1, right=0.98, top=0.93 if has_intra else 0.9,
                    bottom=0.1 if has_intra else 0.18)
    enc = fig.add_subplot(grid[0, 0], label="encoder")
    copy = fig.add_subplot(grid[0, 1], label="p_copy") if has_copy else None
    intra = fig.add_subplot(grid[1, 0], label="intra") if has_intra else None
    colors = ["tab:red" if c else "tab:blue" for c in record["copied"]]
    text_colors = ["tab:red" if c else "black" for c in record["copied"]]
    if record["src"]:
        _encoder_panel(enc, record, text_colors)
        if intra is not None:
            _intra_panel(intra, record, text_colors)
        if copy is not None:
            _copy_panel(copy, record, colors)
    else:   # a line the model did not read
        for ax in (enc, intra, copy):
            if ax is not None:
                _placeholder(ax, "empty source line")
    n = len(record["pred"])
    copied = int(np.asarray(record["copied"]).sum())
    title = f"example {record['line'] + 1}: {n} words, {copied} copied, score {record['score']:.3f}"
    if record["p_copy"] is not None and n:
        title += f", mean p(copy) {float(np.mean(record['p_copy'][:n])):.2f}"
    fig.suptitle(title, fontsize=12)
    return fig


def save_figure(fig, path):
    """PNG to `path`, whole or not at all (files.write_atomic)."""
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=DPI), binary=True)


def plot_record(record, path):
    save_figure(figure(record), path)
    return path


def plot_records(records, folder, n=None):
    """The PNGs of the first `n` records by input line (all when n is None) into `folder` (created
    if missing); an earlier run's example_N.png that this run does not write is removed, so that
    the folder holds this run's plots alone. Returns their paths."""
    os.makedirs(folder, exist_ok=True)
    chosen = sorted(records, key=lambda r: r["line"])
    if n is not None:
        chosen = chosen[:n]
    paths = [plot_record(r, example_path(folder, r["line"])) for r in chosen]
    mine = {os.path.basename(p) for p in paths}
    for name in os.listdir(folder):
        if re.fullmatch(r"example_\d{5,}\.png", name) and name not in mine:
            os.remove(os.path.join(folder, name))
    return paths
