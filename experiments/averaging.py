"""Checkpoint averaging and a two-seed ensemble against the best single checkpoint (issue 54), on Gigaword.

    python experiments/averaging.py [-workdir runs/averaging] [-seeds 1,2] [-jobs 2]
    python experiments/averaging.py -report      # the table again from the JSONs

One command, resumable (every job writes its output atomically and is skipped when it exists; a later
session goes on from the committed figures and whatever checkpoints survive). Up to -jobs one-thread
processes side by side.

Protocol, fixed before any run (commit of this file):
  - data: experiments/rl_vs_ml.py's (Gigaword train + extra, 25k/10k vocabulary, validation pairs 1-1,000
    for early stopping); splits as experiments/rl_vs_ml_tuned.py's: tuning = validation 1-1,000,
    development = 1,001-4,000, test = Rush et al.'s 1,951 pairs, scored once with what tuning chose.
  - training, per seed s: rl_vs_ml.py's ML recipe (`-reinforced`, embeddings 128, hidden 256) from
    scratch, validation every 500 steps, early stopping on validation perplexity (patience 3), at most
    -ml_seconds CPU seconds, a checkpoint every 250 steps, all kept.
  - views, each one model (or one ensemble) whose length rule (wu alpha x minimum length, widened off an
    edge) onmt_tune_decoding chooses on tuning ROUGE-L (beam 5, at most 30 words):
      best<s>   the run's _best.pt (lowest validation perplexity): what a user keeps;
      avg<s>    onmt_average_models over the last -last checkpoints of the run (upstream's habit: the
                run's end, early stopping's patience included);
      avgb<s>   the same over the -last checkpoints ending at the best step;
      ens       translate.py -model best1 best2 (the ensemble of the two seeds' best checkpoints).
  - comparisons (paired bootstrap on per-example ROUGE-L F1, 1,000 samples; seeds pooled by the two-level
    bootstrap of onmt/evaluation/bootstrap.py): avg<s> - best<s>, avgb<s> - best<s>, ens - best<s>, on
    development and on test. A variant "wins" when its pooled development difference has a 95 % CI above
    0; then it goes into the recipe's docs.
Figures go to experiments/results/averaging/ (commit them; never the checkpoints).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments import rl_vs_ml, rl_vs_ml_tuned  # noqa: E402
from experiments.common import run, run_jobs, start_logged  # noqa: E402

RESULTS = os.path.join(HERE, "results", "averaging")
VIEW_KINDS = ("best", "avg", "avgb")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "averaging"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "gigaword"))
    p.add_argument("-seeds", default="1,2")
    p.add_argument("-last", type=int, default=5, help="checkpoints averaged")
    p.add_argument("-tune_pairs", type=int, default=1000, help="validation's first N pairs tune, the rest score")
    p.add_argument("-jobs", type=int, default=2, help="one-thread processes side by side")
    p.add_argument("-ml_seconds", type=float, default=2700.0)
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    p.add_argument("-report", action="store_true", help="only write the report from the results")
    p.add_argument("-job", default="", help=argparse.SUPPRESS)     # internal: tune:VIEW or score:VIEW
    return p.parse_args(argv)


# --------------------------------------------------------------------------- training
def run_prefix(a, seed):
    return os.path.join(a.workdir, f"s{seed}", "model")


def trained(a, seed):
    return os.path.exists(os.path.join(a.workdir, f"s{seed}", "done"))


def train_command(a, prep, seed):
    """train.py's command for seed `seed`, resuming its last checkpoint."""
    prefix = run_prefix(a, seed)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    last = rl_vs_ml.latest_checkpoint(prefix)
    spent = rl_vs_ml.train_seconds(last) if last else 0.0
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *rl_vs_ml.MODEL, "-seed", str(seed),
           "-train_steps", "100000", "-valid_steps", "500", "-save_checkpoint_steps", "250",
           "-keep_checkpoint", "-1", "-early_stopping", "3", "-train_time_limit", str(max(a.ml_seconds - spent, 1))]
    return cmd + (["-train_from", last] if last else [])


# --------------------------------------------------------------------------- views
def views(seeds):
    return [f"{k}{s}" for s in seeds for k in VIEW_KINDS] + (["ens"] if len(seeds) > 1 else [])


def kind_seed(view):
    """"avgb2" -> ("avgb", "2"); "ens" -> ("ens", "")."""
    kind = view.rstrip("0123456789")
    return kind, view[len(kind):]


def view_needs(view, seeds):
    return [f"train:{s}" for s in (seeds[:2] if view == "ens" else [kind_seed(view)[1]])]


def view_folder(a, view):
    return os.path.join(a.workdir, "views", view)


def averaged_steps(steps, last, best, kind):
    """The `last` saved steps ending at the run's end ("avg") or at its best step ("avgb")."""
    end = max(steps) if kind == "avg" else best
    chosen = [s for s in sorted(steps) if s <= end][-last:]
    if len(chosen) < last:
        raise SystemExit(f"{kind}: only {len(chosen)} checkpoints up to step {end}, {last} wanted")
    return chosen


def view_model(a, view, seeds):
    """The view's model: a checkpoint path, or a list of them (the ensemble); averaged ones written once."""
    import torch

    from onmt.utils.checkpoint import saved_steps
    if view == "ens":
        return [run_prefix(a, s) + "_best.pt" for s in seeds[:2]]
    kind, seed = kind_seed(view)
    best = run_prefix(a, seed) + "_best.pt"
    if kind == "best":
        return best
    out = os.path.join(view_folder(a, view), "averaged.pt")
    if not os.path.exists(out):
        steps = saved_steps(run_prefix(a, seed))
        best_step = int(torch.load(best, map_location="cpu", weights_only=True, mmap=True)["step"])
        chosen = averaged_steps(steps, a.last, best_step, kind)
        os.makedirs(view_folder(a, view), exist_ok=True)
        run(["-m", "onmt.bin.average_models", "-models", *[steps[s] for s in chosen], "-output", out],
            log=os.path.join(view_folder(a, view), "average.log"))
    return out


def tune_view(a, view, seeds):
    folder = view_folder(a, view)
    os.makedirs(folder, exist_ok=True)
    model = view_model(a, view, seeds)
    src, tgt = rl_vs_ml_tuned.splits(a)["tune"]
    models = model if isinstance(model, list) else [model]
    run(["-m", "onmt.bin.tune_decoding", "-model", *models, *(["-ensemble"] if len(models) > 1 else []),
         "-src", src, "-tgt", tgt, "-alpha", *rl_vs_ml_tuned.ALPHAS, "-min_length", *rl_vs_ml_tuned.MIN_LENGTHS,
         "-widen", "-max_alpha", "3", "-max_min_length", "20", *rl_vs_ml_tuned.SEARCH, "-batch_size", "64",
         "-output", f"{folder}/chosen.yaml", "-report", f"{folder}/grid.json"], log=f"{folder}/tune.log")


def score_view(a, view):
    """Development and test predictions with chosen.yaml; the view's figures into -results/VIEW.json."""
    import torch
    folder = view_folder(a, view)
    tuning = rl_vs_ml.read_json(f"{folder}/grid.json")
    chosen = tuning["chosen"]
    models = chosen["model"] if isinstance(chosen["model"], list) else [chosen["model"]]
    steps = [int(torch.load(m, map_location="cpu", weights_only=True, mmap=True)["step"]) for m in models]
    result = {"view": view, "tune_pairs": a.tune_pairs, "steps": steps, "chosen": chosen,
              "tuning_rougeL": tuning["rows"][tuning["best"]]["rouge"]["rougeL"], "edges": tuning["edges"]}
    for split, (src, tgt) in rl_vs_ml_tuned.splits(a).items():
        if split == "tune":
            continue
        pred = f"{folder}/{split}.txt"
        if not os.path.exists(pred):
            run(["translate.py", "-config", f"{folder}/chosen.yaml", "-src", src, "-output", pred,
                 "-batch_size", "64"], log=f"{folder}/{split}.log")
        result[split] = rl_vs_ml_tuned.split_figures(pred, None, src, tgt, official=split == "test")
    rl_vs_ml.write_json(os.path.join(a.results, f"{view}.json"), result)


# --------------------------------------------------------------------------- the schedule
def job_list(a, seeds):
    me = [sys.executable, os.path.abspath(__file__), "-workdir", a.workdir, "-data", a.data, "-seeds", ",".join(seeds),
          "-last", str(a.last), "-results", a.results, "-tune_pairs", str(a.tune_pairs)]
    scored = {v for v in views(seeds) if os.path.exists(os.path.join(a.results, f"{v}.json"))}
    jobs = []
    for s in seeds:
        wanted = [v for v in views(seeds) if f"train:{s}" in view_needs(v, seeds) and v not in scored]
        jobs.append((f"train:{s}", [], None if trained(a, s) or not wanted else "train"))
    for v in views(seeds):
        tuned = v in scored or os.path.exists(os.path.join(view_folder(a, v), "chosen.yaml"))
        jobs.append((f"tune:{v}", view_needs(v, seeds), None if tuned else me + ["-job", f"tune:{v}"]))
        jobs.append((f"score:{v}", [f"tune:{v}"], None if v in scored else me + ["-job", f"score:{v}"]))
    return jobs


def schedule(a, prep, seeds):
    def start(name, cmd):
        if cmd != "train":
            return start_logged(cmd, os.path.join(a.workdir, "jobs.log"))
        seed = name.split(":")[1]
        return run(train_command(a, prep, seed), log=os.path.join(a.workdir, f"s{seed}", "train.log"), wait=False)

    def finished(name):
        if name.startswith("train:"):
            open(os.path.join(a.workdir, f"s{name.split(':')[1]}", "done"), "w").close()

    run_jobs(job_list(a, seeds), a.jobs, start, finished, log_hint=f"{a.workdir}/jobs.log or its log")


def main(argv=None):
    a = parse_args(argv)
    seeds = [s for s in a.seeds.split(",") if s]
    from experiments.averaging_report import write_report
    if a.report:
        return write_report(a.results, seeds)
    if a.job:
        what, view = a.job.split(":")
        return tune_view(a, view, seeds) if what == "tune" else score_view(a, view)
    os.makedirs(a.workdir, exist_ok=True)
    prep = rl_vs_ml.prepare_data(argparse.Namespace(workdir=a.workdir, data=a.data))
    rl_vs_ml_tuned.splits(a)
    schedule(a, prep, seeds)
    write_report(a.results, seeds)


if __name__ == "__main__":
    main()
