"""CNN/DM where ML converges on a CPU, then thousands of RL updates: the paper's claims decided (issue 52).

    python experiments/cnndm_conv.py [-workdir runs/cnndm_conv] [-data ../shared/data/cnndm] [-jobs 2]
    python experiments/cnndm_conv.py -status      # what is done, what runs next, what is left
    python experiments/cnndm_conv.py -report      # the tables again from the JSONs

The systems, stages and sizes are pre-registered in experiments/cnndm_conv_arms.py. One command,
resumable: every job writes its output atomically and is skipped when that exists, and the stages that
need a decision (a gate, the start) read it from the figures of what came before. Up to -jobs one-thread
processes side by side, each job started as soon as what it needs exists.

On a fresh machine (the figures committed, the checkpoints gone) an arm whose training figures are
committed is trained again to its committed step with the same command and seed (the same weights on a
CPU like the first one's: the tuning figures record each checkpoint's SHA-256, and a differing one is
tuned again), and nothing is tuned or scored again whose figures exist.

Splits, so that every split holds CNN articles (the shared validation pairs hold 214 CNN articles, all in
its first 220 lines): of validation's first 1,500 pairs, every third (lines 1, 4, 7, ...) tunes (500: early
stopping during training, every choice) and the other 1,000 are the development pairs (figures); test is
the 3,000 shared test pairs (the first 3,000 of See et al.'s test.bin, 1,067 of them CNN, 36 %; the full
test set is 9.5 % CNN), decoded once with what tuning chose.
Figures go to experiments/results/cnndm_conv/ (commit them; never the checkpoints under -workdir).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from experiments import cnndm_conv_arms as P  # noqa: E402
from experiments import cnndm_conv_stages as st  # noqa: E402
from experiments import cnndm_conv_views as cvv  # noqa: E402
from experiments.cnndm import corpus  # noqa: E402  (the shared file of a split and side, .gz or not)
from experiments.common import run  # noqa: E402

RESULTS = os.path.join(HERE, "results", "cnndm_conv")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "cnndm_conv"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "cnndm"),
                   help="{train,valid,test}.{src,tgt}.txt[.gz]")
    p.add_argument("-jobs", type=int, default=2, help="one-thread processes side by side")
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    p.add_argument("-report", action="store_true", help="only write the report from the results")
    p.add_argument("-status", action="store_true", help="only say what is done and what is left")
    p.add_argument("-poll", type=float, default=5.0, help=argparse.SUPPRESS)
    p.add_argument("-job", default="", help=argparse.SUPPRESS)   # internal: run one job (train:ARM, ...)
    # the sizes of a smoke run (tests/unit/test_experiment_cnndm_conv.py); never for figures
    p.add_argument("-tiny", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.cfg = P.tiny_config() if a.tiny else P.CONFIG
    return a


# --------------------------------------------------------------------------- data
def split_lines(lines, span, every):
    """(tuning, development) of validation's lines: of the first `span`, every `every`-th from the first
    tunes, the others are development."""
    head = list(lines)[:span]
    return ([x for i, x in enumerate(head) if i % every == 0], [x for i, x in enumerate(head) if i % every])


def splits(a):
    """{"tune", "dev", "test"} -> (src, tgt) plain text in -workdir/data, written once."""
    from onmt.inputters.corpus import read_lines
    data = os.path.join(a.workdir, "data")
    out = {s: (f"{data}/{s}.src.txt", f"{data}/{s}.tgt.txt") for s in ("tune", "dev", "test")}
    os.makedirs(data, exist_ok=True)
    for i, side in enumerate(("src", "tgt")):
        if os.path.exists(out["test"][i]):
            continue
        tune, dev = split_lines(read_lines(corpus(a, "valid", side)), a.cfg.split_span, a.cfg.split_every)
        for split, part in (("tune", tune), ("dev", dev), ("test", read_lines(corpus(a, "test", side)))):
            with open(out[split][i] + ".tmp", "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in part)
            os.replace(out[split][i] + ".tmp", out[split][i])
    return out


def prepare_data(a):
    """The shared training pairs preprocessed once (the tuning pairs validate during training): -data prefix."""
    prep = os.path.join(a.workdir, "prep", "data")
    if os.path.exists(prep + ".meta.json"):
        return prep
    tune = splits(a)["tune"]
    c = a.cfg
    run(["preprocess.py", "-train_src", corpus(a, "train", "src"), "-train_tgt", corpus(a, "train", "tgt"),
         "-valid_src", tune[0], "-valid_tgt", tune[1], "-save_data", prep, "-share_vocab", "-dynamic_dict",
         "-src_vocab_size", c.vocab[0], "-tgt_vocab_size", c.vocab[1], "-src_seq_length_trunc", c.trunc[0],
         "-tgt_seq_length_trunc", c.trunc[1], "-src_seq_length", "100000", "-tgt_seq_length", "100000",
         "-num_threads", "1"], log=os.path.join(a.workdir, "preprocess.log"))
    return prep


# --------------------------------------------------------------------------- jobs
def run_job(a, job):
    what, name = job.split(":", 1)
    if what == "train":
        return st.train_arm(a, prepare_data(a), name)
    if what == "tune":
        arm, step = name.rsplit("@", 1)
        return cvv.tune_checkpoint(a, arm, int(step))
    if what == "score":
        return cvv.score_view(a, name, splits(a))
    raise SystemExit(f"unknown job {job}")


def wanted(a):
    """{job: what it needs} of every job known now (later ones appear as decisions are made), in the order
    they go first: the ML phases and gates, their tuning, the later arms, the other tuning, the scoring.
    A job needs checkpoints ("ckpt:ARM@STEP") or a trained arm ("arm:ARM")."""
    jobs = {}
    for name in P.ARMS:
        begin = st.start_of(a, name)
        if begin in ("never", "wait"):
            continue
        if P.ARMS[name].kind == "control" and st.budget_of(a, name) is None:
            continue
        jobs[f"train:{name}"] = [f"ckpt:{begin[0]}@{begin[1]}"] if begin else []
    tunes = []
    for ss in P.SS:                 # the gate's checkpoints and the converged one
        tunes += [st.gate_checkpoint(a, ss, k) for k in range(a.cfg.gate_max + 1)]
    for view in P.VIEWS:
        tunes += st.view_candidates(a, view) or []
    for c in dict.fromkeys(t for t in tunes if t):
        jobs[f"tune:{c[0]}@{c[1]}"] = [f"arm:{c[0]}"]
    for view in P.VIEWS:
        choice = st.view_choice(a, view)
        if choice is not None:
            jobs[f"score:{view}"] = [f"arm:{choice['chosen'][0]}"]
    rank = lambda j: (0 if j.startswith("train:ml") or j.startswith("train:g") else     # noqa: E731
                      1 if j.startswith("tune:ml") or j.startswith("tune:g") else
                      2 if j.startswith("train:") else 3 if j.startswith("tune:") else 4)
    return dict(sorted(jobs.items(), key=lambda kv: rank(kv[0])))


def job_done(a, job):
    what, name = job.split(":", 1)
    if what == "train":
        return st.trained(a, name) or st.train_figures(a, name) is not None
    if what == "tune":
        return st.tuning(a, *name.rsplit("@", 1)) is not None
    return st.figures_of(a, name) is not None


def pending(a):
    """(the jobs that can run now, in order; the jobs known but not done). A job whose figures are
    committed is done, but for a training whose checkpoints a job left to run needs (a fresh machine)."""
    jobs = wanted(a)
    todo = [j for j in jobs if not job_done(a, j)]
    need = {n.split(":", 1)[1].split("@")[0] for j in todo for n in jobs[j]}
    grew = True
    while grew:                     # a training needed again needs what it starts from
        grew = False
        for j, needs in jobs.items():
            if j.startswith("train:") and j[6:] in need and not st.trained(a, j[6:]):
                for n in needs:
                    arm = n.split(":", 1)[1].split("@")[0]
                    if arm not in need:
                        need.add(arm)
                        grew = True
    todo += [j for j in jobs if j.startswith("train:") and j[6:] in need and not st.trained(a, j[6:])
             and j not in todo]
    ready = [j for j in jobs if j in todo and all(have(a, n) for n in jobs[j])]
    return ready, todo


def have(a, need):
    what, name = need.split(":", 1)
    if what == "arm":
        return st.trained(a, name)
    arm, step = name.rsplit("@", 1)
    return st.trained(a, arm) and os.path.exists(st.checkpoint(a, arm, int(step)))


def status(a):
    """What is done, what can run now, what waits: one line each."""
    ready, todo = pending(a)
    done = [j for j in wanted(a) if j not in todo]
    scored = [v for v in P.VIEWS if st.figures_of(a, v) is not None]
    running = [j for j in ready if j.startswith("train:") and os.path.exists(
        os.path.join(st.arm_folder(a, j[6:]), "model.lock"))]
    ready = [j if j not in running else j + " (training now: its lock is held)" for j in ready]
    return "\n".join([f"done: {', '.join(done) or 'nothing'}", f"ready: {', '.join(ready) or 'nothing'}",
                      f"waiting: {', '.join(j for j in todo if j not in ready) or 'nothing'}",
                      f"views scored: {', '.join(scored) or 'none'} of {', '.join(P.VIEWS)}"])


def schedule(a, argv):
    """Run the jobs st.pending() offers, up to -jobs at a time, asking again whenever one ends (a job's
    output can make new jobs ready: a gate, the start, a control's budget)."""
    import subprocess
    import time
    me = [sys.executable, os.path.abspath(__file__), *argv]
    log = open(os.path.join(a.workdir, "jobs.log"), "a")
    running = {}
    try:
        while True:
            ready, left = pending(a)
            for name in ready:
                if len(running) >= a.jobs:
                    break
                if name not in running:
                    running[name] = subprocess.Popen(me + ["-job", name], cwd=ROOT, stdout=log,
                                                     stderr=subprocess.STDOUT)
                    print(f"{time.strftime('%H:%M:%S')} start {name}", flush=True)
            if not running:
                if left or any(st.figures_of(a, v) is None for v in P.VIEWS):
                    raise SystemExit("jobs left that can never start: " + (", ".join(left) or "the views "
                                     + ", ".join(v for v in P.VIEWS if st.figures_of(a, v) is None)))
                return
            time.sleep(a.poll)
            for name, proc in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[name]
                if proc.returncode != 0:
                    raise SystemExit(f"{name} failed ({proc.returncode}); see {log.name} or its own log")
                print(f"{time.strftime('%H:%M:%S')} done {name}", flush=True)
    finally:
        for proc in running.values():      # a stop (^C, SIGTERM, a failure) ends every child it started
            proc.terminate()
        for proc in running.values():
            proc.wait()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    a = parse_args(argv)
    from experiments.cnndm_conv_report import write_report
    if a.report:
        return write_report(a.results)
    if a.job:
        return run_job(a, a.job)
    if a.status:
        st.finalize(a)
        return print(status(a))
    os.makedirs(a.workdir, exist_ok=True)
    prepare_data(a)
    st.finalize(a)
    schedule(a, [x for i, x in enumerate(argv) if x != "-job" and (i == 0 or argv[i - 1] != "-job")])
    write_report(a.results)


if __name__ == "__main__":
    main()
