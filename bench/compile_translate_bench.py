"""translate.py -compile against without it, on the same lines, in one process: A B A B.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.compile_translate_bench -model runs/see_gigaword/model_best.pt \\
        -src /work/shared/data/gigaword/valid.src.txt -n 600
    (CNN/DM's lengths: -src a file of articles -src_words 400 -n 48 -batch_size 16 -beam_size 4
     -min_length 50 -max_length 60)

Loads the checkpoint twice (eager, and with -compile: its mlp attention's scores through torch.compile),
translates the first -n lines of -src (each cut to its first -src_words words) once with each to warm up
(the compiled session's warm-up batch compiles: its time is printed), then -rounds times each in turn, the
translation call alone timed. Prints the host, each time, the speed-up (sum of eager times over sum of
compiled times) and the share of identical first predictions.
"""
import torch

from bench.lib.translation_ab import alternate, lines_and_opt, parser, report
from onmt import opts
from onmt.translate.session import load_session


def main(argv=None):
    a = parser(__doc__, n=600).parse_args(argv)
    src, opt = lines_and_opt(a)
    device = torch.device("cpu")
    opts.check_compile(device.type)   # load_session trusts -compile: one line where it cannot build
    runs = {"eager": (load_session(a.model, device), None),
            "compiled": (load_session(a.model, device, compile=True), None)}   # its warm-up batch compiles
    times, outputs = alternate(opt, src, runs, a.rounds)
    report(times, outputs, "-compile", "eager", "compiled")


if __name__ == "__main__":
    main()
