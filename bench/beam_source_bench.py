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
from dataclasses import replace

import torch

from bench.lib.translation_ab import alternate, lines_and_opt, parser, report
from onmt.models.rnn_decoder import RNNDecoderState
from onmt.translate.session import load_session


def main(argv=None):
    a = parser(__doc__, n=1000).parse_args(argv)
    src, opt = lines_and_opt(a)
    session = load_session(a.model, torch.device("cpu"))
    once = RNNDecoderState.reorder

    def per_row(self, *args, **kwargs):
        state = once(self, *args, **kwargs)
        return replace(state, source_rows=1, **{name: state.per_row(name) for name in state._source_fields})

    def use(reorder):
        return lambda: setattr(RNNDecoderState, "reorder", reorder)

    try:
        times, outputs = alternate(opt, src, {"source once": (session, use(once)),
                                              "source per row": (session, use(per_row))}, a.rounds)
    finally:
        RNNDecoderState.reorder = once
    report(times, outputs, "one source per example", "source per row", "source once")


if __name__ == "__main__":
    main()
