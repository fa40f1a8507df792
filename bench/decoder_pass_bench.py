"""Forward + backward time of See et al.'s decoder as the fused pass (onmt/fused/decoder_pass.py).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python bench/decoder_pass_bench.py            # batch 32, 9 steps,
        # source 32, emb 128, hidden 256, coverage, dropout 0.3: the comparison's Gigaword batches
    ... bench/decoder_pass_bench.py -steps 20 -src_len 60 -recompute   # the sigmoids recomputed in backward

One LSTM decoder with input feeding and mlp attention, a random batch, the pass and a backward through
every output, timed -repeats times after two warm-up runs; prints the median and the fastest. To compare
two trees, run this file from each with PYTHONPATH set to that tree (the project is installed editable
into .venv, so without it `onmt` resolves to the tree the venv was made from).
"""
import argparse
import statistics
import time

import torch

import onmt.fused.decoder_pass as decoder_pass
from onmt.modules.global_attention import GlobalAttention
from onmt.utils.memory import reuse_freed_memory


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-batch_size", type=int, default=32)
    p.add_argument("-steps", type=int, default=9, help="target steps T")
    p.add_argument("-src_len", type=int, default=32)
    p.add_argument("-word_vec_size", type=int, default=128)
    p.add_argument("-rnn_size", type=int, default=256)
    p.add_argument("-dropout", type=float, default=0.3)
    p.add_argument("-repeats", type=int, default=20)
    p.add_argument("-recompute", action="store_true", help="never keep the attention's sigmoids")
    p.add_argument("-threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    return p.parse_args()


def main():
    a = parse()
    reuse_freed_memory()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.recompute and hasattr(decoder_pass, "KEEP_SIGMOIDS"):
        decoder_pass.KEEP_SIGMOIDS = 0
    torch.manual_seed(0)
    B, T, S, E, H = a.batch_size, a.steps, a.src_len, a.word_vec_size, a.rnn_size
    rnn = torch.nn.LSTM(E + H, H, 1, batch_first=True)
    attention = GlobalAttention(H, "mlp", coverage=True)
    emb = torch.randn(B, T, E, requires_grad=True)  # (B, T, E)
    memory = torch.randn(B, S, H, requires_grad=True)  # (B, S, H)
    mask = torch.ones(B, S, dtype=torch.bool)  # (B, S)
    drop = (torch.rand(T, B, H) >= a.dropout).float() / (1 - a.dropout) if a.dropout > 0 else None  # (T, B, H)

    def run():
        keys = attention.precompute_keys(memory)  # (B, S, H)
        zeros = torch.zeros(B, H)  # (B, H)
        out = decoder_pass.lstm_mlp_decoder_pass(emb, zeros, zeros, zeros, torch.zeros(B, S), keys, memory,
                                                 mask, drop, rnn, attention)
        (out[0].sum() + out[3].sum() + out[4].sum()).backward()

    for _ in range(2):
        run()
    times = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    print(f"decoder pass B {B} T {T} S {S} E {E} H {H}{' (sigmoids recomputed)' if a.recompute else ''}, "
          f"{torch.get_num_threads()} thread(s): median {statistics.median(times) * 1e3:.2f} ms, "
          f"fastest {min(times) * 1e3:.2f} ms over {a.repeats} runs")


if __name__ == "__main__":
    main()
