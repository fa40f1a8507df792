"""CNN/DM where ML converges on a CPU, then thousands of RL updates: the paper's claims decided (issue 52).

    python experiments/cnndm_conv.py [-workdir runs/cnndm_conv] [-data ../shared/data/cnndm] [-jobs 2]
    python experiments/cnndm_conv.py -report      # the tables again from the JSONs

The systems, stages and sizes are pre-registered in experiments/cnndm_conv_arms.py. One command,
resumable: every job writes its output atomically and is skipped when that exists; a stage that needs a
decision (the gate, the start) reads it from the JSONs of what came before. Up to -jobs one-thread
processes side by side.

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
from experiments.common import run  # noqa: E402
from experiments.rl_vs_ml import latest_checkpoint, train_seconds  # noqa: E402

RESULTS = os.path.join(HERE, "results", "cnndm_conv")
SPLIT_SPAN = 1500            # validation's first N pairs make up tuning and development
SPLIT_EVERY = 3              # every third of them tunes


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-workdir", default=os.path.join(ROOT, "runs", "cnndm_conv"))
    p.add_argument("-data", default=os.path.join(ROOT, "..", "shared", "data", "cnndm"),
                   help="{train,valid,test}.{src,tgt}.txt[.gz]")
    p.add_argument("-jobs", type=int, default=2, help="one-thread processes side by side")
    p.add_argument("-results", default=RESULTS, help="where the figures go (commit them)")
    p.add_argument("-report", action="store_true", help="only write the report from the results")
    p.add_argument("-poll", type=float, default=5.0, help=argparse.SUPPRESS)
    p.add_argument("-job", default="", help=argparse.SUPPRESS)   # internal: run one job (train:ARM, ...)
    # the sizes of a smoke run (tests/e2e); the experiment itself uses the pre-registered values
    p.add_argument("-scale", type=float, default=1.0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --------------------------------------------------------------------------- data
def corpus(a, split, side):
    """The shared file of a split and side: .txt.gz as published, else .txt."""
    for name in (f"{split}.{side}.txt.gz", f"{split}.{side}.txt"):
        if os.path.exists(os.path.join(a.data, name)):
            return os.path.join(a.data, name)
    raise SystemExit(f"no {split}.{side}.txt[.gz] in {a.data} (the shared data: ../shared/data/cnndm)")


def split_lines(lines, span=SPLIT_SPAN, every=SPLIT_EVERY):
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
        tune, dev = split_lines(read_lines(corpus(a, "valid", side)))
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
    run(["preprocess.py", "-train_src", corpus(a, "train", "src"), "-train_tgt", corpus(a, "train", "tgt"),
         "-valid_src", tune[0], "-valid_tgt", tune[1], "-save_data", prep, "-share_vocab", "-dynamic_dict",
         "-src_vocab_size", P.VOCAB[0], "-tgt_vocab_size", P.VOCAB[1], "-src_seq_length_trunc", P.TRUNC[0],
         "-tgt_seq_length_trunc", P.TRUNC[1], "-src_seq_length", "100000", "-tgt_seq_length", "100000",
         "-num_threads", "1"], log=os.path.join(a.workdir, "preprocess.log"))
    return prep


# --------------------------------------------------------------------------- training
def arm_folder(a, name):
    return os.path.join(a.workdir, "arms", name)


def arm_done(a, name):
    return os.path.exists(os.path.join(arm_folder(a, name), "done"))


def ml_command(a, prep, name):
    """train.py's command for ML phase `name`, resuming its last checkpoint; None once its budget is spent
    or early stopping ended it."""
    arm, prefix = P.ARMS[name], os.path.join(arm_folder(a, name), "model")
    os.makedirs(arm_folder(a, name), exist_ok=True)
    last = latest_checkpoint(prefix)
    spent = train_seconds(last) if last else 0.0
    budget = P.ML_SECONDS * a.scale
    if spent >= budget or last and stopped_early(last):
        return None
    valid = str(max(1, int(P.ML_VALID_STEPS * a.scale)))
    cmd = ["train.py", "-data", prep, "-save_model", prefix, *P.SIZES, *arm.options, "-seed", str(arm.seed),
           "-train_steps", "1000000", "-train_time_limit", str(budget - spent), "-valid_steps", valid,
           "-save_checkpoint_steps", valid, "-keep_checkpoint", "-1", "-early_stopping", str(P.ML_PATIENCE)]
    return cmd + (["-train_from", last] if last else [])


def stopped_early(path):
    """Whether the checkpoint at `path` records that early stopping ended its run."""
    import torch
    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("early_stopping") or {}
    return bool(state.get("stopped")) or state.get("bad", 0) >= P.ML_PATIENCE


def train_arm(a, name):
    prep = prepare_data(a)
    kind = P.ARMS[name].kind
    if kind != "ml":
        raise SystemExit(f"{name}: its stage ({kind}) comes after the ML phases")
    cmd = ml_command(a, prep, name)
    if cmd is not None:
        run(cmd, log=os.path.join(arm_folder(a, name), "train.log"))
    open(os.path.join(arm_folder(a, name), "done"), "w").close()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    a = parse_args(argv)
    if a.job:
        what, name = a.job.split(":")
        return train_arm(a, name)
    os.makedirs(a.workdir, exist_ok=True)
    prepare_data(a)
    from experiments.common import run_jobs, start_logged
    me = [sys.executable, os.path.abspath(__file__), *argv]
    jobs = [(f"train:{n}", [], None if arm_done(a, n) else me + ["-job", f"train:{n}"]) for n in ("ml25", "ml0")]
    run_jobs(jobs, a.jobs, lambda name, cmd: start_logged(cmd, os.path.join(a.workdir, "jobs.log")), poll=a.poll)


if __name__ == "__main__":
    main()
