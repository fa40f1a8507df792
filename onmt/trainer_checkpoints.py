"""What a training run writes and keeps (onmt/trainer.py's Trainer.save and Trainer.restore): its
step checkpoints, each written atomically by rank 0 with every rank's RNG states, pruned with
-keep_checkpoint (only files this run wrote, checked by their identity: utils/checkpoint.py), and,
on a resume of the same run, its earlier checkpoints taken back into that count."""
import os

from onmt.utils.checkpoint import (
    atomic_torch_save,
    checkpoint_path,
    file_identity,
    owned_checkpoints,
    prune_checkpoints,
    rng_state,
)
from onmt.utils.distributed import gather_objects
from onmt.utils.logging import logger


class CheckpointKeeper:
    """The checkpoints of one run under the prefix `save_model`, for the process of `world` (a
    utils/distributed.py World); `meta`: what every checkpoint carries besides the training state
    (options, vocabulary, preprocessing options, parameter names)."""

    def __init__(self, save_model, keep_checkpoint, world, meta):
        self.save_model, self.keep_checkpoint = save_model, keep_checkpoint
        self.world, self.meta = world, meta
        # rank 0: this run's step checkpoints, absolute, oldest first (-keep_checkpoint)
        self.saved = []
        # rank 0: path -> file_identity of each of them when written (pruning checks it)
        self.identities = {}
        # every rank: the steps saved by this process's run (collective saves)
        self.saved_steps = set()

    def resume(self, ckpt, path):
        """The same run goes on from `ckpt` (read from `path`): its earlier checkpoints count for
        -keep_checkpoint."""
        self.saved, self.identities = owned_checkpoints(ckpt, self.save_model, path)

    def save(self, step, data_pos, state, path=None):
        """Write `state` (the trainer's: model, optimizer, train_seconds, early stopping, loss
        scale) as the checkpoint of `step` at (epoch, batches read by each rank) `data_pos`, to
        {save_model}_step_{step}.pt (pruned with -keep_checkpoint) or to `path` (not pruned); every
        rank calls it (the RNG states are gathered), rank 0 writes. Returns the path on rank 0."""
        # every rank's: each resumes its own draws
        rng_ranks = gather_objects(rng_state(), self.world)
        tracked = path is None
        if tracked:
            self.saved_steps.add(step)   # on every rank: whether to save again is decided alike
        if self.world.rank != 0:
            return None
        path = os.path.abspath(path or checkpoint_path(self.save_model, step))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        payload = {**self.meta, **state}   # the trainer's state as it gives it (scaler included)
        payload.update({
            "step": step,
            "data_pos": list(data_pos),   # (epoch, batches read by EACH rank: they read as many)
            "rng": rng_ranks[0],
            "world_size": self.world.world_size,
            "saved_checkpoints": (self.saved + [path] if tracked and path not in self.saved
                                  else list(self.saved)),
            "saved_identities": {p: list(self.identities[p])
                                 for p in self.saved if p in self.identities},
        })
        if self.world.world_size > 1:
            payload["rng_ranks"] = rng_ranks
        atomic_torch_save(payload, path)
        logger.info(f"Saved checkpoint {path}")
        if tracked:
            if path not in self.saved:
                self.saved.append(path)
            self.identities[path] = file_identity(path)
            self.saved = prune_checkpoints(self.saved, self.keep_checkpoint, self.identities)
        return path
