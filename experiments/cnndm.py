"""The paper's own setting at CPU scale: CNN/DailyMail, each part of the model earning its place.

    python experiments/cnndm.py [-workdir runs/cnndm_small] [-data ../shared/data/cnndm] [-jobs 2]
    python experiments/cnndm.py -report       # the tables again from the JSONs
    ./run.sh cnndm_small                      # the same (variables cnndm_small_data, cnndm_small_jobs)

One command, resumable: every job writes its output atomically and is skipped when that exists, so it
goes on after an interruption, or in a later session on a fresh machine from the committed figures
(a view whose results JSON exists is neither tuned nor trained again). An ML phase whose figures are
committed but whose chosen checkpoint a later arm needs (r_ml on a fresh machine) is trained again to the
committed step, same command and seed, and its committed choice is reused, not tuned again; its view's
regen.json says whether the weights are the committed ones (SHA-256; a CPU with other vector units can
round differently). Up to -jobs one-thread processes.

Sizes, the same for every model (experiments/cnndm_arms.py): the shared 39,160 training pairs, articles
cut to 400 tokens and summaries to 100 (See et al.'s and Paulus et al.'s cuts: 400 / 100 and 800 / 100),
embeddings 128, hidden 256 (a 2 x 128 bidirectional encoder), one layer, batch 50, Adam. One shared
vocabulary, its first 20,000 words for the source and 10,000 for the target (the paper's 150k / 50k would
make the output layer, most of a decoder step at hidden 256, five times slower): the 10k target words
hold 92.6 % of the summaries' tokens and the pointer reaches 5.4 % more (copyable from the article), so
98 % of the reference tokens can be produced. A reinforced ML step takes about 3 CPU seconds here.

Systems, each trained with one thread, budgets in training CPU seconds (validation excluded):
  - lead-3: the first three sentences of the (uncut) article, no training;
  - pg_ml, r_ml, r_noid, r_nota, r_none: ML phases from scratch, early stopping on validation
    perplexity (patience 3, validation every -valid_steps), at most -ml_seconds (90 CPU-minutes) each:
    See et al.'s pointer-generator without coverage; the reinforced model with the family's recipe
    (scheduled sampling 0.25) and its ablations without intra-decoder attention, without intra-temporal
    attention (plain attention over the encoder), without both;
  - pg_cov: See et al.'s coverage phase, from pg_ml's best checkpoint with coverage on (lambda 1, the
    coverage parameters added, the rest keeping its Adam state), -cov_seconds (10 CPU-minutes: their
    3,000 of 230,000 iterations were about 1 %, too few steps at this scale to learn coverage);
  - from the checkpoint the r_ml view's tuning chose, -arm_seconds (30 CPU-minutes) each: a<s> the mixed
    objective (gamma 0.9984, lr 1e-4, fresh Adam), b<s> ML at lr 1e-4 (fresh Adam), m<s> the ML phase's
    own continuation (lr 1e-3, its Adam state), s = -seeds (1, 2); c1 RL alone (gamma 1, lr 1e-4).
Splits: tuning = validation pairs 1 to -tune_pairs (500): early stopping during training, every choice
(checkpoint, length rule, strongest ML control); development = the next -dev_pairs (1,000) of validation (built-in
ROUGE-1.5.5 scorer): figures; test = the 3,000 test pairs, scored once with what tuning chose (ROUGE-1.5.5
itself). Views: each model is a view; onmt_tune_decoding chooses its checkpoint (an ML phase: its best
and its last; a later arm: its checkpoints at 1/3, 2/3, all of its budget) and length rule (wu alpha in
ALPHAS x minimum length in MIN_LENGTHS) by tuning ROUGE-Lsum F1, decoding as each system's authors did
(See et al.: beam 4, no blocking, at most 120 tokens; Paulus et al.: beam 5, no repeated trigram, at
most 100). A reinforced view's test head (-noblock_pairs) is decoded once more without trigram blocking
for its repeated-trigram rate. The report: experiments/cnndm_report.py.
Figures go to experiments/results/cnndm/ (commit them; never the checkpoints under -workdir).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments import cnndm_views as cv  # noqa: E402
from experiments.cnndm_arms import ARMS, SIZES, views  # noqa: E402
from experiments.common import duration, run, run_jobs, start_logged  # noqa: E402
from experiments.rl_vs_ml import latest_checkpoint, read_json, train_seconds, write_json  # noqa: E402

RESULTS = os.path.join(HERE, "results", "cnndm")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "cnndm_small"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "cnndm"),
                   help="{train,valid,test}.{src,tgt}.txt[.gz]")
    p.add_argument("-seeds", default="1,2", help="seeds of the mixed objective and its ML controls")
    p.add_argument("-views", default="", help="only these views (comma-separated; default: all)")
    p.add_argument("-jobs", type=int, default=2, help="one-thread processes side by side")
    p.add_argument("-tune_pairs", type=int, default=500, help="validation's first N pairs tune, the rest score")
    # decoding is half of the experiment's CPU time: 1,000 development pairs (of 3,868) and 500 test pairs
    # again without blocking keep every view's decoding to about 10,000 articles
    p.add_argument("-dev_pairs", type=int, default=1000, help="score at most N development pairs (0: all the rest)")
    p.add_argument("-noblock_pairs", type=int, default=500, help="test pairs decoded again without blocking")
    p.add_argument("-ml_seconds", type=float, default=5400.0)
    p.add_argument("-cov_seconds", type=float, default=600.0)
    p.add_argument("-arm_seconds", type=float, default=1800.0)
    p.add_argument("-valid_steps", type=int, default=200, help="ML phases: validation and checkpoint every N steps")
    p.add_argument("-save_steps", type=int, default=50, help="later arms: a checkpoint every N steps")
    p.add_argument("-vocab", default="20000,10000", help="source,target vocabulary sizes")
    p.add_argument("-trunc", default="400,100", help="article,summary tokens kept")
    p.add_argument("-model_sizes", default="128,256", help="embedding,hidden sizes")
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    p.add_argument("-report", action="store_true", help="only write the report from the results")
    p.add_argument("-poll", type=float, default=5.0, help=argparse.SUPPRESS)
    p.add_argument("-job", default="", help=argparse.SUPPRESS)   # internal: run one job (train:ARM, tune:V, score:V)
    return p.parse_args(argv)


# --------------------------------------------------------------------------- data
def corpus(a, split, side):
    """The shared file of a split and side: .txt.gz as published, else .txt."""
    for name in (f"{split}.{side}.txt.gz", f"{split}.{side}.txt"):
        if os.path.exists(os.path.join(a.data, name)):
            return os.path.join(a.data, name)
    raise SystemExit(f"no {split}.{side}.txt[.gz] in {a.data} (the shared data: ../shared/data/cnndm)")


def splits(a):
    """{"tune", "dev", "test"} -> (src, tgt) plain text in -workdir/data, written once: validation's first
    -tune_pairs pairs, the rest (at most -dev_pairs), the test pairs."""
    from onmt.inputters.corpus import read_lines
    data = os.path.join(a.workdir, "data")
    out = {s: (f"{data}/{s}.src.txt", f"{data}/{s}.tgt.txt") for s in ("tune", "dev", "test")}
    os.makedirs(data, exist_ok=True)
    for i, side in enumerate(("src", "tgt")):
        if os.path.exists(out["test"][i]):
            continue
        lines = list(read_lines(corpus(a, "valid", side)))
        dev = lines[a.tune_pairs:a.tune_pairs + a.dev_pairs] if a.dev_pairs else lines[a.tune_pairs:]
        parts = (("tune", lines[:a.tune_pairs]), ("dev", dev), ("test", read_lines(corpus(a, "test", side))))
        for split, part in parts:
            with open(out[split][i] + ".tmp", "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in part)
            os.replace(out[split][i] + ".tmp", out[split][i])
    return out


def prepare_data(a):
    """The shared training pairs preprocessed once (the tuning pairs validate during training): -data prefix."""
    prep = os.path.join(a.workdir, "prep", "data")
    if os.path.exists(prep + ".meta.json"):
        return prep
    src_vocab, tgt_vocab = a.vocab.split(",")
    src_trunc, tgt_trunc = a.trunc.split(",")
    tune = splits(a)["tune"]
    run(["preprocess.py", "-train_src", corpus(a, "train", "src"), "-train_tgt", corpus(a, "train", "tgt"),
         "-valid_src", tune[0], "-valid_tgt", tune[1], "-save_data", prep, "-share_vocab", "-dynamic_dict",
         "-src_vocab_size", src_vocab, "-tgt_vocab_size", tgt_vocab, "-src_seq_length_trunc", src_trunc,
         "-tgt_seq_length_trunc", tgt_trunc, "-src_seq_length", "100000", "-tgt_seq_length", "100000",
         "-num_threads", "1"], log=os.path.join(a.workdir, "preprocess.log"))
    return prep


# --------------------------------------------------------------------------- arms
def arm_folder(a, name):
    return os.path.join(a.workdir, "arms", name)


def arm_done(a, name):
    return os.path.exists(os.path.join(arm_folder(a, name), "done"))


def budget(a, name):
    return {"ml": a.ml_seconds, "cov": a.cov_seconds, "arm": a.arm_seconds}[ARMS[name].budget]


def start_checkpoint(a, name):
    """The checkpoint arm `name` continues (None: from scratch); pg_ml's best, or what r_ml's tuning chose."""
    start = ARMS[name].start
    if start is None:
        return None
    if start == "r_ml":
        return cv.chosen_model(cv.view_folder(a, start))
    return os.path.join(arm_folder(a, start), "model_best.pt")


def regenerating(a, name):
    """The step to train ML phase `name` to again, when its figures are committed (a fresh machine lacks
    the checkpoint its tuning chose, which later arms continue); None otherwise. The same command with the
    same seed, -train_steps at the chosen checkpoint's step instead of a CPU budget, gives the same weights
    on a CPU like the first one's (regen.json says whether they are)."""
    if ARMS[name].start is not None or not scored(a, name):
        return None
    return int(read_json(os.path.join(a.results, f"{name}.json"))["step"])


def train_command(a, prep, name):
    """train.py's command for arm `name`, resuming its last checkpoint; None when its budget is spent
    (or, regenerating, its step reached)."""
    arm, prefix = ARMS[name], os.path.join(arm_folder(a, name), "model")
    os.makedirs(arm_folder(a, name), exist_ok=True)
    start, last = start_checkpoint(a, name), latest_checkpoint(prefix)
    spent = train_seconds(last) - (train_seconds(start) if start else 0.0) if last else 0.0
    steps = regenerating(a, name)
    if steps is None and spent >= budget(a, name) or steps is not None and last and cv.checkpoint_step(last) >= steps:
        return None
    emb, hidden = a.model_sizes.split(",")
    limit = ["-train_steps", str(steps)] if steps else ["-train_steps", "1000000", "-train_time_limit",
                                                        str(budget(a, name) - spent)]
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *arm.options, "-seed", str(arm.seed), *limit]
    if start is None:        # an ML phase: early stopping on the tuning pairs' perplexity
        sizes = dict(zip(SIZES[::2], SIZES[1::2]), **{"-word_vec_size": emb, "-rnn_size": hidden})
        cmd += [x for kv in sizes.items() for x in kv]
        cmd += ["-valid_steps", str(a.valid_steps), "-save_checkpoint_steps", str(a.valid_steps),
                "-keep_checkpoint", "2", "-early_stopping", "3"]
    else:
        cmd += ["-valid_steps", str(4 * a.save_steps), "-save_checkpoint_steps", str(a.save_steps)]
    if last:
        return cmd + ["-train_from", last]
    return cmd + ["-train_from", start] + (["-reset_optim", "all"] if arm.fresh else []) if start else cmd


def train_arm(a, name):
    prep = prepare_data(a)
    cmd = train_command(a, prep, name)
    if cmd is not None:
        run(cmd, log=os.path.join(arm_folder(a, name), "train.log"))
    if regenerating(a, name) is not None:
        chose_again(a, name)
    open(os.path.join(arm_folder(a, name), "done"), "w").close()


def chose_again(a, name):
    """A regenerated ML phase: its view's chosen.yaml (what its committed tuning chose, with the checkpoint
    trained again) and regen.json (whether the weights are the committed ones, by their SHA-256)."""
    import torch
    import yaml

    from onmt.utils.checkpoint import weights_digest
    from onmt.utils.files import write_text_atomic
    result = read_json(os.path.join(a.results, f"{name}.json"))
    step = result["step"]
    model = os.path.join(arm_folder(a, name), f"model_step_{step}.pt")
    if not os.path.exists(model):
        raise SystemExit(f"{name}: training again to step {step} left no {model}; see its train.log")
    digest = weights_digest(torch.load(model, map_location="cpu", weights_only=True)["model"])
    folder = cv.view_folder(a, name)
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "regen.json"),
               {"step": step, "sha256": digest, "committed_sha256": result.get("weights_sha256"),
                "identical": digest == result.get("weights_sha256")})
    config = dict(result["tuning"]["chosen"], model=os.path.abspath(model))
    write_text_atomic(os.path.join(folder, "chosen.yaml"),
                      yaml.safe_dump(config, default_flow_style=False, sort_keys=False))


# --------------------------------------------------------------------------- jobs
def scored(a, view):
    return os.path.exists(os.path.join(a.results, f"{view}.json"))


def train_needed(a, name, wanted):
    """Whether arm `name` must be trained: not done, and its view not scored or an arm continuing it must
    be trained while the checkpoint it starts from is missing."""
    if arm_done(a, name):
        return False
    if not scored(a, name) and name in wanted:
        return True
    return any(ARMS[c].start == name and train_needed(a, c, wanted) and not start_available(a, c)
               for c in wanted if c in ARMS)


def start_available(a, name):
    try:
        start = start_checkpoint(a, name)
    except FileNotFoundError:
        return False
    return start is None or os.path.exists(start)


def job_list(a, wanted):
    """[(name, needs, command or None when done)] in the order jobs are wanted: each view's training,
    tuning and scoring together, views in `wanted`'s order."""
    me = [sys.executable, os.path.abspath(__file__), *a.argv]
    jobs = []
    for v in wanted:
        if v == "lead3":
            jobs.append(("score:lead3", [], None if scored(a, v) else me + ["-job", "score:lead3"]))
            continue
        start = ARMS[v].start
        # r_ml's chosen checkpoint: tuned after training, or (regenerated) written by its training job
        needs = [] if start is None else [f"train:{start}"] + (["tune:r_ml"] if start == "r_ml" else [])
        jobs.append((f"train:{v}", needs, me + ["-job", f"train:{v}"] if train_needed(a, v, wanted) else None))
        tune = not os.path.exists(os.path.join(cv.view_folder(a, v), "chosen.yaml")) and not scored(a, v)
        jobs.append((f"tune:{v}", [f"train:{v}"], me + ["-job", f"tune:{v}"] if tune else None))
        jobs.append((f"score:{v}", [f"tune:{v}"], None if scored(a, v) else me + ["-job", f"score:{v}"]))
    known = {n for n, _, _ in jobs}
    return [(n, [d for d in needs if d in known], cmd) for n, needs, cmd in jobs]


def schedule(jobs, n_jobs, log, poll=5.0, estimate=None):
    """Run every job not done, up to `n_jobs` at a time, each when what it needs is done; the first
    ready job in list order goes first (experiments/common.py run_jobs: a stop ends every job it started,
    each train.py saving; an ETA per job from `estimate`)."""
    run_jobs(jobs, n_jobs, lambda name, cmd: start_logged(cmd, log), poll=poll, log_hint=f"{log} or its own log",
             estimate=estimate)


def training_left(a, name):
    """CPU seconds of training arm `name` has left: its budget less what its last checkpoint spent (a
    regenerated ML phase: at most its budget). One thread a job: about as many wall seconds."""
    last = latest_checkpoint(os.path.join(arm_folder(a, name), "model"))
    if last is None:
        return budget(a, name)
    start = start_checkpoint(a, name)     # there: the arm trained from it
    spent = train_seconds(last) - (train_seconds(start) if start else 0.0)
    return max(0.0, budget(a, name) - spent)


def plan(a, wanted, jobs):
    """The lines that say, before anything runs, what the run trains, what it skips because its figures are
    committed (in -results), and how long the training left should take."""
    to_run = [n for n, _, cmd in jobs if cmd is not None]
    trains = [n.split(":", 1)[1] for n in to_run if n.startswith("train:")]
    committed = [v for v in wanted if scored(a, v)]
    lines = [f"cnndm_small: figures in {a.results}, checkpoints in {a.workdir}"]
    if committed:
        again = [v for v in trains if v in committed]
        lines.append(f"  skipped, their figures are committed: {', '.join(v for v in committed if v not in again)}"
                     + (f"; trained again to their committed step, a later arm continues them: {', '.join(again)}"
                        if again else "")
                     + " (a fresh -results folder trains everything: cnndm_small_results=DIR ./run.sh cnndm_small)")
    if not to_run:
        lines.append("  nothing to train, tune or score: the tables are written again from the committed figures")
        return lines
    seconds = {v: training_left(a, v) for v in trains}
    if trains:
        lines.append("  to train: " + ", ".join(f"{v} (at most {duration(s)})" for v, s in seconds.items()))
        total, side_by_side = sum(seconds.values()), max(1, min(a.jobs, len(trains)))
        lines.append(f"  training: at most {duration(total)} of CPU time, about {duration(total / side_by_side)} "
                     f"of wall time with -jobs {a.jobs}, plus the decoding of each view's tuning and scoring")
    rest = [n for n in to_run if not n.startswith("train:")]
    if rest:
        lines.append(f"  to tune and score (decoding): {', '.join(rest)}")
    return lines


def wanted_views(a):
    seeds = [s for s in a.seeds.split(",") if s]
    every = views(seeds)
    only = [v for v in a.views.split(",") if v]
    unknown = [v for v in only if v not in every]
    if unknown:
        raise SystemExit(f"-views: unknown {', '.join(unknown)}; known: {', '.join(every)}")
    # what a chosen view continues is wanted too (a1 needs r_ml)
    keep = set(only or every)
    keep |= {ARMS[v].start for v in keep if v != "lead3" and ARMS[v].start}
    return [v for v in every if v in keep]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    a = parse_args(argv)
    a.argv = [x for i, x in enumerate(argv) if x != "-job" and (i == 0 or argv[i - 1] != "-job")]
    from experiments.cnndm_report import write_report
    if a.report:
        return write_report(a.results)
    if a.job:
        what, name = a.job.split(":")
        if what == "train":
            return train_arm(a, name)
        if what == "tune":
            return cv.tune_view(a, name, candidates(a, name))
        return cv.score_view(a, name, splits(a))
    wanted = wanted_views(a)
    jobs = job_list(a, wanted)
    print("\n".join(plan(a, wanted, jobs)), flush=True)
    if any(cmd is not None for _, _, cmd in jobs):
        os.makedirs(a.workdir, exist_ok=True)
        prepare_data(a)
        schedule(jobs, a.jobs, os.path.join(a.workdir, "jobs.log"), a.poll, estimate=lambda name: (
            training_left(a, name.split(":", 1)[1]) if name.startswith("train:") else None))
    write_report(a.results)


def candidates(a, name):
    """The checkpoints a view chooses among: an ML phase's best and last; a later arm's at 1/3, 2/3 and
    all of its budget (experiments/rl_vs_ml_tuned.py's at_fractions)."""
    from experiments.rl_vs_ml_tuned import at_fractions, checkpoints
    prefix = os.path.join(arm_folder(a, name), "model")
    ckpts = checkpoints(prefix)
    start = start_checkpoint(a, name)
    if start is None:
        best = prefix + "_best.pt"
        return [best] + [p for s, p in ckpts[-1:] if s != cv.checkpoint_step(best)]
    offset = train_seconds(start)
    points = [(train_seconds(p) - offset, p) for _, p in ckpts]
    # the last checkpoint, saved once the budget is spent, a step past it, is the "all of it" candidate
    return at_fractions(points, max([budget(a, name)] + [x for x, _ in points]))


if __name__ == "__main__":
    main()
