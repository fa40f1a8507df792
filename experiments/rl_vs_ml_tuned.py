"""The paper's claim with equal decoding, scored once on the standard Gigaword test set.

    python experiments/rl_vs_ml_tuned.py [-workdir runs/rl_vs_ml] [-seeds 1,2,3] [-jobs 2] [-arm_seconds 720]
    python experiments/rl_vs_ml_tuned.py -report      # the tables and the figure again from the JSONs

One command, resumable: every job writes its output atomically and is skipped when that exists, so it
goes on after an interruption (or in a later session, on a fresh machine, from the committed figures
and whatever checkpoints survive). Up to -jobs one-thread processes run side by side.

Protocol, the same for every arm:
  - data and the ML start: experiments/rl_vs_ml.py's (same -workdir: its ML phase is this one's start;
    early stopping on validation pairs 1-1,000).
  - splits: tuning = validation pairs 1-1,000 (the choices), development = 1,001-4,000 (figures),
    test = Rush et al.'s 1,951 pairs (../shared/data/gigaword/test.*), scored once with what tuning chose.
  - arms, from the ML start, -arm_seconds CPU seconds each (validation excluded), a checkpoint every 50
    steps: a<s> the mixed objective (gamma 0.9984, lr 1e-4, fresh Adam), b<s> ML at lr 1e-4 (fresh
    Adam), m<s> the ML phase's own continuation (lr 1e-3, its Adam state); seeds s = -seeds.
  - views (what is tuned and scored): an arm's candidates are its checkpoints at 1/3, 2/3 and all of its
    CPU time; b<s>_steps, the equal-steps control, b<s>'s at 1/3, 2/3 and all of a<s>'s last step;
    ml_best the start alone. onmt_tune_decoding chooses each view's checkpoint and length rule (wu
    alpha in ALPHAS) on tuning ROUGE-L (beam 5, at most 30 words, the model's trigram blocking).
  - scores: development and test with the chosen settings (built-in ROUGE-1.5.5 scorer, official to 4
    decimals; the test set also with the Perl script), per-example ROUGE-L kept for the paired
    bootstrap; each view against the strongest ML control of its seed (the ML view with the highest
    tuning ROUGE-L among b<s>, b<s>_steps, m<s> and, with -variants p / v, p<s> / v<s>), and the gain of a<s> over it by
    source-reference overlap, reference length and copy share (experiments/rl_vs_ml_tuned_report.py).
  - -variants K,...: arms of KINDS beyond the main ones (other rewards, gamma, learning rate, training
    pairs resampled to the test set's overlap), run after the main arms with -variant_seeds.
Figures go to experiments/results/rl_vs_ml_tuned/ (commit them; never the checkpoints).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments import rl_vs_ml  # noqa: E402
from experiments.common import run, run_jobs, start_logged  # noqa: E402
from experiments.rl_vs_ml_tuned_kinds import KINDS, MAIN, MATCHED  # noqa: E402

RESULTS = os.path.join(HERE, "results", "rl_vs_ml_tuned")
ALPHAS = ["0", "0.5", "1", "1.25", "1.5", "1.75", "2"]
# views tuned from now on (issue 52) also tune the minimum length (references: 8.8 words on test), and
# widen an axis whose choice sits at its edge; the committed views were tuned on ALPHAS alone
MIN_LENGTHS = ["0", "4", "8"]
SEARCH = ["-beam_size", "5", "-max_length", "30"]
FRACTIONS = (1 / 3, 2 / 3, 1.0)
OVERLAP_BINS = 10

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "rl_vs_ml"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "gigaword"))
    p.add_argument("-seeds", default="1,2,3")
    p.add_argument("-variants", default="", help="variant kinds of KINDS to run after the main arms (e.g. r,x,l)")
    p.add_argument("-variant_seeds", default="1")
    p.add_argument("-tune_pairs", type=int, default=1000, help="validation's first N pairs tune, the rest score")
    p.add_argument("-jobs", type=int, default=2, help="one-thread processes side by side")
    p.add_argument("-ml_seconds", type=float, default=2700.0)
    p.add_argument("-arm_seconds", type=float, default=720.0)
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    p.add_argument("-report", action="store_true", help="only write the report from the results")
    p.add_argument("-job", default="", help=argparse.SUPPRESS)     # internal: run one job (tune:VIEW, score:VIEW)
    return p.parse_args(argv)


# --------------------------------------------------------------------------- data
def splits(a):
    """{"tune", "dev", "test"} -> (src, tgt) paths: validation's first -tune_pairs pairs and the rest, written
    once into -workdir/data, and the test files of -data."""
    data = os.path.join(a.workdir, "data")
    out = {"tune": (f"{data}/tune.src.txt", f"{data}/tune.tgt.txt"),
           "dev": (f"{data}/dev.src.txt", f"{data}/dev.tgt.txt"),
           "test": (os.path.join(a.data, "test.src.txt"), os.path.join(a.data, "test.tgt.txt"))}
    os.makedirs(data, exist_ok=True)
    for i, side in enumerate(("src", "tgt")):
        if os.path.exists(out["dev"][i]):
            continue
        with open(os.path.join(a.data, f"valid.{side}.txt"), encoding="utf-8") as f:
            lines = f.readlines()
        for split, part in (("tune", lines[:a.tune_pairs]), ("dev", lines[a.tune_pairs:])):
            with open(out[split][i] + ".tmp", "w", encoding="utf-8") as f:
                f.writelines(part)
            os.replace(out[split][i] + ".tmp", out[split][i])
    return out


def matched_weights(train_overlap, test_overlap, bins=OVERLAP_BINS):
    """Per training pair, the probability of keeping it so that the kept pairs' overlap histogram
    (`bins` equal bins of [0, 1]) is the test set's, keeping as many pairs as that allows: in the bin
    where training is scarcest relative to test, every pair is kept."""
    import numpy as np
    edges = np.linspace(0, 1, bins + 1)
    tr = np.clip(np.digitize(train_overlap, edges[1:-1]), 0, bins - 1)         # (n,) bin per pair
    te = np.clip(np.digitize(test_overlap, edges[1:-1]), 0, bins - 1)
    n_tr, n_te = np.bincount(tr, minlength=bins), np.bincount(te, minlength=bins) / len(te)
    share_tr = n_tr / len(tr)
    ok = share_tr > 0
    both = ok & (n_te > 0)
    if not both.any():
        raise ValueError("the training and test overlaps share no bin")
    scale = np.min(share_tr[both] / n_te[both])                                # kept share = scale * test share
    keep = np.where(ok, np.minimum(1.0, scale * n_te / np.where(ok, share_tr, 1)), 0.0)
    return keep[tr]


def oversample_draws(train_overlap, test_overlap, n, seed=1, bins=OVERLAP_BINS):
    """`n` training-pair indices drawn with replacement, each pair with probability proportional to its
    overlap bin's test share over its training share, so that the draws' histogram is the test set's
    (over the bins training has): every pair stays in play, the scarce ones repeated."""
    import numpy as np
    edges = np.linspace(0, 1, bins + 1)
    tr = np.clip(np.digitize(train_overlap, edges[1:-1]), 0, bins - 1)         # (N,) bin per pair
    te = np.clip(np.digitize(test_overlap, edges[1:-1]), 0, bins - 1)
    share_tr = np.bincount(tr, minlength=bins) / len(tr)
    share_te = np.bincount(te, minlength=bins) / len(te)
    if not (share_te[share_tr > 0] > 0).any():
        raise ValueError("the training and test overlaps share no bin")
    p = share_te[tr] / share_tr[tr]                                            # (N,)
    return np.random.default_rng(seed).choice(len(tr), size=n, replace=True, p=p / p.sum())


def matched_data(a, prep, mode="subsample"):
    """The training pairs resampled to the test set's overlap histogram (seed 1): "subsample" keeps each
    pair at most once (`matched_weights`), "oversample" draws as many as training has with replacement
    (`oversample_draws`); preprocessed with the ML start's vocabulary, validation as the ML phase's.
    Returns the -data prefix."""
    import numpy as np

    from onmt.evaluation.breakdown import reference_overlap
    name = "matched" if mode == "subsample" else "oversampled"
    out = os.path.join(a.workdir, f"prep_{name}", "data")
    if os.path.exists(out + ".meta.json"):
        return out
    text = os.path.join(a.workdir, "data")
    read = lambda p: open(p, encoding="utf-8").read().splitlines()  # noqa: E731
    src, tgt = read(f"{text}/train.src.txt"), read(f"{text}/train.tgt.txt")
    train_overlap = [reference_overlap(s, t) for s, t in zip(src, tgt)]
    test_overlap = [reference_overlap(s, t) for s, t in zip(*(read(p) for p in splits(a)["test"]))]
    if mode == "subsample":
        w = matched_weights(train_overlap, test_overlap)
        chosen = np.flatnonzero(np.random.default_rng(1).random(len(w)) < w)     # (kept,)
    else:
        chosen = oversample_draws(train_overlap, test_overlap, len(src))          # (N,) with repeats
    for side, lines in (("src", src), ("tgt", tgt)):
        with open(f"{text}/{name}.{side}.txt", "w", encoding="utf-8") as f:
            f.writelines(lines[i] + "\n" for i in chosen)
    run(["preprocess.py", "-config", "config/gigaword_preprocess.yaml", "-num_threads", "1",
         "-train_src", f"{text}/{name}.src.txt", "-train_tgt", f"{text}/{name}.tgt.txt",
         "-valid_src", f"{text}/valid1k.src.txt", "-valid_tgt", f"{text}/valid1k.tgt.txt", "-save_data", out,
         "-src_vocab", prep + ".vocab.txt", "-src_vocab_size", "25000", "-tgt_vocab_size", "10000"],
        log=os.path.join(a.workdir, f"preprocess_{name}.log"))
    return out


# --------------------------------------------------------------------------- arms and views
def arm_folder(a, name):
    return os.path.join(a.workdir, "arms", name)


def arm_done(a, name):
    return os.path.exists(os.path.join(arm_folder(a, name), "done"))


def arm_command(a, prep, base, name):
    """train.py's command for arm `name` (kind + seed), resuming its last checkpoint; None when done."""
    gamma, lr, fresh, more, _ = KINDS[name[0]]
    prefix = os.path.join(arm_folder(a, name), "model")
    os.makedirs(arm_folder(a, name), exist_ok=True)
    last = rl_vs_ml.latest_checkpoint(prefix)
    spent = rl_vs_ml.train_seconds(last) - rl_vs_ml.train_seconds(base) if last else 0.0
    if arm_done(a, name) or spent >= a.arm_seconds:
        return None
    if name[0] in MATCHED:
        prep = matched_data(a, prep, MATCHED[name[0]])
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *rl_vs_ml.MODEL, "-seed", name[1:],
           "-train_steps", "1000000", "-learning_rate", lr, "-valid_steps", "300", "-save_checkpoint_steps", "50",
           "-train_time_limit", str(a.arm_seconds - spent)]
    cmd += (["-rl_gamma", str(gamma)] if gamma is not None else []) + more
    if last:
        cmd += ["-train_from", last]
    else:
        cmd += ["-train_from", base] + (["-reset_optim", "all"] if fresh else [])
    return cmd


def checkpoints(prefix):
    """[(step, path)] of the checkpoints of `prefix`, by step."""
    from onmt.utils.checkpoint import saved_steps
    return sorted(saved_steps(prefix).items())


def at_fractions(points, total, fractions=FRACTIONS):
    """The candidates: for each fraction f, the last of `points` [(x, item)] (sorted by x) with
    x <= f * total (each once, in order)."""
    out = []
    for f in fractions:
        below = [item for x, item in points if x <= f * total + 1e-9]
        if below and below[-1] not in out:
            out.append(below[-1])
    return out


def view_candidates(a, view, base):
    """The checkpoint paths a view chooses among."""
    if view == "ml_best":
        return [base]
    arm = view.split("_")[0]
    ckpts = checkpoints(os.path.join(arm_folder(a, arm), "model"))
    if view.endswith("_steps"):      # b<s>'s checkpoints at 1/3, 2/3, all of a<s>'s steps since the start
        import torch
        start = int(torch.load(base, map_location="cpu", weights_only=True, mmap=True)["step"])
        a_last = checkpoints(os.path.join(arm_folder(a, "a" + arm[1:]), "model"))[-1][0]
        return at_fractions([(s - start, p) for s, p in ckpts], a_last - start)
    start = rl_vs_ml.train_seconds(base)
    return at_fractions([(rl_vs_ml.train_seconds(p) - start, p) for _, p in ckpts], a.arm_seconds)


def view_folder(a, view):
    return os.path.join(a.workdir, "tuned", view)


# --------------------------------------------------------------------------- jobs
def tune_view(a, view, base):
    """onmt_tune_decoding over the view's candidates x ALPHAS on the tuning split -> chosen.yaml, grid.json."""
    folder = view_folder(a, view)
    os.makedirs(folder, exist_ok=True)
    src, tgt = splits(a)["tune"]
    run(["-m", "onmt.bin.tune_decoding", "-model", *view_candidates(a, view, base), "-src", src, "-tgt", tgt,
         "-alpha", *ALPHAS, "-min_length", *MIN_LENGTHS, "-widen", "-max_alpha", "3", "-max_min_length", "20",
         *SEARCH, "-batch_size", "64",
         "-output", f"{folder}/chosen.yaml",
         "-report", f"{folder}/grid.json"], log=f"{folder}/tune.log")


def score_view(a, view):
    """Development and test predictions with chosen.yaml; the view's figures into -results/VIEW.json."""
    import torch
    folder = view_folder(a, view)
    result = {"view": view, "tune_pairs": a.tune_pairs, "tuning": rl_vs_ml.read_json(f"{folder}/grid.json")}
    chosen = result["tuning"]["chosen"]
    ck = torch.load(chosen["model"], map_location="cpu", weights_only=True)
    result.update(step=int(ck["step"]), train_seconds=float(ck.get("train_seconds", 0.0)))
    for split, (src, tgt) in splits(a).items():
        if split == "tune":
            continue
        pred = f"{folder}/{split}.txt"
        if not os.path.exists(pred):
            run(["translate.py", "-config", f"{folder}/chosen.yaml", "-src", src, "-output", pred,
                 "-batch_size", "64", "-attn_debug", f"{folder}/{split}.npz"], log=f"{folder}/{split}.log")
        result[split] = split_figures(pred, f"{folder}/{split}.npz", src, tgt, official=split == "test")
    rl_vs_ml.write_json(os.path.join(a.results, f"{view}.json"), result)


def split_figures(pred, dump, src, tgt, official=False):
    """ROUGE F1 (built-in; with `official` also ROUGE-1.5.5's own), per-example ROUGE-L F1, diagnostics;
    the copy share from the -attn_debug `dump` (None: no dump, no copy share)."""
    from onmt.evaluation import METRICS, score, summarize
    from onmt.evaluation.diagnostics import summary_diagnostics
    from onmt.translate.records import read_dump
    read = lambda p: open(p, encoding="utf-8").read().splitlines()  # noqa: E731
    preds, srcs, refs = read(pred), read(src), read(tgt)
    scores = score(preds, refs)                                              # (n, 4, 3)
    copied = [list(map(bool, r["copied"])) for r in read_dump(dump)] if dump else None
    out = {"rouge": {m: v["f"] for m, v in summarize(scores).items()},
           "rougeL_f_per_example": [round(float(x), 5) for x in scores[:, METRICS.index("rougeL"), 2]],
           **summary_diagnostics(preds, srcs, refs, copied)}
    if copied is not None:
        out["copy_share_per_example"] = [round(sum(c) / len(c), 4) if c else 0.0 for c in copied]
    if official:
        from onmt.evaluation.official import OfficialUnavailable
        try:
            out["rouge_official"] = {m: v["f"] for m, v in summarize(score(preds, refs, official=True)).items()}
        except OfficialUnavailable as e:
            out["rouge_official"] = str(e)
    return out


def views(seeds, variants=(), variant_seeds=()):
    """Every view, in the order its jobs are wanted (seed by seed, the variants last)."""
    out = ["ml_best"]
    for s in seeds:
        out += [f"a{s}", f"b{s}", f"b{s}_steps", f"m{s}"]
    return out + [f"{k}{s}" for k in variants for s in variant_seeds]


def view_needs(view):
    """The arms that must be trained before the view is tuned."""
    if view == "ml_best":
        return []
    arm = view.split("_")[0]
    return [arm, "a" + arm[1:]] if view.endswith("_steps") else [arm]


def job_list(a, seeds, variants=(), variant_seeds=()):
    """[(name, needs, command or None when done)]: training, tuning and scoring, seed by seed."""
    jobs, me = [], [sys.executable, os.path.abspath(__file__), "-workdir", a.workdir, "-data", a.data,
                    "-arm_seconds", str(a.arm_seconds), "-results", a.results, "-tune_pairs", str(a.tune_pairs)]
    arms = [f"{k}{s}" for s in seeds for k in MAIN] + [f"{k}{s}" for k in variants for s in variant_seeds]
    all_views = views(seeds, variants, variant_seeds)
    scored = {v for v in all_views if os.path.exists(os.path.join(a.results, f"{v}.json"))}
    for arm in arms:
        # an arm whose every view is scored needs no training (a fresh machine has the committed figures,
        # not the checkpoints)
        wanted = [v for v in all_views if arm in view_needs(v) and v not in scored]
        jobs.append((f"train:{arm}", [], None if arm_done(a, arm) or not wanted else "train"))
    for v in all_views:
        tuned = v in scored or os.path.exists(os.path.join(view_folder(a, v), "chosen.yaml"))
        scored_v = v in scored
        jobs.append((f"tune:{v}", [f"train:{n}" for n in view_needs(v)], None if tuned else me + ["-job", f"tune:{v}"]))
        jobs.append((f"score:{v}", [f"tune:{v}"], None if scored_v else me + ["-job", f"score:{v}"]))
    order = {name: i for i, name in enumerate(n for n, _, _ in jobs)}
    # a seed's views right after its arms keep the pipeline full; later seeds' m<s> and the variants last,
    # variant by variant (each one's training, tuning, scoring before the next one's: figures come early)
    def group(job):
        kind = job.split(":")[1][0]
        return list(variants).index(kind) if kind in variants and kind not in MAIN else -1
    return sorted(jobs, key=lambda j: (_place(j[0], int(seeds[0])), group(j[0]), order[j[0]]))


def _place(job, first):
    view = job.split(":")[1]
    if view == "ml_best":
        return 0
    s = int(view.split("_")[0][1:])
    if view[0] not in MAIN:
        return 10_000 + s
    return 1000 + s if view[0] == "m" and s != first else s


def schedule(a, prep, base, seeds, variants=(), variant_seeds=()):
    """Run every job not done, up to -jobs at a time, each when what it needs is done
    (experiments/common.py run_jobs); a trained arm gets its `done` mark."""
    def start(name, cmd):
        if cmd != "train":
            return start_logged(cmd, os.path.join(a.workdir, "jobs.log"))
        arm = name.split(":")[1]
        tcmd = arm_command(a, prep, base, arm)
        return None if tcmd is None else run(tcmd, log=os.path.join(arm_folder(a, arm), "train.log"), wait=False)

    def finished(name):
        if name.startswith("train:"):
            open(os.path.join(arm_folder(a, name.split(":")[1]), "done"), "w").close()

    run_jobs(job_list(a, seeds, variants, variant_seeds), a.jobs, start, finished,
             log_hint=f"{a.workdir}/jobs.log or its log")


def main(argv=None):
    a = parse_args(argv)
    seeds = [s for s in a.seeds.split(",") if s]
    from experiments.rl_vs_ml_tuned_report import write_report
    if a.report:
        return write_report(a.results)
    base = os.path.join(a.workdir, "ml", "model_best.pt")
    if a.job:
        what, view = a.job.split(":")
        return tune_view(a, view, base) if what == "tune" else score_view(a, view)
    rl_vs_ml.RESULTS = a.results
    os.makedirs(a.workdir, exist_ok=True)
    prep = rl_vs_ml.prepare_data(argparse.Namespace(workdir=a.workdir, data=a.data))
    base = rl_vs_ml.ml_phase(argparse.Namespace(workdir=a.workdir, ml_seconds=a.ml_seconds), prep)
    splits(a)
    split_list = lambda x: [v for v in x.split(",") if v]  # noqa: E731
    unknown = [k for k in split_list(a.variants) if k not in KINDS or k in MAIN]
    if unknown:
        raise SystemExit(f"-variants: unknown kind(s) {', '.join(unknown)}; known: {', '.join(set(KINDS) - set(MAIN))}")
    schedule(a, prep, base, seeds, split_list(a.variants), split_list(a.variant_seeds))
    write_report(a.results)


if __name__ == "__main__":
    main()
