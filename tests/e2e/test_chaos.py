"""Chaos: preprocess, train, the RL phase, translate and evaluate, each interrupted by SIGKILL, SIGTERM,
SIGHUP or ^C at random moments. After each interruption every file the user had is byte-identical or the newer
complete version, every checkpoint loads, and going on from the last checkpoint ends bit for bit where
an uninterrupted run ends. The default suite tries a few moments per command; `-m slow` tries 50+.
"""
import glob
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from helpers.e2e import random_pair_data
from helpers.paths import ROOT
from onmt.utils.checkpoint import load_checkpoint, saved_steps

SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
MODEL = ["-reinforced", "-rnn_size", "16", "-word_vec_size", "8", "-batch_size", "8", "-seed", "4",
         "-valid_steps", "0", "-save_checkpoint_steps", "2", "-report_every", "2", "-max_gen_length", "6"]
STEPS = 16


def _python(script, *args):
    return [sys.executable, os.path.join(ROOT, script), *map(str, args)]


def _interrupt(cmd, delay, signum):
    """Start `cmd`, send `signum` after `delay` seconds (if it still runs); -> its exit status."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signum)
    return proc.wait(timeout=120)


def _interrupt_group(cmd, delay, signum):
    """As _interrupt, the signal sent to the command's whole process group (its spawned ranks too: what
    timeout, Slurm and systemd do); -> (exit status, standard error)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signum)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    return proc.returncode, err


def _run(cmd):
    subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _latest(prefix):
    steps = saved_steps(prefix)
    return steps[max(steps)] if steps else None


def _files(folder):
    """The dataset's files (a stale lock of a killed run aside: the next run takes it over)."""
    return {p: open(p, "rb").read() for p in glob.glob(os.path.join(folder, "*"))
            if os.path.isfile(p) and not p.endswith(".lock")}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Data, and the uninterrupted runs every interrupted one must end equal to."""
    d = tmp_path_factory.mktemp("chaos")
    prefix = random_pair_data(str(d), seed=5, n_examples=48, max_len=8, target=lambda w: w[:3])
    _run(_python("train.py", "-data", prefix, "-save_model", d / "ref", *MODEL, "-train_steps", STEPS))
    _run(_python("train.py", "-data", prefix, "-save_model", d / "refrl", *MODEL, "-train_steps", STEPS + 6,
                 "-rl_gamma", "0.9", "-train_from", d / f"ref_step_{STEPS}.pt"))
    _run(_python("translate.py", "-model", d / f"ref_step_{STEPS}.pt", "-src", d / "src.txt", "-output",
                 d / "ref_pred.txt", "-beam_size", "2", "-max_length", "6"))
    return {"dir": d, "prefix": prefix, "ml": str(d / f"ref_step_{STEPS}.pt"),
            "final_ml": torch.load(d / f"ref_step_{STEPS}.pt", weights_only=True)["model"],
            "final_rl": torch.load(d / f"refrl_step_{STEPS + 6}.pt", weights_only=True)["model"],
            "pred": (d / "ref_pred.txt").read_bytes()}


def _moments(n, seed, longest):
    rng = random.Random(seed)
    return [(rng.uniform(0.3, longest), rng.choice(SIGNALS)) for _ in range(n)]


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _train_until_done(world, prefix, steps, first, more):
    """An interrupted run, then resumes from its latest checkpoint until `steps`; -> the final model."""
    for delay, signum in first:
        latest = _latest(prefix)
        resume = ["-train_from", latest] if latest else more[1]
        _interrupt(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL,
                           "-train_steps", steps, *more[0], *resume), delay, signum)
        for path in glob.glob(glob.escape(prefix) + "_step_*.pt"):
            load_checkpoint(path)                             # every checkpoint loads
    latest = _latest(prefix)
    if latest is None or torch.load(latest, weights_only=True)["step"] < steps:
        resume = ["-train_from", latest] if latest else more[1]
        _run(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL, "-train_steps", steps,
                     *more[0], *resume))
    return torch.load(f"{prefix}_step_{steps}.pt", weights_only=True)["model"]


def _chaos(world, tmp_path, n, seed):
    d = world["dir"]
    # training, interrupted again and again, ends where the uninterrupted run ends
    final = _train_until_done(world, str(tmp_path / "ml"), STEPS, _moments(n, seed, 6.0), ([], []))
    assert _same(final, world["final_ml"])
    # so does the RL phase (from the same ML checkpoint)
    final = _train_until_done(world, str(tmp_path / "rl"), STEPS + 6, _moments(n, seed + 1, 7.0),
                              (["-rl_gamma", "0.9"], ["-train_from", world["ml"]]))
    assert _same(final, world["final_rl"])
    # translation: the output is absent or complete; an earlier output stays as it was until replaced
    out = tmp_path / "pred.txt"
    out.write_bytes(b"an earlier output\n")
    for delay, signum in _moments(n, seed + 2, 4.0):
        _interrupt(_python("translate.py", "-model", world["ml"], "-src", d / "src.txt", "-output", out,
                           "-beam_size", "2", "-max_length", "6"), delay, signum)
        assert out.read_bytes() in (b"an earlier output\n", world["pred"])
    # evaluation's JSON likewise
    js = tmp_path / "scores.json"
    for delay, signum in _moments(n, seed + 3, 3.0):
        _interrupt([sys.executable, "-m", "onmt.bin.evaluate", "-pred", str(d / "ref_pred.txt"),
                    "-ref", str(d / "tgt.txt"), "-json", str(js)], delay, signum)
        assert not js.exists() or js.read_text().rstrip().endswith("}")
    # preprocessing over a dataset: the old one or the new one, never a mix, never neither
    save = tmp_path / "p" / "data"
    base = ["-train_src", d / "src.txt", "-train_tgt", d / "tgt.txt", "-share_vocab", "-dynamic_dict",
            "-src_vocab_size", "30", "-tgt_vocab_size", "20", "-save_data", save]
    _run(_python("preprocess.py", *base, "-tgt_vocab_size", "10"))
    old = _files(save.parent)
    _run(_python("preprocess.py", *base, "-save_data", tmp_path / "q" / "data"))
    new = {p.replace(os.sep + "q" + os.sep, os.sep + "p" + os.sep): b for p, b in _files(tmp_path / "q").items()}
    for delay, signum in _moments(n, seed + 4, 4.0):
        _interrupt(_python("preprocess.py", *base), delay, signum)
        from onmt.inputters.vocab_builder import load_vocabs
        load_vocabs(str(save))   # a reader: it finishes the swap of a run killed inside it
        now = _files(save.parent)
        assert (save.parent / "data.meta.json").exists()
        if now == old:
            continue
        vocab = save.parent / "data.vocab.txt"
        assert vocab.read_bytes() == new[str(vocab)]          # the new dataset, complete
        old = now


def test_chaos_short(world, tmp_path):
    _chaos(world, tmp_path, n=2, seed=11)


@pytest.mark.slow
def test_chaos_many_moments(world, tmp_path):
    _chaos(world, tmp_path, n=12, seed=23)   # 12 moments x 5 commands = 60 interruptions


def _damage_best(path, rng):
    """Delete, truncate or leave {save_model}_best.pt, at random."""
    what = rng.choice(("delete", "truncate", "keep"))
    if what == "delete" and os.path.lexists(path):
        os.remove(path)
    elif what == "truncate" and os.path.exists(path):
        data = open(path, "rb").read()
        os.remove(path)            # a hard link to a step's checkpoint: damage the best file alone
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])


@pytest.mark.parametrize("seed", [31])
def test_the_best_checkpoint_survives_kills_resumes_and_damage(world, tmp_path, seed):
    """Training with validation, killed (SIGKILL, SIGTERM, ^C) at random moments and resumed, its best
    checkpoint deleted or truncated before each resume: at the end {save_model}_best.pt holds the model of the
    best step the early-stopping state records, and that is the uninterrupted run's best step."""
    rng = random.Random(seed)
    valid = ["-valid_steps", "2"]
    ref = str(tmp_path / "ref")
    _run(_python("train.py", "-data", world["prefix"], "-save_model", ref, *MODEL, *valid, "-train_steps", STEPS))
    ref_best = torch.load(f"{ref}_step_{STEPS}.pt", weights_only=True)["early_stopping"]["best_step"]
    prefix = str(tmp_path / "ml")
    for delay, signum in _moments(3, seed, 6.0):
        latest = _latest(prefix)
        _interrupt(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL, *valid,
                           "-train_steps", STEPS, *(["-train_from", latest] if latest else [])), delay, signum)
        if (latest := _latest(prefix)) is None or torch.load(latest, weights_only=True)["step"] < STEPS:
            _damage_best(f"{prefix}_best.pt", rng)      # before the resume that must mend it
    while (latest := _latest(prefix)) is None or torch.load(latest, weights_only=True)["step"] < STEPS:
        _run(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL, *valid,
                     "-train_steps", STEPS, *(["-train_from", latest] if latest else [])))
    final = torch.load(f"{prefix}_step_{STEPS}.pt", weights_only=True)
    best_step = final["early_stopping"]["best_step"]
    assert best_step == ref_best
    assert _same(torch.load(f"{prefix}_best.pt", weights_only=True)["model"],
                 torch.load(f"{prefix}_step_{best_step}.pt", weights_only=True)["model"])


@pytest.mark.slow
def test_chaos_world_size_2_under_group_sigterm(world, tmp_path):
    """train.py -world_size 2 (two spawned ranks), SIGTERM to the whole group at random moments: each stop
    exits 143 with no traceback, and resuming from the last checkpoint ends bit for bit where the
    uninterrupted two-process run ends."""
    two = ["-world_size", "2", "-train_steps", STEPS]
    ref = str(tmp_path / "ref2")
    _run(_python("train.py", "-data", world["prefix"], "-save_model", ref, *MODEL, *two))
    prefix = str(tmp_path / "ml2")
    for delay, _ in _moments(3, 41, 12.0):
        latest = _latest(prefix)
        rc, err = _interrupt_group(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL,
                                           *two, *(["-train_from", latest] if latest else [])), delay, signal.SIGTERM)
        assert rc in (0, 143) and "Traceback" not in err, err[-2000:]
        for path in glob.glob(glob.escape(prefix) + "_step_*.pt"):
            load_checkpoint(path)
    while (latest := _latest(prefix)) is None or torch.load(latest, weights_only=True)["step"] < STEPS:
        _run(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL, *two,
                     *(["-train_from", latest] if latest else [])))
    assert _same(torch.load(f"{prefix}_step_{STEPS}.pt", weights_only=True)["model"],
                 torch.load(f"{ref}_step_{STEPS}.pt", weights_only=True)["model"])


def _hang_up_once_it_logs(cmd, words, log):
    """Start `cmd` in a session of its own, its stderr into `log`; once `words` appear there, SIGHUP to its whole
    group (what a closed terminal or a dropped ssh session sends); -> (exit status, the log's lines)."""
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while proc.poll() is None and words not in open(log).read() and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGHUP)
    rc = proc.wait(timeout=120)
    return rc, open(log).read().strip().splitlines()


def test_sighup_stops_training_as_sigterm_does(world, tmp_path):
    """SIGHUP killed train.py with no save and no word, its lock left behind (50 steps lost): now it ends the
    step, saves, says so in one line and exits 129, the lock removed; the resume ends bit for bit where the
    uninterrupted run ends. translate.py stops in one line too, its output absent or complete."""
    prefix = str(tmp_path / "ml")
    rc, lines = _hang_up_once_it_logs(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL,
                                              "-train_steps", STEPS), f"Step 4/{STEPS}", tmp_path / "train.err")
    assert rc == 129 and "Traceback" not in "\n".join(lines), lines[-5:]
    step = int(lines[-1].split("stopped by SIGHUP at step ")[1].split(";")[0])
    assert lines[-1] == f"train.py: stopped by SIGHUP at step {step}; saved {prefix}_step_{step}.pt"
    assert not os.path.exists(f"{prefix}.lock")
    _run(_python("train.py", "-data", world["prefix"], "-save_model", prefix, *MODEL, "-train_steps", STEPS,
                 "-train_from", f"{prefix}_step_{step}.pt"))
    assert _same(torch.load(f"{prefix}_step_{STEPS}.pt", weights_only=True)["model"], world["final_ml"])
    out = tmp_path / "pred.txt"
    rc, lines = _hang_up_once_it_logs(_python("translate.py", "-model", world["ml"], "-src", world["dir"] / "src.txt",
                                              "-output", out, "-beam_size", "2", "-max_length", "6"),
                                      "Model reinforced", tmp_path / "translate.err")
    assert (rc, lines[-1]) == (129, "translate.py: terminated (SIGHUP)") or (rc == 0 and out.exists()), lines[-3:]
    assert not out.exists() or out.read_bytes() == world["pred"]
