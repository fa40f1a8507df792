"""What bench/beam_source_bench.py and bench/compile_translate_bench.py share: their options, the lines and
translate options built from them, and the A B A B loop that times whole translations in one process."""
import argparse
import time

import torch

from onmt import opts
from onmt.hardware import cpu_description
from onmt.translate.session import translate_lines
from onmt.utils.memory import reuse_freed_memory


def parser(doc, n):
    """The options of a translation A/B benchmark (-n: `n` lines by default)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-model", required=True)
    p.add_argument("-src", required=True)
    p.add_argument("-n", type=int, default=n, help="lines translated")
    p.add_argument("-src_words", type=int, default=400, help="each line cut to its first words")
    p.add_argument("-batch_size", type=int, default=30)
    p.add_argument("-beam_size", type=int, default=5)
    p.add_argument("-min_length", type=int, default=0)
    p.add_argument("-max_length", type=int, default=100)
    p.add_argument("-rounds", type=int, default=2)
    return p


def lines_and_opt(a):
    """The first -n lines of -src cut to -src_words words, and translate.py's options for them; the process
    keeps freed memory for reuse, as translate.py does."""
    reuse_freed_memory()
    with open(a.src, encoding="utf-8") as f:
        src = [" ".join(line.split()[:a.src_words]) for line, _ in zip(f, range(a.n))]
    opt = opts.parse_with_given(opts.translate_parser(), [
        "-model", a.model, "-src", "-", "-batch_size", str(a.batch_size), "-beam_size", str(a.beam_size),
        "-min_length", str(a.min_length), "-max_length", str(a.max_length)])
    opts.update_translate_opts(opt)
    return src, opt


def alternate(opt, src, runs, rounds):
    """runs: {name: (session, before)}. Prints the host; translates one batch with each (its time printed:
    a compilation shows there), then all of `src` with each in turn, `rounds` times, `before()` (when not
    None) right before each of its translations. Returns ({name: [seconds]}, {name: first predictions})."""
    print(f"host: {cpu_description()}; {torch.get_num_threads()} thread(s); torch {torch.__version__}", flush=True)
    for name, (session, before) in runs.items():
        if before is not None:
            before()
        t = time.perf_counter()
        translate_lines(opt, session, src[:opt.batch_size], show_progress=False)
        print(f"{name}: warm-up batch {time.perf_counter() - t:.1f} s", flush=True)
    times, outputs = {name: [] for name in runs}, {}
    for _ in range(rounds):
        for name, (session, before) in runs.items():
            if before is not None:
                before()
            t = time.perf_counter()
            results = translate_lines(opt, session, src, show_progress=False)
            times[name].append(time.perf_counter() - t)
            outputs[name] = [" ".join(r[0].tokens) for r in results]
    return times, outputs


def report(times, outputs, what, base, new):
    """Prints each run's times, the speed-up of `new` over `base` (sums of their times) and the share of
    identical first predictions."""
    n = len(outputs[base])
    for name, ts in times.items():
        print(f"{name}: {' / '.join(f'{t:.2f}' for t in ts)} s for {n} lines")
    same = sum(x == y for x, y in zip(outputs[base], outputs[new])) / n
    print(f"speed-up of {what}: {sum(times[base]) / sum(times[new]):.3f}x; identical predictions: {100 * same:.1f}%")
