"""Checkpoints: atomic save, safe load (weights_only), validation against data and options."""
import os
import random
import tempfile

import torch

from onmt.utils.cli import UserError

REQUIRED_KEYS = ("model", "opt", "vocab", "step")


def atomic_torch_save(obj, path):
    """torch.save to a temporary file in the same folder, then rename: never a half-written file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


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


def load_checkpoint(path, device="cpu"):
    """Load a checkpoint without unpickling code; a clear UserError when it is not one of ours."""
    if not os.path.isfile(path):
        raise UserError(f"checkpoint {path} does not exist")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # corrupt, truncated, or carrying pickled code
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"cannot load checkpoint {path}: {first}") from None
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in REQUIRED_KEYS):
        raise UserError(f"{path} is not an onmt-reinforced checkpoint (needs keys {', '.join(REQUIRED_KEYS)})")
    return ckpt


def checkpoint_path(save_model, step):
    return f"{save_model}_step_{step}.pt"


def prune_checkpoints(saved, keep):
    """Delete the oldest of `saved` (paths, oldest first) beyond `keep`; returns the rest. As in
    OpenNMT-py, `keep` <= 0 (or None) keeps every checkpoint: 0 never deletes the one just written."""
    if keep is None or keep <= 0:
        return saved
    while len(saved) > keep:
        old = saved.pop(0)
        if os.path.exists(old):
            os.remove(old)
    return saved
