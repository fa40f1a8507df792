"""A beam keeping each source once per example against one copy per hypothesis, for the RNN decoders
(See et al.'s, Luong's, Bahdanau's), on the same lines in one process: A B A B.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.beam_source_bench -model runs/see_gigaword/model_best.pt \\
        -src /work/shared/data/gigaword/valid.src.txt -n 1000
    (CNN/DM's lengths: -src a file of articles -n 48 -batch_size 16 -beam_size 4 -min_length 50 -max_length 60)

"once": the decoder state as translation keeps it (RNNDecoderState.source_rows: memory, keys, mask and
copy ids once per example, each read once per step for the beam's K queries). "per row": the same
translation with the state expanded to one source per hypothesis after every reorder, as it was before.
Prints the host, each translation's time (the translation call alone, after a warm-up batch), the
speed-up and the share of identical first predictions.
"""
import argparse
import time
from dataclasses import replace

import torch

from onmt import opts
from onmt.hardware import cpu_description
from onmt.models.rnn_decoder import RNNDecoderState
from onmt.translate.session import load_session, translate_lines
from onmt.utils.memory import reuse_freed_memory


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-model", required=True)
    p.add_argument("-src", required=True)
    p.add_argument("-n", type=int, default=1000, help="lines translated")
    p.add_argument("-src_words", type=int, default=400, help="each line cut to its first words")
    p.add_argument("-batch_size", type=int, default=30)
    p.add_argument("-beam_size", type=int, default=5)
    p.add_argument("-min_length", type=int, default=0)
    p.add_argument("-max_length", type=int, default=100)
    p.add_argument("-rounds", type=int, default=2)
    a = p.parse_args(argv)
    reuse_freed_memory()   # as translate.py does
    with open(a.src, encoding="utf-8") as f:
        src = [" ".join(line.split()[:a.src_words]) for line, _ in zip(f, range(a.n))]
    opt = opts.parse_with_given(opts.translate_parser(), [
        "-model", a.model, "-src", "-", "-batch_size", str(a.batch_size), "-beam_size", str(a.beam_size),
        "-min_length", str(a.min_length), "-max_length", str(a.max_length)])
    opts.update_translate_opts(opt)
    session = load_session(a.model, torch.device("cpu"))
    once = RNNDecoderState.reorder

    def per_row(self, *args, **kwargs):
        state = once(self, *args, **kwargs)
        return replace(state, source_rows=1, **{name: state.per_row(name) for name in state._source_fields})

    print(f"host: {cpu_description()}; {torch.get_num_threads()} thread(s)", flush=True)
    translate_lines(opt, session, src[:a.batch_size], show_progress=False)   # warm-up
    times, outputs = {"once": [], "per row": []}, {}
    try:
        for _ in range(a.rounds):
            for mode in times:
                RNNDecoderState.reorder = once if mode == "once" else per_row
                t = time.perf_counter()
                results = translate_lines(opt, session, src, show_progress=False)
                times[mode].append(time.perf_counter() - t)
                outputs[mode] = [" ".join(r[0].tokens) for r in results]
    finally:
        RNNDecoderState.reorder = once
    same = sum(x == y for x, y in zip(outputs["once"], outputs["per row"])) / len(src)
    for mode, ts in times.items():
        print(f"source {mode}: {' / '.join(f'{t:.2f}' for t in ts)} s for {len(src)} lines")
    print(f"speed-up of one source per example: {sum(times['per row']) / sum(times['once']):.3f}x; "
          f"identical predictions: {100 * same:.1f}%")


if __name__ == "__main__":
    main()
