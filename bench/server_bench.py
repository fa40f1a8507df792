"""onmt_server over loopback against translate.py on the same lines: summaries/s and p50 / p99 latency
at 1, 4 and 16 concurrent clients, with and without cross-request batching.

    python -m bench.server_bench                 # 192 lines, See et al.'s model at CNN/DM-small sizes
                                                 # (emb 128, rnn 256, V 20k/10k), beam 5, summaries of 20
    python -m bench.server_bench -n_lines 96 -rounds 3    # docs/benchmarks.md's run

The model is untrained (seeded) and every summary exactly -length tokens (-min_length = -max_length),
so every configuration does the same decoding work. translate.py is timed in this process (its
main(), model load included, after a warm-up): one run over all the lines at its default
-batch_size 30. The servers are two `onmt_server` subprocesses on port 0 (-threads torch threads, as
translate.py's), one batching requests, one not (-no_request_batching); each client (aiohttp, in this
process) sends one line a request, the next when answered, until every line was sent once; the
clients' lines are the same lines in the same order. -rounds rounds run every configuration in turn,
translate.py first (a shared host's load comes and goes: each round's figures are printed). The
table gives the median over the rounds of each summaries/s and of "translate.py's rate / this"
(translate.py's summaries/s in the same round over the configuration's), and the p50 / p99 of every
request's latency (sent to answered) over all the rounds; "summaries per CPU s" divides by the CPU
time of the decoding process (translate.py's in this process, the server process's, all threads, the
clients' left out), which the load of other processes on a shared host moves far less than wall
time; "same" counts the server's summaries equal to translate.py's lines (the fewest of any round).
Needs the server extra (aiohttp).
"""
import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_checkpoint(path, a):
    """A seeded, untrained pointer-generator with coverage, saved as train.py saves one."""
    import torch

    from bench.lib.common import model_opt, synthetic_vocabs
    from onmt.model_builder import build_model
    from onmt.opts import saved_options
    opt = model_opt(["-copy_attn", "-coverage_attn", "-global_attention", "mlp", "-brnn", "-layers", "1",
                     "-word_vec_size", str(a.word_vec_size), "-rnn_size", str(a.rnn_size), "-dropout", "0"])
    vocabs = synthetic_vocabs(a.src_vocab, a.tgt_vocab)
    torch.manual_seed(0)
    model = build_model(opt, vocabs)
    torch.save({"model": model.state_dict(), "opt": saved_options(opt), "vocab": vocabs.to_dict(), "step": 0},
               path)


def search_args(a):
    return {"beam_size": a.beam_size, "min_length": a.length, "max_length": a.length}


def time_translate_py(ckpt, src, out, a):
    """(summaries/s, summaries per CPU second, its lines) of one translate.py run over the lines (after
    a warm-up)."""
    import torch

    from onmt.bin.translate import main
    torch.set_num_threads(a.threads)
    argv = ["-model", ckpt, "-src", src, "-output", out, "-log_file", os.devnull]
    for k, v in search_args(a).items():
        argv += [f"-{k}", str(v)]
    main(["-model", ckpt, "-src", src, "-output", out + ".warm", "-log_file", os.devnull,
          "-beam_size", str(a.beam_size), "-max_length", "2"])                               # warm-up
    t, cpu = time.perf_counter(), time.process_time()
    main(argv)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    with open(out, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return len(lines) / seconds, len(lines) / cpu, lines


class Server:
    def __init__(self, conf, threads, *args):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=ROOT)
        self.proc = subprocess.Popen([sys.executable, "-m", "onmt.bin.server", "-config", conf, "-port", "0",
                                      *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            sys.exit(f"server_bench: the server did not start ({line.strip()!r})")
        self.url = line.rsplit(" ", 1)[1].strip()

    def cpu_seconds(self):
        """The CPU time the server process has used (all its threads)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(60)


async def clients_run(url, lines, clients):
    """(seconds, latencies in s, summaries by line) of `clients` clients sending every line once."""
    import aiohttp
    todo = list(range(len(lines)))[::-1]
    latencies, out = [], [None] * len(lines)

    async def client(session):
        while todo:
            i = todo.pop()
            t = time.perf_counter()
            async with session.post(url + "/translate", json=[{"src": lines[i], "id": 1}]) as r:
                answer = await r.json()
                if r.status != 200:
                    raise SystemExit(f"server_bench: {r.status} {answer}")
            latencies.append(time.perf_counter() - t)
            out[i] = answer[0][0]["tgt"]
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        warm = [{"src": line, "id": 1} for line in lines[:2]]
        async with session.post(url + "/translate", json=warm) as r:
            await r.read()
        t = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        seconds = time.perf_counter() - t
    return seconds, latencies, out


def percentile(values, q):
    """The nearest-rank q-th percentile."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n_lines", type=int, default=192, help="lines summarized by each configuration")
    p.add_argument("-clients", default="1,4,16", help="comma-separated numbers of concurrent clients")
    p.add_argument("-threads", type=int, default=1, help="torch threads of translate.py and of the server")
    p.add_argument("-src_min", type=int, default=30)
    p.add_argument("-src_max", type=int, default=60)
    p.add_argument("-src_vocab", type=int, default=20000)
    p.add_argument("-tgt_vocab", type=int, default=10000)
    p.add_argument("-word_vec_size", type=int, default=128)
    p.add_argument("-rnn_size", type=int, default=256)
    p.add_argument("-beam_size", type=int, default=5)
    p.add_argument("-length", type=int, default=20, help="every summary's length in tokens")
    p.add_argument("-rounds", type=int, default=3,
                   help="rounds of every configuration in turn (translate.py included): the medians")
    p.add_argument("-batch_window_ms", default="5", help="the server's -batch_window_ms")
    a = p.parse_args(argv)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        sys.exit("server_bench: needs aiohttp, the server extra: pip install '.[server]'")
    from bench.translate_bench import random_lines
    clients = [int(c) for c in a.clients.split(",")]
    with tempfile.TemporaryDirectory() as d:
        ckpt, src = os.path.join(d, "model.pt"), os.path.join(d, "src.txt")
        make_checkpoint(ckpt, a)
        lines = random_lines(a.n_lines, a.src_min, a.src_max, a.src_vocab)
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        conf = os.path.join(d, "conf.json")
        with open(conf, "w") as f:
            json.dump({"models_root": d, "models": [{"id": 1, "model": "model.pt", "opt": search_args(a)}]}, f)
        print(f"host: {host_cpu()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
              f"threads {a.threads}; model copy+coverage emb {a.word_vec_size} rnn {a.rnn_size} (brnn), "
              f"V {a.src_vocab}/{a.tgt_vocab}, {a.n_lines} lines of {a.src_min}..{a.src_max} tokens, "
              f"beam {a.beam_size}, summaries of {a.length} tokens", flush=True)
        runs = [("batched", ["-batch_window_ms", a.batch_window_ms]), ("per request", ["-no_request_batching"])]
        servers = [Server(conf, a.threads, *args) for _, args in runs]
        rounds, expected = [], None    # per round: {configuration: (summaries/s, latencies, summaries)}
        try:
            # rounds of every configuration in turn, translate.py first (A B C A B C)
            for r in range(a.rounds):
                rate, per_cpu, expected = time_translate_py(ckpt, src, os.path.join(d, "pred.txt"), a)
                got = {"translate.py": (rate, [], expected, per_cpu)}
                print(f"round {r + 1}: translate.py {rate:.1f} summaries/s", flush=True)
                for (name, _), server in zip(runs, servers):
                    for c in clients:
                        cpu = server.cpu_seconds()
                        seconds, lat, out = asyncio.run(clients_run(server.url, lines, c))
                        cpu = server.cpu_seconds() - cpu
                        got[name, c] = (len(lines) / seconds, lat, out, len(lines) / cpu)
                        print(f"round {r + 1}: onmt_server, {name}, {c} clients: {len(lines) / seconds:.1f} "
                              f"summaries/s (translate.py's rate / this: {rate * seconds / len(lines):.2f})",
                              flush=True)
                rounds.append(got)
        finally:
            for server in servers:
                server.stop()
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
        rows = [("translate.py, one run", "-", median(g["translate.py"][0] for g in rounds), None, None, 1.0,
                 median(g["translate.py"][3] for g in rounds), 1.0, len(lines))]
        for name, _ in runs:
            for c in clients:
                lat = [x for g in rounds for x in g[name, c][1]]
                same = min(sum(x == y for x, y in zip(g[name, c][2], expected)) for g in rounds)
                rows.append((f"onmt_server, {name}", c, median(g[name, c][0] for g in rounds), percentile(lat, 50),
                             percentile(lat, 99), median(g["translate.py"][0] / g[name, c][0] for g in rounds),
                             median(g[name, c][3] for g in rounds),
                             median(g["translate.py"][3] / g[name, c][3] for g in rounds), same))
    print_table(rows, len(lines))


def median(values):
    import statistics
    return statistics.median(list(values))


def print_table(rows, n):
    print()
    print("| run | clients | summaries/s | p50 latency (ms) | p99 latency (ms) | translate.py's rate / this | "
          "summaries per CPU s | translate.py's / this | same as translate.py |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, c, rate, p50, p99, ratio, per_cpu, cpu_ratio, same in rows:
        lat = f"{p50 * 1000:.0f} | {p99 * 1000:.0f}" if p50 is not None else "- | -"
        print(f"| {name} | {c} | {rate:.1f} | {lat} | {ratio:.2f} | {per_cpu:.1f} | {cpu_ratio:.2f} | {same}/{n} |")


if __name__ == "__main__":
    main()
