"""Shard files: a dict of flat tensors + offsets, written atomically, loadable with
weights_only=True.

A shard holds n examples:
  src (int32) + src_offsets (int64, n+1)          source-vocabulary ids
  tgt (int32) + tgt_offsets (int64, n+1)          target ids, `<s> ... </s>`
  src_ex, tgt_ex (int32, same offsets)            only with -dynamic_dict
  oov_offsets (int64, n+1)                        OOV words per example      (-dynamic_dict)
  oov_bytes (uint8) + oov_byte_offsets (int64, n+1)   the OOV words, UTF-8, each followed by "\n"
                                                  (decode with numericalize.oov_lists)
  indices (int64, n)                              line number (0-based) of each example in its
                                                  corpus
  run_id (uint8, 16)                              the preprocessing run (meta.json "run_id") that
                                                  wrote it
"""
import os

import numpy as np
import torch

from onmt.errors import UserError
from onmt.utils.checkpoint import load_refusal
from onmt.utils.files import write_atomic

_INT32 = ("src", "tgt", "src_ex", "tgt_ex")
_INT64 = ("src_offsets", "tgt_offsets", "oov_offsets", "oov_byte_offsets", "indices")


def shard_name(save_data, split, n):
    return f"{save_data}.{split}.{n}.pt"


def concat_chunks(chunks):
    """Join numericalized chunks (dicts of flat arrays + offsets, see numericalize.py) into one.

    The chunks are emptied field by field as they are joined, so the peak memory is the chunks
    plus one joined field, not twice the shard.
    """
    out = {}
    for k in list(chunks[0].keys()):
        parts = [c.pop(k) for c in chunks]
        if k.endswith("_offsets"):
            shifts = np.cumsum([0] + [int(p[-1]) for p in parts[:-1]])
            out[k] = np.concatenate([parts[0][:1]] + [p[1:] + s for p, s in zip(parts, shifts)])
        else:
            out[k] = np.concatenate(parts)
        del parts
    return out


def to_tensors(arrays):
    """numpy arrays -> the tensors stored in a shard (dtypes fixed: int32 ids, int64 offsets)."""
    out = {}
    for k, v in arrays.items():
        if k in _INT32:
            out[k] = torch.from_numpy(np.ascontiguousarray(v, dtype=np.int32))
        elif k in _INT64:
            out[k] = torch.from_numpy(np.ascontiguousarray(v, dtype=np.int64))
        elif k == "oov_bytes":
            out[k] = torch.from_numpy(np.ascontiguousarray(v, dtype=np.uint8))
        else:
            raise ValueError(f"unexpected shard field {k!r}")
    return out


def run_id_tensor(run_id):
    """meta.json's "run_id" (32 hex digits) as the (16,) uint8 tensor a shard stores."""
    return torch.tensor(list(bytes.fromhex(run_id)), dtype=torch.uint8)


def write_shard(path, arrays, run_id=None):
    """torch.save to `path` whole or not at all (files.write_atomic): never a partial final file.
    `run_id`: the preprocessing run's id, stored so that a shard of another run is recognized."""
    tensors = to_tensors(arrays)
    if run_id is not None:
        tensors["run_id"] = run_id_tensor(run_id)
    write_atomic(path, lambda f: torch.save(tensors, f), "shard", binary=True)


def load_shard(path, mmap=True, run_id=None):
    """A shard dict (tensors memory-mapped by default: only what is indexed is read). With `run_id`
    (meta.json's), a shard written by another preprocessing run is refused."""
    if not os.path.isfile(path):
        raise UserError(f"shard {path} not found: run preprocess.py again")
    try:
        shard = torch.load(path, weights_only=True, mmap=mmap)
    except Exception as e:  # noqa: BLE001 - any unreadable shard is the user's data problem
        raise UserError(f"cannot load shard {path}: {load_refusal(e)}; run preprocess.py "
                        "again") from None
    if run_id is not None and not torch.equal(
            shard.get("run_id", torch.zeros(0, dtype=torch.uint8)), run_id_tensor(run_id)):
        raise UserError(f"shard {path} was written by another preprocessing run than its "
                        "meta.json: run preprocess.py again")
    return shard
