"""Released models (onmt/bin/release_model.py writes them; utils/checkpoint.py load_checkpoint reads
them like checkpoints):

- `-format pt`: one torch file, a checkpoint without training state (`released`), read with
  weights_only as every checkpoint;
- `-format safetensors`: a folder of `model.safetensors` (the weights, no pickle) and `config.json`
  (`{"format": FORMAT_NAME, "version": 1, "opt", "vocab", "preprocess", "step", "release", "tied"}`:
  the model's options, the vocabularies as lists, the input rules of its preprocessing, the names of
  tied weights, stored once), written in a staging folder beside it and swapped in whole.

A fp16 release holds each floating weight cast to float16; loading casts it back to the model's
float32 (build_model's load_state_dict), so the model decodes the rounded weights in float32.
"""
import json
import os
import shutil
import tempfile

import torch

from onmt.errors import UserError

FORMAT_NAME = "onmt-reinforced release"
WEIGHTS_FILE, CONFIG_FILE, CARD_FILE = "model.safetensors", "config.json", "README.md"
# what a release keeps of its checkpoint: the model and its description, no training state
KEPT_KEYS = ("opt", "vocab", "preprocess", "param_names", "averaged_from")
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16}


def released(ckpt, precision="fp32"):
    """The release of checkpoint `ckpt` (a dict): its model weights (the moving average where it was
    trained with -average_decay: the checkpoint's "model"), floating ones in `precision`, its
    options, vocabulary, preprocessing record and step; no optimizer, RNG, data position, loss
    scale, early-stopping state or list of checkpoints."""
    dtype, cast = PRECISIONS[precision], {}
    model = {}
    for k, t in ckpt["model"].items():   # tied weights (shared embeddings) stay one tensor
        key = _view_key(t)
        if key not in cast:
            cast[key] = (t.to(dtype) if t.is_floating_point() else t).contiguous()
        model[k] = cast[key]
    out = {k: ckpt[k] for k in KEPT_KEYS if k in ckpt}
    out.update(model=model, step=int(ckpt["step"]),
               release={"precision": precision, "source_step": int(ckpt["step"])})
    return out


def _view_key(t):
    """What makes two tensors one: the same storage, offset, shape and strides."""
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)


def untied(model):
    """({name: tensor} with each tensor of tied ones once, {alias: the name kept}): safetensors
    stores no shared memory; the aliases are tied again on reading (`tied_again`)."""
    kept, aliases, first = {}, {}, {}
    for name in sorted(model):
        key = _view_key(model[name])
        if key in first:
            aliases[name] = first[key]
        else:
            first[key] = name
            kept[name] = model[name]
    return kept, aliases


def tied_again(weights, aliases):
    """The model's {name: tensor} of the stored `weights` and their `aliases`."""
    out = dict(weights)
    for alias, name in aliases.items():
        out[alias] = weights[name]
    return out


def safetensors_module(what="-format safetensors"):
    """The safetensors.torch module, or a one-line UserError saying how to install it."""
    try:
        # safetensors is optional (pip install .[release]): only a release folder needs it
        import safetensors.torch
    except ImportError:
        raise UserError(f"{what} needs the safetensors package, which is not installed: "
                        "pip install safetensors (or pip install .[release])") from None
    return safetensors.torch


def is_release_folder(path):
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, CONFIG_FILE))


def config_of(release):
    """The config.json mapping of a release (a dict from `released`)."""
    return {"format": FORMAT_NAME, "version": 1,
            **{k: release[k] for k in ("opt", "vocab", "preprocess", "param_names",
                                       "averaged_from", "step", "release") if k in release}}


def write_folder(release, folder, card=None):
    """Write `release` as a safetensors folder at `folder` (and `card`, README.md text, with it):
    staged beside it, then swapped in, so a reader finds the old folder or the new one whole. An
    existing `folder` must be a release folder (or empty)."""
    st = safetensors_module()
    folder = os.path.normpath(folder)   # "rel/" is the folder rel
    if os.path.exists(folder):
        if not os.path.isdir(folder):
            raise UserError(f"-output {folder} is a file; -format safetensors writes a folder")
        if os.listdir(folder) and not is_release_folder(folder):
            raise UserError(f"-output {folder} is a folder that holds something else than a "
                            "released model: give a new folder")
    parent = os.path.dirname(os.path.abspath(folder))
    try:
        stage = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.", dir=parent)
    except OSError as e:
        raise UserError(f"-output {folder}: cannot write into {parent}: "
                        f"{e.strerror or e}") from None
    old = stage + ".old"
    weights, aliases = untied(release["model"])
    try:
        st.save_file(weights, os.path.join(stage, WEIGHTS_FILE), metadata={"format": FORMAT_NAME})
        with open(os.path.join(stage, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump({**config_of(release), "tied": aliases}, f, indent=1, allow_nan=False)
            f.write("\n")
        if card is not None:
            with open(os.path.join(stage, CARD_FILE), "w", encoding="utf-8") as f:
                f.write(card)
        os.chmod(stage, 0o777 & ~_umask())
        if os.path.exists(folder):
            os.replace(folder, old)
        os.replace(stage, folder)
    except OSError as e:
        if os.path.exists(old) and not os.path.exists(folder):
            os.replace(old, folder)
        raise UserError(f"-output {folder}: cannot write it: {e.strerror or e}") from None
    finally:
        for d in (stage, old):
            shutil.rmtree(d, ignore_errors=True)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_folder(folder):
    """The checkpoint dict (model, opt, vocab, preprocess, step, release) of the release folder
    `folder`; a one-line UserError naming it when a part is missing or damaged."""
    config_path = os.path.join(folder, CONFIG_FILE)
    weights = os.path.join(folder, WEIGHTS_FILE)
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"released model {folder}: cannot read {CONFIG_FILE} ({e})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        found = config.get("format") if isinstance(config, dict) else None
        raise UserError(f"released model {folder}: {CONFIG_FILE} is not an onmt-reinforced "
                        f"release (its format is {found!r})")
    if not os.path.isfile(weights):
        raise UserError(f"released model {folder}: {WEIGHTS_FILE} is missing")
    st = safetensors_module(f"reading the released model {folder}")
    try:
        model = st.load_file(weights, device="cpu")
    except Exception as e:  # a truncated or foreign file: safetensors' own error, in one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise UserError(f"released model {folder}: {WEIGHTS_FILE} is damaged ({first})") from None
    ckpt = {k: v for k, v in config.items() if k not in ("format", "version", "tied")}
    aliases = config.get("tied") or {}
    if not isinstance(aliases, dict) or any(n not in model for n in aliases.values()):
        raise UserError(f"released model {folder}: {CONFIG_FILE}'s tied weights name weights "
                        f"{WEIGHTS_FILE} lacks")
    ckpt["model"] = tied_again(model, aliases)
    return ckpt
