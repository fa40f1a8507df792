"""experiments/cnndm_conv.py's stages: what each arm trains from, the gate, the start, which jobs are ready.

Files (W = -workdir, R = -results):
  W/arms/ARM/model_step_N.pt, done        an arm's checkpoints, and its training finished here
  R/train/ARM.json                        its training figures: last step, best step, CPU seconds, curve
  R/tuning/ARM@STEP.json                  one checkpoint tuned (onmt_tune_decoding -widen -match_output)
  R/gate_SS.json, R/start_decision.json   the decisions, written as soon as their inputs exist
  R/VIEW.json                             a view scored (experiments/cnndm_conv_views.py)
"""
import os

from experiments import cnndm_conv_arms as P
from experiments.cnndm_views import checkpoint_step
from experiments.rl_vs_ml import read_json, write_json


# --------------------------------------------------------------------------- paths and figures
def arm_folder(a, name):
    return os.path.join(a.workdir, "arms", name)


def prefix(a, name):
    return os.path.join(arm_folder(a, name), "model")


def checkpoint(a, arm, step):
    return f"{prefix(a, arm)}_step_{step}.pt"


def trained(a, name):
    return os.path.exists(os.path.join(arm_folder(a, name), "done"))


def figures_of(a, what):
    """The JSON R/`what`.json, or None."""
    path = os.path.join(a.results, f"{what}.json")
    return read_json(path) if os.path.exists(path) else None


def train_figures(a, name):
    return figures_of(a, f"train/{name}")


def tuning(a, arm, step):
    return figures_of(a, f"tuning/{arm}@{step}")


def ss_of(name):
    """The scheduled-sampling key of an ML phase or gate ("0", "25")."""
    return name[2:] if name.startswith("ml") else name[1:].split("_")[0]


# --------------------------------------------------------------------------- decisions
def gate_decision(ml_score, gate_scores, gate_max=3, delta=P.GATE_DELTA):
    """The gate on planted or real tuning R-Lsum: `ml_score` of the ML phase's best, `gate_scores[k-1]`
    of gate k's end (those known so far). Returns {"passed": bool or None (undecided: the next gate is
    needed), "gates": how many ran, "converged": 0 (the ML best) or k (gate k's end)}. Gate k passes
    when its end gains less than `delta` over its start."""
    before = ml_score
    for k, score in enumerate(gate_scores, 1):
        if score - before < delta:
            return {"passed": True, "gates": k, "converged": k - 1}
        before = score
        if k == gate_max:
            return {"passed": False, "gates": k, "converged": k}
    return {"passed": None, "gates": len(gate_scores), "converged": None}


def stage_score(a, arm, step):
    t = tuning(a, arm, step)
    return None if t is None else t["rouge"][P.METRIC]


def gate_checkpoint(a, ss, k):
    """(arm, step) of gate k's end of setting ss (k = 0: the ML phase's best); None before it is known."""
    if k == 0:
        f = train_figures(a, f"ml{ss}")
        return None if f is None else (f"ml{ss}", f["best_step"])
    f = train_figures(a, f"g{ss}_{k}")
    return None if f is None else (f"g{ss}_{k}", f["step"])


def gate(a, ss):
    """The gate of setting ss so far (gate_decision), written to R/gate_SS.json once decided."""
    done = figures_of(a, f"gate_{ss}")
    if done is not None:
        return done
    scores, ml = [], gate_checkpoint(a, ss, 0)
    if ml is None or stage_score(a, *ml) is None:
        return {"passed": None, "gates": 0, "converged": None, "waiting": ml}
    for k in range(1, a.cfg.gate_max + 1):
        end = gate_checkpoint(a, ss, k)
        if end is None or stage_score(a, *end) is None:
            break
        scores.append(stage_score(a, *end))
    d = gate_decision(stage_score(a, *ml), scores, a.cfg.gate_max)
    if d["passed"] is not None:
        d.update(ml=stage_score(a, *ml), scores=scores, delta=P.GATE_DELTA,
                 checkpoint=list(gate_checkpoint(a, ss, d["converged"])))
        write_json(os.path.join(a.results, f"gate_{ss}.json"), d)
    return d


def view_candidates(a, view):
    """[(arm, step)] a view chooses among, or None while one of them is not yet known."""
    if view.startswith("ml"):
        ss = view[2:]
        f, g = train_figures(a, view), gate(a, ss)
        if f is None or g["passed"] is None:
            return None
        last_gate = gate_checkpoint(a, ss, g["gates"])
        steps = f["steps"]
        last = f["step"] if f["step"] != f["best_step"] else max([s for s in steps if s < f["step"]] or [f["step"]])
        return list(dict.fromkeys([(view, f["best_step"]), (view, last), tuple(last_gate)]))
    if view == "start":
        s = start(a)
        return None if s is None else [tuple(s["checkpoint"])]
    f, s = train_figures(a, view), start(a)
    if f is None or s is None:
        return None
    total = f["budget"]
    points = [(x, step) for step, x in sorted(f["progress"].items(), key=lambda kv: int(kv[0]))]
    out = []
    for frac in (1 / 3, 2 / 3, 1.0):
        below = [int(step) for x, step in points if x <= frac * total + 1e-9]
        if below and (view, below[-1]) not in out:
            out.append((view, below[-1]))
    return out


def view_choice(a, view):
    """The candidate of highest tuned tuning R-Lsum (ties: the earlier) and its tuning, or None."""
    cands = view_candidates(a, view)
    if cands is None or any(tuning(a, *c) is None for c in cands):
        return None
    scores = [stage_score(a, *c) for c in cands]
    best = max(range(len(cands)), key=lambda i: (scores[i], -i))
    return {"candidates": [list(c) for c in cands], "scores": scores, "chosen": list(cands[best]),
            "tuning": tuning(a, *cands[best])}


def start(a):
    """The start of the later arms: of the two converged checkpoints, the one of higher tuned tuning
    R-Lsum (ties: the paper's 0.25); written to R/start.json once both are known."""
    done = figures_of(a, "start_decision")
    if done is not None:
        return done
    gates = {ss: gate(a, ss) for ss in P.SS}
    if any(g["passed"] is None for g in gates.values()):
        return None
    scores = {ss: stage_score(a, *g["checkpoint"]) for ss, g in gates.items()}
    if any(v is None for v in scores.values()):
        return None
    ss = max(("25", "0"), key=lambda k: scores[k])
    s = {"ss": ss, "checkpoint": gates[ss]["checkpoint"], "scores": scores, "converged": gates[ss]["passed"]}
    write_json(os.path.join(a.results, "start_decision.json"), s)
    return s


# --------------------------------------------------------------------------- training
def start_of(a, name):
    """(arm, step) of the checkpoint arm `name` continues (None: from scratch; "wait": not yet known)."""
    arm = P.ARMS[name]
    if arm.kind == "ml":
        return None
    if arm.kind == "gate":
        ss, k = ss_of(name), int(name.split("_")[1])
        if k == 1:
            return gate_checkpoint(a, ss, 0) or "wait"
        g = gate(a, ss)
        if g["passed"] is not None:         # decided: gate k ran only if the decision came after it
            return gate_checkpoint(a, ss, k - 1) if g["gates"] >= k else "never"
        return gate_checkpoint(a, ss, k - 1) if g["gates"] >= k - 1 else "wait"
    s = start(a)
    return "wait" if s is None else tuple(s["checkpoint"])


def budget_of(a, name):
    """What ends arm `name`: ("seconds", S) of training CPU beyond its start, or ("updates", N)."""
    arm = P.ARMS[name]
    if arm.kind == "ml":
        return "seconds", a.cfg.ml_seconds
    if arm.kind == "gate":
        return "seconds", a.cfg.gate_seconds
    if arm.kind in ("mixed", "rl"):
        return "updates", a.cfg.rl_updates
    f = train_figures(a, f"a{arm.seed}")
    return ("seconds", f["spent"]) if f else None


def train_command(a, prep, name):
    """train.py's command for arm `name` (resuming its last checkpoint), or None when it has nothing left.
    With its training figures committed (a fresh machine), the same command to the committed step."""
    from experiments.rl_vs_ml import latest_checkpoint, train_seconds
    arm, c = P.ARMS[name], a.cfg
    os.makedirs(arm_folder(a, name), exist_ok=True)
    begin = start_of(a, name)
    last = latest_checkpoint(prefix(a, name))
    done_before = train_figures(a, name)
    origin = checkpoint(a, *begin) if begin else None
    cmd = ["train.py", "-data", prep, "-save_model", prefix(a, name), "-seed", str(arm.seed)]
    if arm.kind == "ml":            # validation and a checkpoint every ml_valid_steps, early stopping
        every = str(c.ml_valid_steps)
        cmd += [*c.sizes, *arm.options, "-valid_steps", every, "-save_checkpoint_steps", every,
                "-early_stopping", str(c.ml_patience)]
    else:                           # from a checkpoint: its model carries; no early stopping
        cmd += [*arm.options, "-max_gen_length", c.rl_max_gen, "-early_stopping", "0",
                "-valid_steps", str(c.valid_steps), "-save_checkpoint_steps", str(c.save_steps)]
    cmd += ["-keep_checkpoint", "-1"]
    start_step = checkpoint_step(origin) if origin else 0
    if done_before is not None:
        if last and checkpoint_step(last) >= done_before["step"]:
            return None
        limit = ["-train_steps", str(done_before["step"])]
    else:
        kind, amount = budget_of(a, name)
        spent = train_seconds(last) - (train_seconds(origin) if origin else 0.0) if last else 0.0
        if kind == "updates":
            if last and checkpoint_step(last) >= start_step + amount:
                return None
            limit = ["-train_steps", str(start_step + int(amount))]
        else:
            if spent >= amount or (arm.kind == "ml" and last and stopped_early(a, last)):
                return None
            limit = ["-train_steps", "1000000", "-train_time_limit", str(amount - spent)]
    cmd += limit
    if last:
        return cmd + ["-train_from", last]
    return cmd + (["-train_from", origin] + (["-reset_optim", "all"] if arm.fresh else []) if origin else [])


def stopped_early(a, path):
    """Whether the checkpoint at `path` records that early stopping ended its run."""
    import torch
    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("early_stopping") or {}
    return int(state.get("bad", 0)) >= a.cfg.ml_patience


def train_arm(a, prep, name):
    """Train arm `name` (or go on), then write its training figures (once)."""
    from experiments.common import run
    if start_of(a, name) in ("wait", "never"):
        raise SystemExit(f"{name}: what it starts from is not known yet")
    cmd = train_command(a, prep, name)
    if cmd is not None:
        run(cmd, log=os.path.join(arm_folder(a, name), "train.log"))
    if train_figures(a, name) is None:
        write_json(os.path.join(a.results, "train", f"{name}.json"), training_figures(a, name))
    open(os.path.join(arm_folder(a, name), "done"), "w").close()


def training_figures(a, name):
    """An arm's training figures: steps saved, the last and best step, CPU seconds (since its start), its
    budget, the curve of validation perplexity (from its log), and per saved step the progress through its
    budget (seconds or updates since the start) that chooses its candidates."""
    import torch

    from experiments.rl_vs_ml import read_curve, train_seconds
    from onmt.utils.checkpoint import saved_steps
    steps = sorted(saved_steps(prefix(a, name)))
    if not steps:
        raise SystemExit(f"{name}: training left no checkpoint; see {arm_folder(a, name)}/train.log")
    last = checkpoint(a, name, steps[-1])
    ck = torch.load(last, map_location="cpu", weights_only=True, mmap=True)
    begin = start_of(a, name)
    origin = checkpoint(a, *begin) if begin else None
    s0 = train_seconds(origin) if origin else 0.0
    step0 = checkpoint_step(origin) if origin else 0
    kind, amount = budget_of(a, name)
    progress = {str(s): (train_seconds(checkpoint(a, name, s)) - s0 if kind == "seconds" else s - step0)
                for s in steps}
    best = (ck.get("early_stopping") or {}).get("best_step") or steps[-1]
    from onmt.utils.checkpoint import weights_digest
    return {"arm": name, "start": list(begin) if begin else None, "steps": steps, "step": steps[-1],
            "best_step": int(best) if int(best) in steps else steps[-1], "spent": float(ck["train_seconds"]) - s0,
            "budget": amount, "budget_kind": kind, "progress": progress, "weights_sha256": weights_digest(ck["model"]),
            "curve": read_curve(os.path.join(arm_folder(a, name), "train.log"))}


def finalize(a):
    """Training figures for every arm trained here that lacks them (an arm trained by an earlier version
    of this script, which wrote only its `done`)."""
    for name in P.ARMS:
        if trained(a, name) and train_figures(a, name) is None:
            write_json(os.path.join(a.results, "train", f"{name}.json"), training_figures(a, name))
