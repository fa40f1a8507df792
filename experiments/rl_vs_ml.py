"""Does the mixed objective beat ML? Paulus et al.'s claim tested with an equal-compute ML control.

    python experiments/rl_vs_ml.py [-workdir runs/rl_vs_ml] [-data ../shared/data/gigaword]
        [-ml_seconds 2700] [-arm_seconds 720] [-only a1,b1] [-skip_eval]

One command, resumable: run it again after an interruption (or in a later session) and it goes on
where it stopped. Stages, each skipped when its output exists:
  1. data: the shared Gigaword train + extra for training, valid (4,000) for the final scores and its
     first 1,000 pairs for validation during training; preprocessed with a 25k/10k shared vocabulary.
  2. ML phase: a small `-reinforced` model (embeddings 128, hidden 256; otherwise the paper's recipe)
     trained with ML to convergence: early stopping on validation perplexity (patience 3), at most
     -ml_seconds of training steps; its best checkpoint is the start of every arm.
  3. Arms, from that checkpoint, each for -arm_seconds of training steps (CPU seconds of its process:
     the arms of one pair run side by side with one thread each), learning rate 1e-4, a fresh Adam
     state (the paper's RL phase): a = mixed objective, gamma 0.9984; b = ML continued (the control:
     equal CPU time at its end, equal steps at the checkpoint of a's last step); c = RL only (gamma 1);
     d = gamma 0.9 (the two terms' update norms about equal: measured RL/ML 50-95 at 0.9984); e = gamma
     0.9984 with -rl_normalization tokens; f = gamma 0.99. Seeds 1-3 for a and b.
  4. Scores: beam 5 on the 4,000 validation pairs (trigram blocking, at most 30 words), official
     ROUGE-1.5.5 F1, mean length against the references', repeated trigrams, novel bigrams, copy share,
     and the paired bootstrap (1,000 samples) of each arm against b of its seed (b1 for c and d).
Figures go to experiments/results/rl_vs_ml/ (one JSON per scored model, the table, the curves PNG)
as soon as each is known: commit them; never the checkpoints under -workdir.
"""
import argparse
import json
import math
import os
import re
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments.common import run  # noqa: E402
from experiments.rl_vs_ml_report import CONTROL, write_report  # noqa: E402

RESULTS = os.path.join(HERE, "results", "rl_vs_ml")

# the paper's scheduled sampling given here: the family's recipe dropped it after these arms were trained
MODEL = ["-reinforced", "-word_vec_size", "128", "-rnn_size", "256", "-max_grad_norm", "2", "-max_gen_length", "30",
         "-valid_batch_size", "100", "-valid_rouge", "-report_every", "50", "-scheduled_sampling", "0.25"]
# name -> (seed, -rl_gamma or None for ML, validation every N steps, more options): validations about
# equally spaced in time
ARMS = {"a1": (1, 0.9984, 100, []), "b1": (1, None, 300, []), "a2": (2, 0.9984, 100, []), "b2": (2, None, 300, []),
        "a3": (3, 0.9984, 100, []), "b3": (3, None, 300, []), "c1": (1, 1.0, 100, []), "d1": (1, 0.9, 100, []),
        "e1": (1, 0.9984, 100, ["-rl_normalization", "tokens"]), "f1": (1, 0.99, 100, [])}
PAIRS = [("a1", "b1"), ("a2", "b2"), ("a3", "b3"), ("c1", "d1"), ("e1", "f1")]
# the training CPU seconds: "(step N; training CPU S s)", or "(step N; S s of training)" in older logs
VALID_LINE = re.compile(r"Validation (xent|ROUGE-L F1 \(greedy\)): ([\d.]+).*\(step (\d+); "
                        r"(?:training (?:CPU|wall) (\d+) s|(\d+) s of training)\)")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "rl_vs_ml"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "gigaword"))
    p.add_argument("-ml_seconds", type=float, default=2700.0)
    p.add_argument("-arm_seconds", type=float, default=720.0)
    p.add_argument("-only", default="", help="comma-separated arms to run (default: all)")
    p.add_argument("-skip_eval", action="store_true", help="train only; score later")
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    return p.parse_args(argv)


def latest_checkpoint(prefix):
    from onmt.utils.checkpoint import saved_steps
    steps = saved_steps(prefix)
    return steps[max(steps)] if steps else None


def train_seconds(path):
    return float(torch.load(path, map_location="cpu", weights_only=True).get("train_seconds", 0.0))


# --------------------------------------------------------------------------- stages
def prepare_data(a):
    prep = os.path.join(a.workdir, "prep", "data")
    if os.path.exists(prep + ".meta.json"):
        return prep
    if not os.path.isfile(os.path.join(a.data, "train.src.txt")):
        raise SystemExit(f"no Gigaword data in {a.data} (the shared data: ../shared/data/gigaword)")
    text = os.path.join(a.workdir, "data")
    os.makedirs(text, exist_ok=True)
    for side in ("src", "tgt"):
        with open(os.path.join(text, f"train.{side}.txt"), "wb") as out:
            for split in ("train", "extra"):
                with open(os.path.join(a.data, f"{split}.{side}.txt"), "rb") as f:
                    shutil.copyfileobj(f, out)
        shutil.copyfile(os.path.join(a.data, f"valid.{side}.txt"), os.path.join(text, f"valid.{side}.txt"))
        with open(os.path.join(text, f"valid.{side}.txt"), encoding="utf-8") as f, \
                open(os.path.join(text, f"valid1k.{side}.txt"), "w", encoding="utf-8") as out:
            out.writelines(line for _, line in zip(range(1000), f))
    run(["preprocess.py", "-config", "config/gigaword_preprocess.yaml", "-num_threads", "1",
         "-train_src", f"{text}/train.src.txt", "-train_tgt", f"{text}/train.tgt.txt",
         "-valid_src", f"{text}/valid1k.src.txt", "-valid_tgt", f"{text}/valid1k.tgt.txt",
         "-save_data", prep, "-src_vocab_size", "25000", "-tgt_vocab_size", "10000"],
        log=os.path.join(a.workdir, "preprocess.log"))
    return prep


def ml_phase(a, prep):
    """The converged ML model: its best checkpoint (early stopping on validation perplexity)."""
    folder = os.path.join(a.workdir, "ml")
    prefix, done = os.path.join(folder, "model"), os.path.join(folder, "done.json")
    if os.path.exists(done):
        return prefix + "_best.pt"
    os.makedirs(folder, exist_ok=True)
    last = latest_checkpoint(prefix)
    spent = train_seconds(last) if last else 0.0
    if spent < a.ml_seconds:
        cmd = ["train.py", "-data", prep, "-save_model", prefix, *MODEL, "-seed", "1", "-train_steps", "100000",
               "-valid_steps", "500", "-save_checkpoint_steps", "500", "-keep_checkpoint", "2",
               "-early_stopping", "3", "-train_time_limit", str(a.ml_seconds - spent)]
        run(cmd + (["-train_from", last] if last else []), log=os.path.join(folder, "train.log"))
    best = torch.load(prefix + "_best.pt", map_location="cpu", weights_only=True)
    write_json(done, {"best_step": int(best["step"]), "train_seconds": float(best["train_seconds"]),
                      "early_stopping": best["early_stopping"]})
    write_json(os.path.join(RESULTS, "ml_phase.json"), {"curve": read_curve(os.path.join(folder, "train.log")),
                                                         **read_json(done)})
    return prefix + "_best.pt"


def arm_command(a, prep, base, name):
    seed, gamma, valid_steps, more = ARMS[name]
    folder = os.path.join(a.workdir, "arms", name)
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, "model")
    last = latest_checkpoint(prefix)
    spent = train_seconds(last) - train_seconds(base) if last else 0.0
    if spent >= a.arm_seconds or os.path.exists(os.path.join(folder, "done")):
        return None
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *MODEL, "-seed", str(seed), "-train_steps", "1000000",
           "-learning_rate", "0.0001", "-valid_steps", str(valid_steps), "-save_checkpoint_steps", "50",
           "-train_time_limit", str(a.arm_seconds - spent)]
    cmd += (["-rl_gamma", str(gamma)] if gamma is not None else []) + more
    cmd += ["-train_from", last] if last else ["-train_from", base, "-reset_optim", "all"]
    return cmd, os.path.join(folder, "train.log"), folder


def run_arms(a, prep, base):
    only = set(a.only.split(",")) if a.only else set(ARMS)
    for pair in PAIRS:
        procs = []
        for name in pair:
            if name not in only:
                continue
            job = arm_command(a, prep, base, name)
            if job is not None:
                procs.append((run(job[0], log=job[1], wait=False), job))
        for proc, (cmd, log, folder) in procs:
            if proc.wait() != 0:
                raise SystemExit(f"arm failed ({proc.returncode}); see {log}")
            open(os.path.join(folder, "done"), "w").close()
        if not a.skip_eval:
            score_pair(a, base, [n for n in pair if n in only])


# --------------------------------------------------------------------------- scores
def translate_all(a, jobs):
    """Beam-5 predictions (and -attn_debug dumps) for [(checkpoint, name)], two translations at a time."""
    todo = [(ckpt, os.path.join(a.workdir, "scores", name)) for ckpt, name in jobs
            if not os.path.exists(os.path.join(a.workdir, "scores", name + ".txt"))]
    os.makedirs(os.path.join(a.workdir, "scores"), exist_ok=True)
    for i in range(0, len(todo), 2):
        procs = [(run(["translate.py", "-model", ckpt, "-src", os.path.join(a.workdir, "data", "valid.src.txt"),
                       "-output", out + ".txt", "-beam_size", "5", "-max_length", "30", "-batch_size", "64",
                       "-attn_debug", out + ".npz"], log=out + ".log", wait=False), out) for ckpt, out in todo[i:i + 2]]
        for proc, out in procs:
            if proc.wait() != 0:
                raise SystemExit(f"translation failed; see {out}.log")


def evaluate(a, pred, control_pred=None):
    """Official ROUGE F1 of `pred`; with `control_pred`, the paired bootstrap p-values (built-in scorer,
    equal to the official one to 4 decimals) for pred > control."""
    ref = os.path.join(a.workdir, "data", "valid.tgt.txt")
    js = pred + ".rouge.json"
    if not os.path.exists(js):
        run(["-m", "onmt.bin.evaluate", "-pred", pred, "-ref", ref, "-official", "-json", js])
    out = {"rouge": {k: v["f"] for k, v in read_json(js).items() if isinstance(v, dict) and "f" in v}}
    if control_pred:
        cj = pred[:-4] + ".vs_" + os.path.basename(control_pred)[:-4] + ".json"
        if not os.path.exists(cj):
            run(["-m", "onmt.bin.evaluate", "-pred", pred, control_pred, "-ref", ref, "-bootstrap", "1000",
                 "-json", cj])
        out["paired"] = read_json(cj)["paired"]
    return out


def diagnostics(a, pred, dump):
    from onmt.evaluation.diagnostics import summary_diagnostics
    from onmt.translate.records import read_dump
    read = lambda p: open(p, encoding="utf-8").read().splitlines()  # noqa: E731
    preds = read(pred)
    src = read(os.path.join(a.workdir, "data", "valid.src.txt"))
    ref = read(os.path.join(a.workdir, "data", "valid.tgt.txt"))
    copied = [list(r["copied"]) for r in read_dump(dump)]
    return summary_diagnostics(preds, src, ref, copied)


def score_model(a, ckpt, name, control=None):
    pred = os.path.join(a.workdir, "scores", name + ".txt")
    control_pred = os.path.join(a.workdir, "scores", control + ".txt") if control else None
    ck = torch.load(ckpt, map_location="cpu", weights_only=True)
    result = {"name": name, "step": int(ck["step"]), "train_seconds": float(ck["train_seconds"]),
              **evaluate(a, pred, control_pred), **diagnostics(a, pred, pred[:-4] + ".npz")}
    write_json(os.path.join(RESULTS, f"{name}.json"), result)
    return result


def equal_step_checkpoint(a, name, step):
    """The control's checkpoint at the last step <= `step` (checkpoints every 50 steps)."""
    from onmt.utils.checkpoint import saved_steps
    folder = os.path.join(a.workdir, "arms", CONTROL[name])
    equal = max((s for s in saved_steps(f"{folder}/model") if s <= step), default=None)
    return (f"{folder}/model_step_{equal}.pt", f"{CONTROL[name]}_steps{equal}") if equal is not None else None


def score_pair(a, base, names):
    """Scores of the arms `names` (controls first), of the ML start and of the equal-step controls."""
    finals = {n: latest_checkpoint(os.path.join(a.workdir, "arms", n, "model")) for n in names}
    jobs = [(base, "ml_best")] + [(finals[n], n) for n in sorted(names, key=lambda n: n[0] != "b")]
    equal = {n: equal_step_checkpoint(a, n, int(re.search(r"_step_(\d+)", finals[n]).group(1)))
             for n in names if n.startswith("a")}
    jobs += [j for j in equal.values() if j is not None]
    translate_all(a, jobs)
    if not os.path.exists(os.path.join(RESULTS, "ml_best.json")):
        score_model(a, base, "ml_best")
    for n in sorted(names, key=lambda n: n[0] != "b"):
        control = CONTROL.get(n)
        if control and not os.path.exists(os.path.join(a.workdir, "scores", control + ".txt")):
            raise SystemExit(f"score {control} before {n}")
        result = score_model(a, finals[n], n, control)
        result["curve"] = read_curve(os.path.join(a.workdir, "arms", n, "train.log"), offset=train_seconds(base))
        if equal.get(n):
            eq = score_model(a, *equal[n])
            result["control_equal_steps"] = eq["name"]
            result["paired_equal_steps"] = evaluate(a, os.path.join(a.workdir, "scores", n + ".txt"),
                                                    os.path.join(a.workdir, "scores", eq["name"] + ".txt"))["paired"]
        write_json(os.path.join(RESULTS, f"{n}.json"), result)
    write_report(RESULTS)


def read_curve(log, offset=0.0):
    """[(seconds of training since `offset`, step, validation ppl, greedy ROUGE-L)] from a train.log."""
    points = {}
    if not os.path.exists(log):
        return []
    for line in open(log, encoding="utf-8"):
        m = VALID_LINE.search(line)
        if m:
            what, value, step, secs, old_secs = m.groups()
            secs = secs or old_secs
            p = points.setdefault(int(step), {"step": int(step), "seconds": float(secs) - offset})
            if what == "xent":
                p["ppl"] = round(math.exp(float(value)), 3)
            else:
                p["rougeL"] = float(value)
    return sorted(points.values(), key=lambda p: p["step"])


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    global RESULTS
    a = parse_args(argv)
    RESULTS = a.results
    os.makedirs(a.workdir, exist_ok=True)
    prep = prepare_data(a)
    base = ml_phase(a, prep)
    run_arms(a, prep, base)


if __name__ == "__main__":
    main()
