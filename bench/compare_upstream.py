"""This project against upstream OpenNMT-py 3.5.1: the same data, the same model sizes, one table.

    .venv/bin/python bench/compare_upstream.py [-steps 300] [-translate_n 500] [-rounds 2] [-trunc 400,100]
                                               [-workdir runs/compare_upstream] [-skip_install]
                                               [-device cuda] [-upstream_python PY -upstream_pythonpath P]

The model is See et al.'s pointer-generator with coverage: a bidirectional LSTM encoder (2 x 128),
an LSTM decoder of 256, embeddings 128 shared between encoder and decoder, MLP attention, copy
attention and coverage (lambda 1), dropout 0.3, uniform init 0.1, Adam 1e-3, gradient norm 5,
batch 32 sentences, loss normalized by target tokens. Upstream gets
`-encoder_type brnn -copy_attn -reuse_copy_attn -coverage_attn -lambda_coverage 1 -global_attention
mlp -share_embeddings`: -reuse_copy_attn because without it upstream builds a second attention for
copying (263k more parameters); the pointer-generator (and this project) copies with the decoder's
attention. Both sides use one vocabulary file (upstream's `onmt_build_vocab`, shared, at most
-vocab_size words), all training pairs (no length filter) and all validation pairs. Both parameter
counts are printed.

Runs ours, upstream, ours, upstream, ... (-rounds), each a fresh process with OMP_NUM_THREADS=1,
one at a time: training for -steps (validation at the last step), then beam translation (-beam_size, 5) of the
first -translate_n validation sources at batch 32 with -min_length = -max_length = -length, so every
hypothesis has the same length whatever the model learned. Figures: training target tokens/s (mean
of the logged rates after the first report), translation sentences/s (the translation call alone,
no start-up or model load), peak RSS of each process tree (polled from /proc), validation
perplexity (token NLL, no coverage term), and ROUGE of both last-round outputs with
`onmt_evaluate -pred ours -pred upstream -bootstrap 1000` (paired bootstrap).

Upstream is installed under -workdir/venv_upstream (OpenNMT-py==3.5.1 --no-deps beside torch==2.13.0
and its other requirements; upstream pins torch<2.3 but runs on this torch), or taken as it is from
-upstream_python with -upstream_pythonpath as its whole PYTHONPATH (the GPU machine's, bench/gpu_device.sh;
ours keep the caller's), and run through bench/upstream_wrapper.py, which patches upstream at import
time (see its docstring for each workaround); nothing in upstream's site-packages is edited. -device cuda:
both sides on GPU 0 at fp32, fp16 and bf16 where the GPU has it (ours only: set against upstream's fp16).
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:   # run as a script (sys.path[0] is bench/) or loaded from its path
    sys.path.insert(0, ROOT)
from bench.lib.compare_upstream_table import precision_rows, print_table  # noqa: E402,F401
from bench.lib.measured_run import _env, fail, last_line, must, run  # noqa: E402,F401

UPSTREAM_PACKAGES = ["torch==2.13.0", "configargparse", "pyyaml", "sacrebleu", "six", "pyonmttok", "rapidfuzz",
                     "pyahocorasick", "tensorboard", "ctranslate2", "spacy", "fasttext-wheel"]
UPSTREAM_PRECISIONS = ("fp32", "fp16", "int8")   # upstream translate's -precision on the CPU: fp32, int8


# ---------------------------------------------------------------- install and data

def upstream_python(a, w):
    """(upstream's python, its processes' PYTHONPATH): -upstream_python as it is, or -workdir/venv_upstream,
    installed there first unless -skip_install."""
    if a.upstream_python:   # a path (relative to here: upstream runs in -workdir) or a command on PATH
        upy = shutil.which(a.upstream_python)
        if upy is None:
            fail(f"-upstream_python {a.upstream_python}: no such program")
        return os.path.abspath(upy), a.upstream_pythonpath
    venv = os.path.join(w, "venv_upstream")
    upy = os.path.join(venv, "bin", "python")
    if a.skip_install:
        if not os.path.exists(upy):
            fail(f"-skip_install but {upy} does not exist")
    else:
        print(f"installing upstream OpenNMT-py 3.5.1 into {venv} ...", flush=True)
        upy = install(venv)
    return upy, a.upstream_pythonpath


def install(venv):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        r = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
        if r.returncode:
            fail(f"creating {venv} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    for pkgs, extra in ((UPSTREAM_PACKAGES, []), (["OpenNMT-py==3.5.1"], ["--no-deps"])):
        r = subprocess.run([py, "-m", "pip", "install", "-q", *extra, *pkgs], capture_output=True, text=True)
        if r.returncode:
            errs = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR")] or r.stderr.strip().splitlines()
            fail(f"pip install {' '.join(extra + pkgs)} into {venv} failed: {(errs or ['?'])[0][:300]}")
    return py


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(ln + "\n" for ln in lines))


def head(path, n):
    with open(path) as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def cut_data(a, w):
    """-trunc / -valid_n: copies of -data's {train,valid}.{src,tgt}.txt[.gz] under -workdir/data, sources cut
    to SRC tokens and targets to TGT, validation to its first -valid_n pairs; written once (atomically)."""
    from onmt.inputters.corpus import read_lines
    limits = dict(zip(("src", "tgt"), (int(x) for x in a.trunc.split(",")))) if a.trunc else {}
    out = os.path.join(w, "data")
    os.makedirs(out, exist_ok=True)
    for split in ("train", "valid"):
        for side in ("src", "tgt"):
            dst = os.path.join(out, f"{split}.{side}.txt")
            if os.path.exists(dst):
                continue
            src = next((os.path.join(a.data, f"{split}.{side}.txt{z}") for z in ("", ".gz")
                        if os.path.exists(os.path.join(a.data, f"{split}.{side}.txt{z}"))), None)
            if src is None:
                fail(f"{os.path.join(a.data, f'{split}.{side}.txt')}[.gz] is missing (-data)")
            lines = list(read_lines(src))
            if split == "valid" and a.valid_n:
                lines = lines[:a.valid_n]
            n = limits.get(side)
            write_lines(dst + ".tmp", [" ".join(ln.split()[:n]) if n else ln for ln in lines])
            os.replace(dst + ".tmp", dst)
    return out


def upstream_config(a, w, data, kind):
    """Upstream's YAML for `kind` ("vocab" or "train") under `w`; its data paths absolute, since upstream
    runs in `w`, not where -data was given."""
    g = lambda name: os.path.abspath(os.path.join(data, name))  # noqa: E731
    lines = [f"save_data: {w}/upstream/data", f"src_vocab: {w}/vocab.txt", f"tgt_vocab: {w}/vocab.txt",
             "share_vocab: true", f"src_vocab_size: {a.vocab_size}", f"tgt_vocab_size: {a.vocab_size}",
             "overwrite: true", "data:", "  corpus_1:", f"    path_src: {g('train.src.txt')}",
             f"    path_tgt: {g('train.tgt.txt')}", "    weight: 1", "  valid:", f"    path_src: {g('valid.src.txt')}",
             f"    path_tgt: {g('valid.tgt.txt')}"]
    if kind == "vocab":
        lines.append("n_sample: -1")
    else:
        report = max(1, a.steps // 10)
        lines += ["encoder_type: brnn", "decoder_type: rnn", "rnn_type: LSTM", "layers: 1", "word_vec_size: 128",
                  "hidden_size: 256", "copy_attn: true", "reuse_copy_attn: true", "coverage_attn: true",
                  "lambda_coverage: 1.0", "global_attention: mlp", "share_embeddings: true", "dropout: 0.3",
                  "param_init: 0.1", "optim: adam", "learning_rate: 0.001", "max_grad_norm: 5",
                  "batch_size: 32", "batch_type: sents", "valid_batch_size: 32", "normalization: tokens",
                  "bucket_size: 10000", "num_workers: 0", "seed: 3435",
                  f"train_steps: {a.steps}", f"valid_steps: {a.steps}", f"save_checkpoint_steps: {a.steps}",
                  f"report_every: {report}", f"save_model: {w}/upstream/model"]
        if a.device == "cuda":
            lines += ["world_size: 1", "gpu_ranks: [0]"]
    path = os.path.join(w, f"upstream_{kind}.yaml")
    write_lines(path, lines)
    return path


# ---------------------------------------------------------------- log parsing

STEP_RE = re.compile(r"Step\s+(\d+)/\s*\d+;.*?(\d+)/(\d+) tok/s;\s*(?:(\d+) sec|wall (\d+) s)")  # upstream's, ours


def train_figures(text, side):
    steps = [(int(s), int(src), int(tgt), int(sec or wall)) for s, src, tgt, sec, wall in STEP_RE.findall(text)]
    after = steps[1:] or steps
    fig = {"tgt_tok_s": sum(x[2] for x in after) / max(len(after), 1)}
    if len(steps) >= 2 and steps[-1][3] > steps[0][3]:
        fig["sents_s"] = 32 * (steps[-1][0] - steps[0][0]) / (steps[-1][3] - steps[0][3])
    m = re.findall(r"Validation perplexity:\s*([0-9.]+)", text)
    fig["valid_ppl"] = float(m[-1]) if m else float("nan")
    pat = r"Model copy \(\w+\): (\d+) parameters" if side == "ours" else r"number of parameters: (\d+)"
    m = re.search(pat, text)
    fig["params"] = int(m.group(1)) if m else 0
    m = re.search(r"src vocab size = (\d+)", text)
    fig["vocab"] = int(m.group(1)) if m else 0
    return fig


# ---------------------------------------------------------------- our side's translation timing

def ours_translate(argv):
    """Run in this project's python: translate.py, printing the time of translate_lines alone."""
    import onmt.bin.translate as T
    inner = T.translate_lines

    def timed(*args, **kwargs):
        t = time.perf_counter()
        out = inner(*args, **kwargs)
        print(f"COMPARE_TRANSLATE_SECONDS={time.perf_counter() - t:.3f}", file=sys.stderr, flush=True)
        return out

    T.translate_lines = timed
    from onmt.utils.cli import run_main
    sys.argv = ["translate.py"] + argv
    run_main(T.main)


# ---------------------------------------------------------------- main

def parse(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-steps", type=int, default=300, help="training steps of each side (validation at the last)")
    p.add_argument("-translate_n", type=int, default=500, help="validation sentences translated")
    p.add_argument("-rounds", type=int, default=2, help="ours, upstream, ours, upstream, ...: this many pairs")
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "compare_upstream"))
    p.add_argument("-skip_install", action="store_true", help="use -workdir/venv_upstream as it is")
    p.add_argument("-upstream_python", default="",
                   help="run upstream with this python as it is (no venv, no install; implies -skip_install)")
    p.add_argument("-upstream_pythonpath", default="",
                   help="upstream's processes' PYTHONPATH (with -upstream_python: where its wheels were installed)")
    p.add_argument("-device", choices=("cpu", "cuda"), default="cpu", help="both sides train and translate here")
    p.add_argument("-data", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "gigaword"),
                   help="folder with {train,valid}.{src,tgt}.txt")
    p.add_argument("-vocab_size", type=int, default=20000, help="shared vocabulary, words (specials apart)")
    p.add_argument("-trunc", default="",
                   help="SRC,TGT: both sides read copies of -data with sources cut to SRC tokens and targets to "
                        "TGT (e.g. 400,100 for CNN/DM at See et al.'s lengths); .txt.gz read too")
    p.add_argument("-valid_n", type=int, default=0, help="validation pairs both sides validate on (0: all)")
    p.add_argument("-length", type=int, default=20, help="-min_length = -max_length of the translations")
    p.add_argument("-beam_size", type=int, default=5, help="both sides' beam")
    p.add_argument("-bootstrap", type=int, default=1000)
    p.add_argument("-precisions", default="",
                   help="comma-separated -precision values each side translates at (default: fp32,int8 on the CPU, "
                        "fp32,fp16 on CUDA, and bf16 for ours where the device runs it fast); upstream has no bf16")
    a = p.parse_args(argv)
    a.precisions = a.precisions.split(",") if a.precisions else default_precisions(a.device)
    return a


def default_precisions(device="cpu"):
    """fp32 and upstream's fast choice on the device (int8 on the CPU, fp16 on CUDA), and bf16 where the
    device runs it fast (ours only)."""
    from onmt.hardware import precision_problem
    return ["fp32", "int8" if device == "cpu" else "fp16"] + ([] if precision_problem("bf16", device) else ["bf16"])


def translate_side(side, base_cmd, pred, fig, a, tag, logs, cwd, pythonpath):
    """Translate the test sources once per precision (-precision; upstream skips bf16, which it lacks):
    fig gets tr_sents_s_<precision> (tr_failed_<precision>, its last line, where upstream fails at a
    precision other than fp32: the table says so and the comparison goes on; the fp32 run also as
    tr_sents_s, its output in `pred` for ROUGE),
    tr_wall / tr_rss / out_len of the fp32 run."""
    for precision in a.precisions:
        if side == "upstream" and precision not in UPSTREAM_PRECISIONS:
            continue
        out = pred if precision == "fp32" else pred.replace(".txt", f"_{precision}.txt")
        cmd = base_cmd + ["-output", out, "-precision", precision]
        print(f"  {side} translating {a.translate_n} sentences at -precision {precision} ...", flush=True)
        log = f"{logs}/{tag}_translate_{precision}.log"
        rc, wall, rss, text = run(cmd, log, cwd=cwd, pythonpath=pythonpath)
        if rc != 0 and side == "upstream" and precision != "fp32":   # upstream's own failure: a row says so
            fig[f"tr_failed_{precision}"] = last_line(text)
            print(f"  upstream translation at -precision {precision} failed (exit {rc}): "
                  f"{fig[f'tr_failed_{precision}']}  [log: {log}]", flush=True)
            continue
        must(rc, text, f"{side} translation at -precision {precision}", log)
        m = re.findall(r"COMPARE_TRANSLATE_SECONDS=([0-9.]+)", text)
        fig[f"tr_sents_s_{precision}"] = a.translate_n / (float(m[-1]) if m else wall)
        if precision == "fp32":
            with open(out) as f:
                outs = [ln.split() for ln in f]
            fig.update(tr_sents_s=fig["tr_sents_s_fp32"], tr_wall=wall, tr_rss=rss,
                       out_len=sum(map(len, outs)) / max(len(outs), 1))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--ours-translate"]:
        return ours_translate(argv[1:])
    a = parse(argv)
    w = os.path.abspath(a.workdir)
    os.makedirs(os.path.join(w, "upstream"), exist_ok=True)
    os.makedirs(os.path.join(w, "ours"), exist_ok=True)
    os.makedirs(os.path.join(w, "logs"), exist_ok=True)
    a.data = cut_data(a, w) if a.trunc or a.valid_n else a.data
    for name in ("train.src.txt", "train.tgt.txt", "valid.src.txt", "valid.tgt.txt"):
        if not os.path.exists(os.path.join(a.data, name)):
            fail(f"{os.path.join(a.data, name)} is missing (-data)")
    upy, upath = upstream_python(a, w)
    if a.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            fail("-device cuda but torch.cuda.is_available() is False")
        where = f"GPU 0 ({torch.cuda.get_device_name(0)})"
    else:
        where = "the CPU"
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPU cores; both sides on {where}; every process "
          f"runs alone with OMP_NUM_THREADS=1; load before start {os.getloadavg()[0]:.2f}", flush=True)
    wrapper = os.path.join(HERE, "upstream_wrapper.py")
    r = subprocess.run([upy, wrapper, "check"], capture_output=True, text=True, cwd=w, env=_env(upath))
    if r.returncode:
        fail(f"upstream does not import, or bench/upstream_wrapper.py's patches do not apply to it: "
             f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
    print(r.stdout.strip(), flush=True)   # its version, torch's, and the stand-ins

    # data: one vocabulary for both, the first translate_n validation pairs for translation
    logs = os.path.join(w, "logs")
    cfg = upstream_config(a, w, a.data, "vocab")
    rc, _, _, text = run([upy, wrapper, "build_vocab", "-config", cfg], f"{logs}/build_vocab.log", cwd=w,
                         pythonpath=upath)
    must(rc, text, "upstream onmt_build_vocab", f"{logs}/build_vocab.log")
    cmd = [sys.executable, os.path.join(ROOT, "preprocess.py"), "-train_src", f"{a.data}/train.src.txt",
           "-train_tgt", f"{a.data}/train.tgt.txt", "-valid_src", f"{a.data}/valid.src.txt",
           "-valid_tgt", f"{a.data}/valid.tgt.txt", "-save_data", f"{w}/ours/data", "-share_vocab", "-dynamic_dict",
           "-src_vocab", f"{w}/vocab.txt", "-src_vocab_size", str(a.vocab_size + 4),
           "-tgt_vocab_size", str(a.vocab_size + 4), "-src_seq_length", "100000", "-tgt_seq_length", "100000"]
    rc, _, _, text = run(cmd, f"{logs}/preprocess.log")
    must(rc, text, "preprocess.py", f"{logs}/preprocess.log")
    m = re.search(r"vocabularies (\d+) \(src\)", text)
    ours_vocab = int(m.group(1)) if m else 0
    test_src, test_tgt = f"{w}/test.src.txt", f"{w}/test.tgt.txt"
    write_lines(test_src, head(f"{a.data}/valid.src.txt", a.translate_n))
    write_lines(test_tgt, head(f"{a.data}/valid.tgt.txt", a.translate_n))
    train_cfg = upstream_config(a, w, a.data, "train")

    results = {"ours": [], "upstream": []}
    report = max(1, a.steps // 10)
    tr_opts = ["-beam_size", str(a.beam_size), "-batch_size", "32", "-min_length", str(a.length),
               "-max_length", str(a.length),
               "-gpu", "0" if a.device == "cuda" else "-1"]
    for rnd in range(a.rounds):
        for side in ("ours", "upstream"):
            tag = f"{side}_r{rnd + 1}"
            if side == "ours":
                cmd = [sys.executable, os.path.join(ROOT, "train.py"), "-data", f"{w}/ours/data",
                       "-save_model", f"{w}/ours/model", "-copy_attn", "-coverage_attn", "-brnn",
                       "-global_attention", "mlp", "-share_embeddings", "-word_vec_size", "128", "-rnn_size", "256",
                       "-layers", "1", "-optim", "adam", "-learning_rate", "0.001", "-batch_size", "32",
                       "-lambda_coverage", "1", "-dropout", "0.3", "-param_init", "0.1", "-max_grad_norm", "5",
                       "-normalization", "tokens", "-seed", "3435", "-train_steps", str(a.steps),
                       "-valid_steps", str(a.steps), "-save_checkpoint_steps", str(a.steps),
                       "-report_every", str(report), "-gpu", "0" if a.device == "cuda" else "-1"]
                model = f"{w}/ours/model_step_{a.steps}.pt"
                tcmd = [sys.executable, os.path.abspath(__file__), "--ours-translate", "-model", model,
                        "-src", test_src] + tr_opts
                cwd, pythonpath = ROOT, None
            else:
                cmd = [upy, wrapper, "train", "-config", train_cfg]
                model = f"{w}/upstream/model_step_{a.steps}.pt"
                tcmd = [upy, wrapper, "translate", "-model", model, "-src", test_src, "-batch_type", "sents"] + tr_opts
                # not the repository root, and its own PYTHONPATH: upstream's `onmt` must not meet this project's
                cwd, pythonpath = w, upath
            for old in glob.glob(f"{w}/{side}/model_step_*.pt") + glob.glob(f"{w}/{side}/model_best.pt"):
                os.remove(old)   # train.py refuses a -save_model holding an earlier run's best checkpoint
            print(f"round {rnd + 1}: {side} training {a.steps} steps ...", flush=True)
            rc, wall, rss, text = run(cmd, f"{logs}/{tag}_train.log", cwd=cwd, pythonpath=pythonpath)
            must(rc, text, f"{side} training", f"{logs}/{tag}_train.log")
            fig = train_figures(text, side)
            if side == "ours":
                fig["vocab"] = ours_vocab
            fig.update(train_wall=wall, train_rss=rss)
            translate_side(side, tcmd, f"{w}/{side}/pred.txt", fig, a, tag, logs, cwd, pythonpath)
            results[side].append(fig)
            print(f"  {json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in fig.items()})}",
                  flush=True)

    # ROUGE of the last round's outputs
    ev_json = f"{w}/rouge.json"
    if os.path.exists(ev_json):
        os.remove(ev_json)
    cmd = [sys.executable, "-m", "onmt.bin.evaluate", "-pred", f"{w}/ours/pred.txt", "-pred", f"{w}/upstream/pred.txt",
           "-ref", test_tgt, "-bootstrap", str(a.bootstrap), "-json", ev_json]
    rc, _, _, text = run(cmd, f"{logs}/evaluate.log")
    must(rc, text, "onmt_evaluate", f"{logs}/evaluate.log")
    with open(ev_json) as f:
        ev = json.load(f)
    print_table(a, results, ev)


if __name__ == "__main__":
    main()
