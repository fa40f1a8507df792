"""translate.py -compile against without it, on the same lines, in one process: A B A B.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.compile_translate_bench -model runs/see_gigaword/model_best.pt \\
        -src /work/shared/data/gigaword/valid.src.txt -n 600
    (CNN/DM's lengths: -src a file of articles -src_words 400 -n 48 -batch_size 16 -beam_size 4
     -min_length 50 -max_length 60)

Loads the checkpoint twice (eager, and with -compile: its mlp attention's scores through torch.compile),
translates the first -n lines of -src (each cut to its first -src_words words) once with each to warm up
(the compiled session's first call compiles: its time is printed), then -rounds times each in turn, the
translation call alone timed. Prints the host, each time, the speed-up (sum of eager times over sum of
compiled times) and the share of identical first predictions.
"""
import argparse
import time

import torch

from onmt import opts
from onmt.hardware import cpu_description
from onmt.translate.session import load_session, translate_lines
from onmt.utils.memory import reuse_freed_memory


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-model", required=True)
    p.add_argument("-src", required=True)
    p.add_argument("-n", type=int, default=600, help="lines translated")
    p.add_argument("-src_words", type=int, default=400, help="each line cut to its first words")
    p.add_argument("-batch_size", type=int, default=30)
    p.add_argument("-beam_size", type=int, default=5)
    p.add_argument("-min_length", type=int, default=0)
    p.add_argument("-max_length", type=int, default=100)
    p.add_argument("-rounds", type=int, default=2)
    p.add_argument("-device", default="cpu")
    a = p.parse_args(argv)
    reuse_freed_memory()   # as translate.py does
    with open(a.src, encoding="utf-8") as f:
        src = [" ".join(line.split()[:a.src_words]) for line, _ in zip(f, range(a.n))]
    opt = opts.parse_with_given(opts.translate_parser(), [
        "-model", a.model, "-src", "-", "-batch_size", str(a.batch_size), "-beam_size", str(a.beam_size),
        "-min_length", str(a.min_length), "-max_length", str(a.max_length)])
    opts.update_translate_opts(opt)
    device = torch.device(a.device)
    sessions = {"eager": load_session(a.model, device), "compiled": load_session(a.model, device, compile=True)}
    print(f"host: {cpu_description()}; {torch.get_num_threads()} thread(s); torch {torch.__version__}", flush=True)
    for name, session in sessions.items():
        t = time.perf_counter()
        translate_lines(opt, session, src[:a.batch_size], show_progress=False)
        print(f"{name}: warm-up batch {time.perf_counter() - t:.1f} s" + (" (compilation included)"
                                                                          if name == "compiled" else ""), flush=True)
    times, outputs = {name: [] for name in sessions}, {}
    for _ in range(a.rounds):
        for name, session in sessions.items():
            t = time.perf_counter()
            results = translate_lines(opt, session, src, show_progress=False)
            times[name].append(time.perf_counter() - t)
            outputs[name] = [" ".join(r[0].tokens) for r in results]
    same = sum(x == y for x, y in zip(outputs["eager"], outputs["compiled"])) / len(src)
    for name, ts in times.items():
        print(f"{name}: {' / '.join(f'{t:.2f}' for t in ts)} s for {len(src)} lines")
    print(f"speed-up of -compile: {sum(times['eager']) / sum(times['compiled']):.3f}x; identical predictions: "
          f"{100 * same:.1f}%")


if __name__ == "__main__":
    main()
