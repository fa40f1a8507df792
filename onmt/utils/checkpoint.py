"""Checkpoints: atomic save, safe load (weights_only), validation against data and options."""
import glob
import hashlib
import math
import os
import random
import re
import shutil

import torch

from onmt.errors import UserError
from onmt.utils.files import same_file, write_atomic
from onmt.utils.logging import logger
from onmt.utils.release_format import is_release_folder, read_folder

REQUIRED_KEYS = ("model", "opt", "vocab", "step")


def atomic_torch_save(obj, path, what="checkpoint"):
    """torch.save to `path` whole or not at all (files.write_atomic): a failed write (a full disk, a
    read-only folder) leaves no temporary file and is one UserError,
    "checkpoint: cannot write PATH: No space left on device"."""
    write_atomic(path, lambda f: torch.save(obj, f), what, binary=True)


def weights_digest(state):
    """SHA-256 of a model state dict (a checkpoint's "model"): keys sorted, each name, shape,
    dtype and values (floating ones as float64 bytes); equal for equal weights."""
    h = hashlib.sha256()
    for key in sorted(state):
        t = state[key].detach().cpu().contiguous()
        h.update(f"{key}:{tuple(t.shape)}:{t.dtype};".encode())
        h.update((t.double() if t.is_floating_point() else t).numpy().tobytes())
    return h.hexdigest()


def rng_state():
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state):
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_refusal(error):
    """One plain line on why torch.load(weights_only=True) refused a file (a checkpoint, a shard):
    a file of pickled Python objects says which (an OpenNMT-py checkpoint holds its options as an
    argparse.Namespace) and is never loaded, without torch's advice to load it unsafely, its
    terminal escapes or its half sentences; any other error is its first line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if found:
        what = found.group(1)
        what += ": an OpenNMT-py checkpoint?" if what == "argparse.Namespace" else ""
        return f"it holds pickled Python objects ({what}), which are never loaded here"
    if "weights_only" in text or "Weights only load failed" in text:
        operand = re.search(r"Unsupported operand (\d+)", text)
        return ("it is no file torch wrote" if operand else
                "torch's safe loader refused it: it holds more than tensors and plain data")
    if "mmap can only be used" in text:
        return "it is not in torch's zip format (a plain pickle, or torch's legacy format)"
    return text.splitlines()[0] if text else type(error).__name__


def load_checkpoint(path, device="cpu"):
    """Load a checkpoint without unpickling code; a clear UserError when it is not one of ours. A
    folder released by onmt_release_model -format safetensors (utils/release_format.py) is read as
    the checkpoint it holds."""
    if is_release_folder(path):
        ckpt = read_folder(path)
        if any(k not in ckpt for k in REQUIRED_KEYS):
            raise UserError(f"released model {path} is damaged: its config.json lacks "
                            f"{', '.join(k for k in REQUIRED_KEYS if k not in ckpt)}")
        check_contents(ckpt, path)
        return ckpt
    if os.path.isdir(path):
        raise UserError(f"checkpoint {path} is a folder, not a file (nor a released model: "
                        "no config.json)")
    if not os.path.exists(path):
        raise UserError(f"checkpoint {path} does not exist")
    if not os.path.isfile(path):
        raise UserError(f"checkpoint {path} is not a regular file (a FIFO or a device?)")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # corrupt, truncated, or carrying pickled code
        reason = load_refusal(e)
        if reason.startswith("it holds pickled"):    # torch's advice (load it unsafely) is not ours
            raise UserError(f"cannot load checkpoint {path}: {reason}; it is not a checkpoint of "
                            "this toolkit (train one with train.py)") from None
        raise UserError(f"cannot load checkpoint {path}: not a checkpoint or a damaged one "
                        f"({reason})") from None
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in REQUIRED_KEYS):
        raise UserError(f"{path} is not an onmt-reinforced checkpoint "
                        f"(needs keys {', '.join(REQUIRED_KEYS)})")
    check_contents(ckpt, path)
    return ckpt


def check_contents(ckpt, path):
    """UserError naming `path` unless the checkpoint's parts have their types and every weight is
    finite (a NaN model translates every line to nothing, and trains on from nothing)."""
    for key, kind in (("model", dict), ("opt", dict), ("vocab", dict)):
        if not isinstance(ckpt[key], kind):
            raise UserError(f"checkpoint {path} is damaged: its {key} is a "
                            f"{type(ckpt[key]).__name__}, not a {kind.__name__}")
    lacking = [k for k in ("src", "tgt", "shared") if k not in ckpt["vocab"]]
    if lacking:
        raise UserError(f"checkpoint {path} is damaged: its vocab lacks {', '.join(lacking)}")
    _check_counters(ckpt, path)
    _check_resume_state(ckpt, path)
    if "train_model" in ckpt and not isinstance(ckpt["train_model"], dict):
        raise UserError(f"checkpoint {path} is damaged: its train_model is a "
                        f"{type(ckpt['train_model']).__name__}, not a dict")
    weights = list(ckpt["model"].items()) + list(ckpt.get("train_model", {}).items())
    for name, t in weights:
        if not isinstance(t, torch.Tensor):
            raise UserError(f"checkpoint {path} is damaged: weight {name} is a "
                            f"{type(t).__name__}, not a tensor")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise UserError(f"checkpoint {path} has non-finite weights in {name}")


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _rng_ok(state):
    """Whether `state` is an RNG state as `rng_state` saves it (None: none was saved)."""
    if state is None:
        return True
    if not isinstance(state, dict) or not isinstance(state.get("torch"), torch.Tensor) or \
            state["torch"].dtype != torch.uint8:
        return False
    py = state.get("python")
    return isinstance(py, (list, tuple)) and len(py) == 3 and isinstance(py[1], (list, tuple)) and \
        len(py[1]) == 625 and all(_is_int(x) for x in py[1]) and \
        ("cuda" not in state or isinstance(state["cuda"], (list, tuple)))


def _check_resume_state(ckpt, path):
    """What a resume reads besides the counters (RNG states, ranks, the run's checkpoints, the
    early-stopping state), where present: UserError naming the first that is not what training
    saves."""
    es = ckpt.get("early_stopping")
    problems = [
        ("rng", not _rng_ok(ckpt.get("rng")), "an RNG state"),
        ("rng_ranks", not (ckpt.get("rng_ranks") is None
                           or (isinstance(ckpt["rng_ranks"], (list, tuple))
                               and all(map(_rng_ok, ckpt["rng_ranks"])))),
         "a list of RNG states"),
        ("world_size", not (_is_int(ckpt.get("world_size", 1)) and ckpt.get("world_size", 1) >= 1),
         "a positive integer"),
        ("saved_checkpoints", not isinstance(ckpt.get("saved_checkpoints", []), (list, tuple)),
         "a list of paths"),
        ("saved_identities", not isinstance(ckpt.get("saved_identities") or {}, dict), "a dict"),
        ("early_stopping", not (es is None or (
            isinstance(es, dict) and isinstance(es.get("criteria", []), (list, tuple)) and
            isinstance(es.get("best", {}), dict) and
            all(isinstance(v, (int, float)) and not math.isnan(v)
                for v in es.get("best", {}).values()) and
            (es.get("best_step") is None or _is_int(es.get("best_step"))) and
            _is_int(es.get("bad", 0)))),
         "an early-stopping state"),
    ]
    for key, bad, what in problems:
        if bad:
            raise UserError(f"checkpoint {path} is damaged: its {key} is {ckpt.get(key)!r:.60}, "
                            f"not {what}")


def _check_counters(ckpt, path):
    """The training counters a resume reads: `step` a non-negative integer, `data_pos` two of them
    (epoch, batches), `train_seconds` a finite non-negative number; UserError naming the first that
    is not."""
    step, pos, secs = ckpt["step"], ckpt.get("data_pos", (0, 0)), ckpt.get("train_seconds", 0.0)
    if not (_is_int(step) and step >= 0):
        raise UserError(f"checkpoint {path} is damaged: its step is {step!r}, "
                        "not a non-negative integer")
    if not (isinstance(pos, (list, tuple)) and len(pos) == 2
            and all(_is_int(x) and x >= 0 for x in pos)):
        raise UserError(f"checkpoint {path} is damaged: its data_pos is {pos!r}, "
                        "not two non-negative integers (epoch, batches)")
    if not (isinstance(secs, (int, float)) and not isinstance(secs, bool) and math.isfinite(secs)
            and secs >= 0):
        raise UserError(f"checkpoint {path} is damaged: its train_seconds is {secs!r}, "
                        "not a non-negative number")


def checkpoint_path(save_model, step):
    return f"{save_model}_step_{step}.pt"


def saved_steps(save_model):
    """{step: path} of the `{save_model}_step_{N}.pt` files that exist."""
    found = {}
    for path in glob.glob(glob.escape(save_model) + "_step_*.pt"):
        m = re.fullmatch(r"_step_(\d+)\.pt", path[len(save_model):])
        if m:
            found[int(m.group(1))] = path
    return found


def check_no_later_checkpoints(save_model, start_step, resuming):
    """UserError naming -save_model when a run that starts at `start_step` would write over
    checkpoints already under the prefix: step files beyond `start_step` (another run's, or the
    later ones of the run resumed from an earlier step), or, for a fresh run, a best checkpoint."""
    later = sorted((s, p) for s, p in saved_steps(save_model).items() if s > start_step)
    best = best_checkpoint_path(save_model)
    if later or (not resuming and os.path.exists(best)):
        names = (", ".join(os.path.basename(p) for _, p in later[:3])
                 + (" ..." if len(later) > 3 else ""))
        names = names or os.path.basename(best)
        where = f"beyond the resumed step {start_step}" if resuming else "of an earlier run"
        raise UserError(f"-save_model {save_model} already holds {names} {where}: this run would "
                        "overwrite them; give another -save_model (or move those files away)")


def best_checkpoint_path(save_model):
    return f"{save_model}_best.pt"


def link_best(path, best):
    """Make `best` the checkpoint `path`, atomically: a hard link (no copy; it survives the pruning
    of `path`), or a copy where the file system has no links. A reader sees the old or the new
    best."""
    tmp = f"{best}.tmp{os.getpid()}"
    try:
        if os.path.lexists(tmp):
            os.remove(tmp)
        try:
            os.link(path, tmp)
        except OSError:
            shutil.copyfile(path, tmp)
        os.replace(tmp, best)
    except OSError as e:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise UserError(f"checkpoint: cannot write {best}: {e.strerror or e}") from None


def file_identity(path):
    """(device, inode, size) of the file at `path`, or None where there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size)


def prune_checkpoints(saved, keep, identities=None):
    """Delete the oldest of `saved` (paths, oldest first) beyond `keep`; returns the rest. As in
    OpenNMT-py, `keep` <= 0 (or None) keeps every checkpoint: 0 never deletes the one just written.
    With `identities` ({path: file_identity when written}), a file is deleted only while it is still
    the one written (another file since put at that name, or one never recorded, is left alone)."""
    if keep is None or keep <= 0:
        return saved
    while len(saved) > keep:
        old = saved.pop(0)
        if identities is not None and (old not in identities
                                       or file_identity(old) != identities[old]):
            continue
        if os.path.exists(old):
            os.remove(old)
    return saved


def owned_checkpoints(ckpt, save_model, path=None):
    """(paths, {path: identity}) of the step checkpoints recorded in `ckpt` (read from `path`) that
    are provably the resumed run's own, for -keep_checkpoint: recorded by absolute path under
    `save_model` (resolved here) and still the file written (its recorded identity, or the
    checkpoint resumed from itself). A relative path (older checkpoints, another working directory),
    another prefix or a file replaced since is never pruned."""
    mine = os.path.abspath(save_model) + "_step_"
    recorded = {p: tuple(v) for p, v in (ckpt.get("saved_identities") or {}).items()}
    saved, identities = [], {}
    for p in ckpt.get("saved_checkpoints", []):
        if not (isinstance(p, str) and os.path.isabs(p) and p.startswith(mine)):
            continue
        ident = file_identity(p)
        if ident is not None and (recorded.get(p) == ident or (path and same_file(p, path))):
            saved.append(p)
            identities[p] = ident
    return saved, identities


def checkpoint_step(path):
    """The step a checkpoint file holds, or None where it is missing or unreadable."""
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["step"])
    except Exception:   # missing, truncated, not a checkpoint: no step to trust
        return None


def restore_best(save_model, best_step):
    """{save_model}_best.pt as a resumed early-stopping state says: the checkpoint of `best_step`.
    After a kill and a resume it may hold a later, forgotten best, or be missing or damaged: it is
    made that step's checkpoint again where that file exists (a hard link), kept where it already
    holds that step, and otherwise one log line says why it cannot be."""
    if best_step is None:
        return
    best, step_file = best_checkpoint_path(save_model), checkpoint_path(save_model, best_step)
    if os.path.exists(step_file):
        if not (os.path.exists(best) and same_file(step_file, best)):
            link_best(step_file, best)
            logger.info(f"{best} made the checkpoint of the best step {best_step} again "
                        f"({step_file})")
        return
    if checkpoint_step(best) != best_step:
        logger.warning(f"{best} does not hold the best step {best_step} of the resumed run and "
                       f"its checkpoint {step_file} is gone: it is made again at the next new best")
