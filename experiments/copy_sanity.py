"""Why does the one-layer reinforced model copy worse than See et al.'s? The copy and sort sanity tasks
with training curves, several seeds, one row per setting (issue 29).

    python experiments/copy_sanity.py [-workdir runs/copy_sanity] [-only r_none_d0,r_sqrt_d0] [-seeds 1,2,3]

One command, resumable: a run whose JSON is in experiments/results/copy_sanity/ is skipped, so run it
again after an interruption. Each run: tools/make_toy_data.py -> preprocess.py -> train.py (one thread)
-> translate.py (beam 5) on the 500 held-out test pairs, scored by exact match. The sizes are the
issue's: embeddings 64, hidden 128, Adam 1e-3, batch 64, seed 1-3;
  copy_oov  20,000 pairs, sources of 3-18 tokens, 80 % of them made-up rare words, shared vocabulary
            20k (source) / 1k (target), dynamic dictionary: 64 % of target tokens can only be copied;
            2,000 steps;
  sort      20,000 pairs of 3-10 words out of 20, sorted; 5,000 steps.
Arms run side by side when given disjoint -only lists (one thread each).
Training runs in this script's own process (`_train_with_norms`), which records the gradient norm of
every step before clipping, without changing training. Each run's JSON holds: exact match, the
validation accuracies, the curves (training xent / accuracy / p(copy) every 10 steps, the gradient
norm every step), the spike counts, and, for the failed test examples, where the output first
differs from the reference and the encoder attention's entropy there. The table and the curves PNG
are written after every run: commit them, never the checkpoints under -workdir.
"""
import argparse
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments.common import run  # noqa: E402
from experiments.copy_sanity_report import collapses, write_table  # noqa: E402

RESULTS = os.path.join(HERE, "results", "copy_sanity")

SIZES = ["-word_vec_size", "64", "-rnn_size", "128", "-optim", "adam", "-learning_rate", "0.001",
         "-batch_size", "64", "-report_every", "10", "-save_checkpoint_steps", "0"]
SEE = ["-copy_attn", "-global_attention", "mlp", "-brnn", "-layers", "1"]
REINF_SS = ["-reinforced", "-layers", "1"]   # every arm below gives its scheduled sampling
REINF = REINF_SS + ["-scheduled_sampling", "0"]
TASKS = {"copy_oov": (["-train_size", "20000", "-valid_size", "500", "-test_size", "500", "-max_len", "18"],
                      ["-src_vocab_size", "20000", "-tgt_vocab_size", "1000"], 2000),
         "sort": (["-train_size", "20000", "-valid_size", "500", "-test_size", "500"], [], 5000)}
# the learning rate halved every 400 steps from step 800: Adam at a constant 1e-3 makes every family's
# training collapse and recover now and then once the task is learnt
DECAY = ["-learning_rate_decay", "0.5", "-start_decay_steps", "800", "-decay_steps", "400"]
# name -> (task, options): See et al.'s model (dropout 0.3, the CLI default), the reinforced model with
# the paper's unscaled scores (none) and with scores / sqrt(H) (sqrt), dropout 0 and 0.3; the bare recipe
ARMS = {
    "see_d3": ("copy_oov", SEE + ["-dropout", "0.3"]),
    "r_none_d3": ("copy_oov", REINF + ["-intra_attn_scale", "none", "-dropout", "0.3"]),
    "r_none_d0": ("copy_oov", REINF + ["-intra_attn_scale", "none", "-dropout", "0"]),
    "r_sqrt_d3": ("copy_oov", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0.3"]),
    "r_sqrt_d0": ("copy_oov", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0"]),
    # the recipe as it was measured (with the paper's scheduled sampling, which the recipe since dropped)
    "r_recipe": ("copy_oov", ["-reinforced", "-word_vec_size", "64", "-rnn_size", "128",
                              "-scheduled_sampling", "0.25"]),
    "r_sqrt_d0_decay": ("copy_oov", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0"] + DECAY),
    "see_d3_decay": ("copy_oov", SEE + ["-dropout", "0.3"] + DECAY),
    "r_sqrt_d3_decay": ("copy_oov", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0.3"] + DECAY),
    "sort_see_d3": ("sort", SEE + ["-dropout", "0.3"]),
    "sort_r_none_d0": ("sort", REINF + ["-intra_attn_scale", "none", "-dropout", "0"]),
    "sort_r_sqrt_d0": ("sort", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0"]),
    "sort_r_sqrt_d3": ("sort", REINF + ["-intra_attn_scale", "sqrt", "-dropout", "0.3"]),
    # scheduled sampling (issue 37): the paper's 0.25 from the first step, from half-way, rising from 0
    # over the whole run; against the same model without it (copy_oov: with the decaying rate, whose
    # control learns the task at every seed, so what changes is scheduled sampling's doing)
    **{f"{prefix}r_sqrt_d0{suffix}_{name}": (task, REINF_SS + ["-intra_attn_scale", "sqrt", "-dropout", "0"] + extra
                                             + ["-scheduled_sampling", "0.25"] + schedule)
       for task, prefix, suffix, extra, steps in (("sort", "sort_", "", [], 5000),
                                                  ("copy_oov", "", "_decay", DECAY, 2000))
       for name, schedule in (("ss", []), ("ss_late", ["-scheduled_sampling_start", str(steps // 2)]),
                              ("ss_ramp", ["-scheduled_sampling_ramp", str(steps)]))},
}
STEP_LINE = re.compile(r"Step (\d+)/\d+; acc: ([\d.]+); ppl: [\d.]+; xent: ([\d.]+).*?(?:p\(copy\) ([\d.]+))?$")
VALID_ACC = re.compile(r"Validation accuracy: ([\d.]+)")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "copy_sanity"))
    p.add_argument("-only", default="", help="comma-separated arms (default: all)")
    p.add_argument("-seeds", default="1,2,3")
    p.add_argument("-results", default=RESULTS)
    p.add_argument("-backfill", action="store_true",
                   help="train nothing: complete the results already written (reference check, per-pair "
                        "outcomes) and write the table")
    return p.parse_args(argv)


def prepare(a, task):
    data, prep = os.path.join(a.workdir, task, "data"), os.path.join(a.workdir, task, "prep", "data")
    if not os.path.exists(prep + ".meta.json"):
        gen, vocab, _ = TASKS[task]
        os.makedirs(os.path.dirname(prep), exist_ok=True)
        log = os.path.join(a.workdir, task, "prepare.log")
        run(["tools/make_toy_data.py", "-task", task, "-dir", data, "-seed", "1", *gen], log)
        run(["preprocess.py", "-train_src", f"{data}/train.src.txt", "-train_tgt", f"{data}/train.tgt.txt",
             "-valid_src", f"{data}/valid.src.txt", "-valid_tgt", f"{data}/valid.tgt.txt", "-save_data", prep,
             "-share_vocab", "-dynamic_dict", *vocab], log)
    return data, prep


def _train_with_norms(norm_file, argv):
    """train.py's main with torch.nn.utils.clip_grad_norm_ wrapped to append each step's total norm
    (before clipping; the value clipping computes anyway) to `norm_file`, and, at a step whose norm is
    over 20, the three parameters with the largest gradient norms to `norm_file`.top."""
    import torch

    import onmt.trainer
    from onmt.bin.train import main
    from onmt.utils.cli import run_main
    clip, init, models, steps = torch.nn.utils.clip_grad_norm_, onmt.trainer.Trainer.__init__, [], [0]

    def keep_model(self, model, *args, **kwargs):
        models.append(model)
        init(self, model, *args, **kwargs)

    with open(norm_file, "w") as out, open(norm_file + ".top", "w") as top:
        def recording(params, max_norm, *args, **kwargs):
            named = [(n, float(p.grad.norm())) for n, p in models[-1].named_parameters() if p.grad is not None]
            norm = clip(params, max_norm, *args, **kwargs)
            out.write(f"{float(norm):.5g}\n")
            steps[0] += 1
            if float(norm) > 20:
                largest = sorted(((g, n) for n, g in named), reverse=True)[:3]
                top.write(f"{steps[0]} {float(norm):.1f} "
                          + " ".join(f"{n}={v:.1f}" for v, n in largest) + "\n")
            return norm
        onmt.trainer.Trainer.__init__ = keep_model
        torch.nn.utils.clip_grad_norm_ = recording
        run_main(main, argv)


def failures(ckpt, src_path, tgt_path):
    """(exact match, [(first differing position, reference length, attention entropy there, kind)],
    [1 where the output is the reference, else 0] per test pair) of beam-5 outputs, from the API's
    details (the same search as translate.py)."""
    import torch

    from onmt.api import Summarizer
    src = [line.strip() for line in open(src_path, encoding="utf-8")]
    ref = [line.split() for line in open(tgt_path, encoding="utf-8")]
    out = Summarizer.load(ckpt).summarize(src, return_details=True, detokenize=False, beam_size=5)
    failed, correct = [], []
    for o, r in zip(out, ref):
        p = o["summary"].split()
        correct.append(int(p == r))
        if p == r:
            continue
        k = next((t for t in range(min(len(p), len(r))) if p[t] != r[t]), min(len(p), len(r)))
        attn = torch.as_tensor(o["attn"], dtype=torch.float64)  # (T, S)
        row = attn[min(k, attn.size(0) - 1)] if attn.numel() else None  # (S,) at the first difference
        entropy = float(-(row.clamp_min(1e-12).log() * row).sum()) if row is not None else None
        kind = "ends early" if len(p) < len(r) and p == r[:len(p)] else "skips/repeats"
        failed.append((k, len(r), entropy, kind))
    return 1 - len(failed) / len(ref), failed, correct


def reference_check(ckpt, src_path, tgt_path, n=64):
    """For a reinforced checkpoint: the largest difference between the model's teacher-forced pass in
    training mode (the fused paths training uses; dropout and scheduled sampling off) and
    bench/reinforced_step_bench.py's per-step reference on the first `n` test pairs, and the Frobenius
    norms of the effective attention matrices s W^e, s W^d. A difference at rounding level says the
    failures are the model's, not the code's."""
    import importlib.util

    import torch

    from onmt.inputters.dataset import text_batches
    from onmt.translate.session import load_session
    session = load_session(ckpt, torch.device("cpu"))
    model, dec = session.model.train(), session.model.decoder
    model.scheduled_sampling = 0.0
    for m in model.modules():
        if hasattr(m, "p") and isinstance(m.p, float):
            m.p = 0.0   # dropout off: both passes see the same network
    if not hasattr(dec, "enc_attn"):
        return None
    path = os.path.join(ROOT, "bench", "reinforced_step_bench.py")
    spec = importlib.util.spec_from_file_location("_step_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    src = [line.strip() for _, line in zip(range(n), open(src_path, encoding="utf-8"))]
    tgt = [line.strip() for _, line in zip(range(n), open(tgt_path, encoding="utf-8"))]
    batch = next(iter(text_batches(src, tgt, session.vocabs, n)))
    mask = batch.tgt[:, 1:] != 1   # (B, T-1) real target positions (PAD = 1)
    gold = batch.tgt_ex[:, 1:].unsqueeze(-1)  # (B, T-1, 1)
    params = [p for p in model.parameters() if p.requires_grad]

    def nll_and_grads(logp):  # logp (B, T-1, X)
        nll = -(logp.gather(-1, gold).squeeze(-1) * mask).sum()
        return logp.detach(), torch.autograd.grad(nll, params, allow_unused=True)

    fused, g_fused = nll_and_grads(model(batch)[0])   # the fused training paths
    ref, g_ref = nll_and_grads(bench.per_step_forward(model, batch)[0])  # the per-step reference
    diff = (fused - ref).abs().amax(-1)[mask].max()
    pairs = [(a, b) for a, b in zip(g_fused, g_ref) if a is not None and b is not None]
    grad_diff = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in pairs)
    with torch.no_grad():
        enc = dec.enc_attn.weight.norm() * dec.enc_attn.scale
        decn = dec.dec_attn.weight.norm() * dec.dec_attn.scale if dec.dec_attn is not None else None
    return {"max_logp_difference": float(diff), "max_grad_relative_difference": grad_diff, "enc_attn_norm": float(enc),
            "dec_attn_norm": None if decn is None else float(decn)}


def spikes(curve, norms):
    """Training-loss rises (a 10-step xent above 3x the lowest so far, after step 300) and steps whose
    gradient norm is over 10x the run's median."""
    rises, low = 0, float("inf")
    for step, _, xent, _ in curve:
        if step > 300 and xent > 3 * low and xent > 0.05:
            rises += 1
        low = min(low, xent)
    med = statistics.median(norms) if norms else 0.0
    return rises, sum(n > 10 * med for n in norms), med, max(norms, default=0.0)


def one_run(a, arm, seed):
    task, options = ARMS[arm]
    data, prep = prepare(a, task)
    folder = os.path.join(a.workdir, "arms", f"{arm}_s{seed}")
    os.makedirs(folder, exist_ok=True)
    log, norm_file = os.path.join(folder, "train.log"), os.path.join(folder, "norms.txt")
    steps = TASKS[task][2]
    ckpt = os.path.join(folder, f"m_step_{steps}.pt")
    if not os.path.exists(ckpt):
        for stale in os.listdir(folder):   # an interrupted run starts over
            os.remove(os.path.join(folder, stale))
        run([os.path.abspath(__file__), "-train_with_norms", norm_file, "-data", prep, "-save_model",
             os.path.join(folder, "m"), *SIZES, *options, "-seed", str(seed), "-train_steps", str(steps),
             "-valid_steps", str(steps // 4)], log)
    text = open(log, encoding="utf-8").read()
    curve = [(int(m[1]), float(m[2]), float(m[3]), float(m[4]) if m[4] else None)
             for m in map(STEP_LINE.search, text.splitlines()) if m]
    norms = [float(x) for x in open(norm_file)]
    tops = open(norm_file + ".top").read().split("\n") if os.path.exists(norm_file + ".top") else []
    largest = {}   # at steps with a gradient norm over 20: how often each parameter had the largest gradient
    for line in filter(None, tops):
        name = line.split()[2].split("=")[0]
        largest[name] = largest.get(name, 0) + 1
    em, failed, correct = failures(ckpt, f"{data}/test.src.txt", f"{data}/test.tgt.txt")
    rises, norm_spikes, med, top = spikes(curve, norms)
    return {"arm": arm, "task": task, "seed": seed, "options": options, "steps": steps, "exact_match": em,
            "valid_accuracy": [float(x) for x in VALID_ACC.findall(text)], "loss_rises": rises,
            "norm_spikes": norm_spikes, "norm_median": med, "norm_max": top, "curve": curve,
            "grad_norms": norms, "failures": failed, "correct": correct, "largest_gradient_at_spikes": largest,
            "reference": reference_check(ckpt, f"{data}/test.src.txt", f"{data}/test.tgt.txt")}


def add_reference(a, out):
    """A result written before reference_check or the per-pair outcomes existed gets them, from its
    checkpoint when still there."""
    result = json.load(open(out))
    task, steps = result["task"], result["steps"]
    ckpt = os.path.join(a.workdir, "arms", f"{result['arm']}_s{result['seed']}", f"m_step_{steps}.pt")
    has_ref = "max_grad_relative_difference" in (result.get("reference") or {})
    if (has_ref and "correct" in result) or not os.path.exists(ckpt):
        return
    data = os.path.join(a.workdir, task, "data")
    if not has_ref:
        result["reference"] = reference_check(ckpt, f"{data}/test.src.txt", f"{data}/test.tgt.txt")
    if "correct" not in result:
        em, _, result["correct"] = failures(ckpt, f"{data}/test.src.txt", f"{data}/test.tgt.txt")
        assert abs(em - result["exact_match"]) < 1e-9, (out, em, result["exact_match"])
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(out + ".tmp", out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["-train_with_norms"]:
        return _train_with_norms(argv[1], argv[2:])
    a = parse_args(argv)
    os.makedirs(a.results, exist_ok=True)
    arms = [x for x in a.only.split(",") if x] or list(ARMS)
    unknown = [x for x in arms if x not in ARMS]
    if unknown:
        raise SystemExit(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    for seed in [int(s) for s in a.seeds.split(",")]:
        for arm in arms:
            out = os.path.join(a.results, f"{arm}_s{seed}.json")
            if os.path.exists(out):
                add_reference(a, out)
                continue
            if a.backfill:
                continue
            result = one_run(a, arm, seed)
            with open(out + ".tmp", "w") as f:
                json.dump(result, f)
            os.replace(out + ".tmp", out)
            print(f"{arm} seed {seed}: exact match {100 * result['exact_match']:.1f} %, "
                  f"{collapses(result['curve'])} collapsed reports, gradient norm max {result['norm_max']:.0f}",
                  flush=True)
            write_table(a, ARMS)
    write_table(a, ARMS)


if __name__ == "__main__":
    main()
