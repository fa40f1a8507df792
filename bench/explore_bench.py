"""The summary explorer's page on real data: its size and how soon headless Chromium shows its first screen.

    python bench/explore_bench.py [-src test.src.txt -ref test.tgt.txt -system a.npz b.npz -names a b]
                                  [-repeat 3] [-screenshot docs/explorer.png] [-keep page.html]

Defaults: the Gigaword test set under ../shared/data/gigaword and the tuned mixed-objective and ML dumps
of experiments/rl_vs_ml (runs/rl_vs_ml/tuned/{a1,b1}/test.npz here or in ../main; $RL_VS_ML_RUNS).
Prints the time to write
the page, its size, and per load (a fresh navigation from a file:// URL, -repeat times): the page's own
ready time (data parsed, first article rendered) and first painted frame, both from navigation start
(performance.now), and the wall time to ready seen from here; then the time of a sort by ROUGE difference
and of a hover, measured in the page; -screenshot: docs/explorer.png's view. Needs Chromium
(bench/lib/browser.py finds it).
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from bench.lib.browser import Browser, find_chromium  # noqa: E402
from onmt.bin.explore import main as explore  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data", "gigaword")
RUNS = os.environ.get("RL_VS_ML_RUNS") or next(
    (p for p in (os.path.join(r, "runs", "rl_vs_ml", "tuned") for r in (ROOT, os.path.join(ROOT, "..", "main")))
     if os.path.isdir(p)), os.path.join(ROOT, "runs", "rl_vs_ml", "tuned"))
DEFAULT_SYSTEMS = [os.path.join(RUNS, s, "test.npz") for s in ("a1", "b1")]    # mixed objective, ML control

SORT = """(() => { const t0 = performance.now(); const s = document.getElementById('sort');
  s.value = 'diff-desc'; s.dispatchEvent(new Event('change')); return performance.now() - t0; })()"""
HOVER = """(() => { const w = document.querySelector(".summary[data-sys='0'] .w"); const t0 = performance.now();
  w.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); return performance.now() - t0; })()"""


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-src", default=os.path.join(DATA, "test.src.txt"))
    p.add_argument("-ref", default=os.path.join(DATA, "test.tgt.txt"))
    p.add_argument("-system", nargs="+", default=DEFAULT_SYSTEMS)
    p.add_argument("-names", nargs="+", default=None)
    p.add_argument("-repeat", type=int, default=3)
    p.add_argument("-width", type=int, default=1280)
    p.add_argument("-height", type=int, default=800)
    p.add_argument("-screenshot", default="", help="write a screenshot (PNG) here: the article sorted first by "
                   "ROUGE difference, the summary panel folded, a copied word hovered")
    p.add_argument("-keep", default="", help="write the page here (default: a temporary file)")
    return p.parse_args()


def main():
    args = parse()
    names = args.names or (["mixed", "ml"] if args.system == DEFAULT_SYSTEMS else None)
    chromium = find_chromium()
    if chromium is None:
        sys.exit("explore_bench: no Chromium found (install chromium or set $CHROMIUM)")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or os.path.join(tmp, "page.html")
        argv = ["-src", args.src, "-ref", args.ref, "-system", *args.system, "-output", out]
        start = time.perf_counter()
        size = explore(argv + (["-names", *names] if names else []))
        print(f"page written in {time.perf_counter() - start:.2f} s: {size:,} bytes ({size / 2**20:.2f} MiB)")
        url = pathlib.Path(os.path.abspath(out)).as_uri()
        with Browser(chromium, args.width, args.height) as b:
            print(f"browser: {b.call('Browser.getVersion')['product']}, viewport {args.width}x{args.height}")
            rows = []
            for i in range(args.repeat):
                wall = b.navigate(url, ready="window.explorePaintedMs")
                ready, painted = b.evaluate("[window.exploreReadyMs, window.explorePaintedMs]")
                other = [u for u in b.requests() if u != url and not u.startswith("data:")]
                rows.append((ready, painted, wall * 1000))
                print(f"load {i + 1}: ready {ready:.0f} ms, first frame painted {painted:.0f} ms after navigation "
                      f"start; wall {wall * 1000:.0f} ms; other requests: {len(other)}")
            med = [statistics.median(r[k] for r in rows) for k in range(3)]
            print(f"median of {len(rows)}: ready {med[0]:.0f} ms, painted {med[1]:.0f} ms, wall {med[2]:.0f} ms")
            print(f"sort by ROUGE difference: {b.evaluate(SORT):.1f} ms; hover: {b.evaluate(HOVER):.2f} ms")
            if args.screenshot:         # the article of the largest difference, its panel folded, a word hovered
                b.evaluate("document.getElementById('summary').open = false; scrollTo(0, 0)")
                b.hover(".summary[data-sys='0'] .w.cp")
                b.evaluate("scrollTo(0, 0)")
                b.screenshot(args.screenshot)
                print(f"screenshot: {args.screenshot} ({os.path.getsize(args.screenshot):,} bytes)")


if __name__ == "__main__":
    main()
