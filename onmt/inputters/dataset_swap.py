"""Swapping a preprocessed dataset in, so that a reader never sees a mix and an interruption never
leaves neither the old nor the new one.

A preprocessing run writes everything into a staging folder beside -save_data
(`.{base}.staging{pid}`), then `swap_in`: it first writes `manifest.json` there (the names of the
new files), then, SIGTERM and ^C deferred, removes the old meta.json, removes the old files the new
dataset does not have, moves each new file in (os.replace), and moves the new meta.json in last.
Readers go by meta.json, so until that last rename they see no dataset, and after it the new one.

SIGKILL cannot be deferred: a run killed inside the swap leaves a staging folder with its manifest
and its meta.json. `finish_or_remove_dead_stages` (at the next preprocessing of the prefix, and
whenever a dataset without meta.json is loaded) finishes such a swap from the folder of a process
that no longer exists, then removes the folder; a dead staging folder without a manifest
(killed before its swap) is simply removed. The steps of `swap_in` can be replayed: a file already
moved is in the manifest, so it is not taken for an old one.
"""
import glob
import json
import os
import re
import shutil

from onmt.utils.files import process_alive, write_text_atomic
from onmt.utils.logging import logger
from onmt.utils.stop import signals_deferred

MANIFEST = "manifest.json"


def OUTPUT_NAME(base):
    """The names of the files of prefix `base` that a preprocessing run writes (or left behind)."""
    return re.compile(re.escape(base) + r"\.((train|valid)\.\d+\.pt(\.tmp\d+)?|tokens\.tmp\d+"
                      r"|(src\.|tgt\.)?vocab\.txt|meta\.json(\.tmp\d+)?)$")


def outputs(save_data):
    """The files of prefix `save_data` that a preprocessing run writes (or left behind): meta,
    vocabularies, shards, and the temporary files of an interrupted run."""
    pat = OUTPUT_NAME(os.path.basename(save_data))
    return [p for p in glob.glob(glob.escape(save_data) + ".*") if pat.match(os.path.basename(p))]


def swap_in(stage, save_data):
    """Replace the dataset of `save_data` by the complete one in `stage` (module docstring). SIGTERM
    and ^C wait until the swap is done (utils/stop.py `signals_deferred`)."""
    base = os.path.basename(save_data)
    manifest = os.path.join(stage, MANIFEST)
    if not os.path.exists(manifest):
        names = sorted(os.path.basename(p) for p in outputs(os.path.join(stage, base)))
        write_text_atomic(manifest, json.dumps(names) + "\n", "the staging folder's manifest")
    with signals_deferred():
        _swap(stage, save_data)


def _swap(stage, save_data):
    base = os.path.basename(save_data)
    folder = os.path.dirname(save_data) or "."
    with open(os.path.join(stage, MANIFEST), encoding="utf-8") as f:
        names = set(json.load(f))
    meta = f"{base}.meta.json"
    if os.path.exists(os.path.join(stage, meta)) and os.path.exists(os.path.join(folder, meta)):
        os.remove(os.path.join(folder, meta))               # from here on, no reader sees a dataset
    for p in outputs(save_data):
        # the old dataset's files the new one lacks
        if os.path.basename(p) not in names:
            os.remove(p)
    for name in sorted(names - {meta}):
        if os.path.exists(os.path.join(stage, name)):
            os.replace(os.path.join(stage, name), os.path.join(folder, name))
    if os.path.exists(os.path.join(stage, meta)):
        os.replace(os.path.join(stage, meta), os.path.join(folder, meta))


def finish_or_remove_dead_stages(save_data):
    """Finish the swap of a run killed inside it (its staging folder has a manifest and its
    meta.json) and remove the staging folders of this prefix left by processes that no longer
    exist."""
    folder = os.path.dirname(os.path.abspath(save_data))
    base = os.path.basename(save_data)
    for path in sorted(glob.glob(os.path.join(glob.escape(folder),
                                              f".{glob.escape(base)}.staging*"))):
        pid = path.rsplit(".staging", 1)[1]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        if (os.path.exists(os.path.join(path, MANIFEST))
                and os.path.exists(os.path.join(path, f"{base}.meta.json"))):
            logger.warning("finishing the dataset swap of a preprocessing run killed inside it "
                           f"({path})")
            _swap(path, os.path.join(folder, base))
        shutil.rmtree(path, ignore_errors=True)
