"""Several processes, one model: who runs where, the process group, and the few collectives the
trainer needs (docs/DESIGN.md, "Several processes").

A run has `world_size` ranks. It is distributed when torchrun's environment says so (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT with WORLD_SIZE > 1), or when `-world_size N`
(N > 1) is given without it: train.py then spawns the N ranks on this machine itself (`spawn`), as
OpenNMT-py does. A rank computes on cuda:LOCAL_RANK (NCCL) when it has GPUs (under torchrun:
whenever CUDA is available, unless `-gpu -1` is given; spawned: with `-gpu_ranks`), else on the CPU
(gloo).

What makes R ranks equal one process: every rank builds the model from the same seed and rank 0's
parameters are broadcast anyway; each rank reads its own batches (ShardedDataset rank / world_size,
equal shares); each loss is divided by the target tokens of the whole update (every batch of every
rank, `all_reduce_sum`) and the gradients are SUMMED over the ranks (`sum_gradients`), so R ranks
with batches b_1..b_R make the update of one batch b_1 + ... + b_R. Sampling (dropout, scheduled
sampling, RL rollouts) draws from a different seed on each rank (`seed_rank`).
"""
import contextlib
import datetime
import logging
import os
import random
import signal
import socket
import sys
import time
from multiprocessing.connection import wait
from typing import NamedTuple

import torch

from onmt.errors import PeerStopped, Stopped, UserError
from onmt.utils.cli import run_main
from onmt.utils.logging import logger
from onmt.utils.rank_failure import failed_rank, let_the_failed_rank_end
from onmt.utils.statistics import Statistics
from onmt.utils.stop import LAUNCHER_PID, forwarded_signals

SPAWNED = "ONMT_SPAWNED"   # set to 1 in the ranks `spawn` starts


class World(NamedTuple):
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    # -world_size N without torchrun: the caller spawns the N ranks (`spawn`)
    spawn: bool = False

    @property
    def distributed(self):
        return self.world_size > 1 and not self.spawn


def _torchrun_env():
    """(rank, world_size, local_rank) from torchrun's environment, or None outside it."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    try:
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
    except ValueError:
        raise UserError("RANK, WORLD_SIZE and LOCAL_RANK must be integers "
                        "(they are torchrun's)") from None
    return rank, size, local


def resolve(opt, device, world_size_given=False, cpu_given=False):
    """The World of this process for the options `opt` (-world_size, -gpu_ranks, -gpu) and the
    environment; `device` is the one -gpu alone gives. `world_size_given`: -world_size was given
    (under torchrun it must then be WORLD_SIZE); `cpu_given`: -gpu -1 was given (under torchrun: the
    CPU); onmt.opts.distributed_choices(opt) says both."""
    env = _torchrun_env()
    gpu_ranks, world_size = list(opt.gpu_ranks), opt.world_size
    if env is not None and env[1] > 1:
        rank, size, local = env
        if world_size_given and world_size != size:
            raise UserError(f"-world_size {world_size} differs from torchrun's WORLD_SIZE {size}: "
                            "leave -world_size out under torchrun")
        # spawned by -world_size N: GPUs with -gpu_ranks, as asked
        if os.environ.get(SPAWNED) == "1":
            cuda = bool(gpu_ranks)
        else:                               # torchrun: GPUs when there are, unless -gpu -1 is given
            cuda = torch.cuda.is_available() and not (cpu_given and not gpu_ranks)
        if cuda and torch.cuda.is_available():
            if local >= torch.cuda.device_count():
                raise UserError(f"LOCAL_RANK {local} but only {torch.cuda.device_count()} GPUs "
                                "here: run at most that many processes per node")
            return World(rank, size, local, torch.device(f"cuda:{local}"))
        if gpu_ranks:
            raise UserError("-gpu_ranks given but CUDA is not available")
        return World(rank, size, local, torch.device("cpu"))
    if world_size > 1:
        if env is None and gpu_ranks and sorted(gpu_ranks) != list(range(world_size)):
            raise UserError(f"-world_size {world_size} -gpu_ranks {' '.join(map(str, gpu_ranks))}"
                            ": this machine spawns every rank "
                            f"(-gpu_ranks {' '.join(map(str, range(world_size)))}); "
                            "for several machines use torchrun (docs/user-guide.md, Several GPUs)")
        if gpu_ranks and torch.cuda.device_count() < world_size:
            raise UserError(f"-world_size {world_size} with -gpu_ranks needs {world_size} GPUs, "
                            f"this machine has {torch.cuda.device_count()}")
        return World(0, world_size, 0, torch.device("cuda:0" if gpu_ranks else "cpu"), spawn=True)
    if gpu_ranks:
        return World(0, 1, 0, torch.device(f"cuda:{gpu_ranks[0]}"))
    if env is not None and torch.cuda.is_available() and not cpu_given:
        local = env[2]  # torchrun --nproc_per_node 1: its GPU, as for several ranks
        return World(0, 1, local, torch.device(f"cuda:{local}") if device.type == "cpu" else device)
    return World(0, 1, 0, device)


@contextlib.contextmanager
def process_group(world, timeout_s=1800):
    """Join the process group of `world` (nothing for one process); leave it on exit."""
    if not world.distributed:
        yield
        return
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    if world.device.type == "cuda":
        torch.cuda.set_device(world.device)
    backend = "nccl" if world.device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method="env://", rank=world.rank,
                            world_size=world.world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        yield
    except Exception as e:
        if not _peer_failure(e):
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise PeerStopped(f"rank {world.rank} of {world.world_size}: another process of this run "
                          f"stopped ({first}); this one stops too") from None
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


def _peer_failure(e):
    """Whether exception `e` of a collective says a peer process is gone (a dead rank under
    torchrun), rather than a fault of this process."""
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    if isinstance(e, getattr(dist, "DistError", ())):
        return True
    text = str(e)
    return isinstance(e, RuntimeError) and any(
        k in text for k in ("gloo", "Connection closed by peer", "NCCL",
                            "Connection reset by peer", "Broken pipe"))


# ---------------------------------------------------------------------- start-up
def broadcast_model(model, world):
    """Rank 0's parameters and buffers on every rank (they are built from the same seed anyway)."""
    if not world.distributed:
        return
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            dist.broadcast(t.data, src=0)


def seed_rank(seed, world):
    """Rank r > 0 samples from seed + r (dropout, scheduled sampling, rollouts); rank 0 keeps the
    stream of `seed`, so a one-process run is unchanged."""
    if world.rank > 0:
        torch.manual_seed(seed + world.rank)
        random.seed(seed + world.rank)


def resume_state(ckpt, world):
    """(data position, RNG state or None) of this rank from a checkpoint.

    The data position (epoch, batches of ONE rank) is the same on every rank (equal shares). Saved
    by another number of ranks, it is converted through the global batch count (exact when that
    count divides); the RNG state is this rank's when the checkpoint has one per rank, rank 0's for
    rank 0, else None (the rank keeps its own seed)."""
    epoch, pos = (int(x) for x in ckpt.get("data_pos", (0, 0)))
    saved = int(ckpt.get("world_size", 1))
    if saved != world.world_size:
        global_pos = pos * saved
        if global_pos % world.world_size:
            logger.warning(f"the checkpoint's {saved} ranks had read {global_pos} batches of "
                           f"epoch {epoch}; {world.world_size} ranks resume after "
                           f"{global_pos // world.world_size * world.world_size}")
        pos = global_pos // world.world_size
    per_rank = ckpt.get("rng_ranks")
    if per_rank is not None and len(per_rank) == world.world_size:
        return (epoch, pos), per_rank[world.rank]
    if world.rank == 0:
        return (epoch, pos), ckpt.get("rng")
    return (epoch, pos), None


def check_batches(train_data, world):
    """UserError when some rank would get no training batch in an epoch
    (fewer batches than ranks)."""
    if world.distributed and train_data.num_batches(0) == 0:
        raise UserError(f"the training data makes fewer batches than -world_size "
                        f"{world.world_size}: lower -batch_size or use fewer processes")


# ------------------------------------------------------------------- collectives of a training step
def all_reduce_sum(value, device):
    """The sum over ranks of the number `value` (int) of this rank."""
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(t)
    return int(t.item())


def sum_gradients(params):
    """Replace every gradient by its sum over the ranks: one flat all_reduce per parameter dtype.

    A parameter without a gradient on a rank counts as zero there; it is left without one only when
    no rank has one (so an optimizer skips it exactly as one process would). Flags of who has a
    gradient travel at the end of the first flat buffer."""
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    params = [p for p in params if p.requires_grad]
    if not params:
        return
    groups = {}
    for p in params:
        if p.grad is not None and p.grad.is_sparse:
            raise RuntimeError("sparse gradients are not supported with several processes")
        groups.setdefault(p.dtype, []).append(p)
    flags = None
    for i, (dtype, group) in enumerate(groups.items()):
        parts = [p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel())
                 for p in group]
        if i == 0:
            # (n_params,) 1 where this rank has one
            parts.append(torch.tensor([p.grad is not None for p in params], dtype=dtype,
                                      device=group[0].device))
        flat = torch.cat(parts)  # (sum of numels [+ n_params],)
        dist.all_reduce(flat)
        if i == 0:
            flags = dict(zip(map(id, params), (flat[-len(params):] > 0).tolist()))
        offset = 0
        for p in group:
            n = p.numel()
            if flags[id(p)]:
                summed = flat[offset:offset + n].view_as(p)
                if p.grad is None:
                    p.grad = summed.clone()
                else:
                    p.grad.copy_(summed)
            offset += n


def gather_objects(obj, world):
    """[obj of rank 0, obj of rank 1, ...] on every rank ([obj] for one process)."""
    if not world.distributed:
        return [obj]
    # torch.distributed only in a run of several processes
    import torch.distributed as dist
    out = [None] * world.world_size
    dist.all_gather_object(out, obj)
    return out


def sum_statistics(stats, world):
    """The Statistics of every rank summed (`stats` itself for one process)."""
    if not world.distributed:
        return stats
    total = Statistics()
    for s in gather_objects(stats, world):
        total.update(s)
    return total


# ------------------------------------------------------------------- -world_size N without torchrun
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signal_name(signum):
    return signal.Signals(signum).name


def _spawned(index, fn, argv, world_size, addr, port):
    # out of the spawner's process group: a signal to the group reaches a rank once, forwarded
    os.setpgrp()
    os.environ.update({"RANK": str(index), "LOCAL_RANK": str(index), "WORLD_SIZE": str(world_size),
                       "MASTER_ADDR": addr, "MASTER_PORT": str(port), SPAWNED: "1",
                       LAUNCHER_PID: str(os.getppid())})
    try:
        run_main(fn, argv)  # a user error: one line and exit code 1, which stops the other ranks
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    # not the interpreter's exit (a spawned rank's is sys.exit): gloo's threads, still alive there,
    # aborted it at random after a clean stop (-6, "terminate called without an active exception")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def spawn(fn, argv, world_size, start_method="spawn"):
    """Run `fn(argv)` in `world_size` new processes of this machine, as ranks 0..world_size-1 with
    torchrun's variables set (MASTER_ADDR / MASTER_PORT: the environment's, else localhost and a
    free port). When one rank fails the others are stopped, and this raises a one-line UserError.
    start_method "spawn" starts fresh interpreters (what CUDA needs); the CPU tests fork."""

    # torch.multiprocessing only to launch several processes
    import torch.multiprocessing as mp

    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = os.environ.get("MASTER_PORT") or free_port()
    procs = []
    # SIGTERM / ^C to this process, or to the whole group, is one stop for every rank: forwarded to
    # the ranks, which finish the step, save (rank 0) and exit 143 / 130; this process waits for
    # them. The handler is in place before the ranks start, so a signal while they start is a
    # stop too
    with forwarded_signals(lambda: [p.pid for p in procs]) as received:
        try:
            context = mp.start_processes(_spawned, args=(fn, argv, world_size, addr, port),
                                         nprocs=world_size, join=False, start_method=start_method)
            procs.extend(context.processes)
            for signum in received:         # received while the ranks were being created
                _signal_all(procs, signum)
            # join() ends the other ranks when one exits non-zero; a rank stopping on a forwarded
            # signal exits 130 / 143: join only once a rank has ended and no signal has come (after
            # one, _stopped waits for every rank)
            while not received:
                alive = [p.sentinel for p in procs if p.is_alive()]
                ended = not alive or wait(alive, timeout=0.5)
                if ended and not received:
                    let_the_failed_rank_end(procs)
                    if context.join(timeout=0):
                        break
        except mp.ProcessExitedException as e:
            if not received:
                index, code = failed_rank(procs, e.error_index, e.exit_code)
                raise UserError(f"rank {index} of {world_size} exited with code "
                                f"{code}; the other ranks were stopped") from None
        except mp.ProcessRaisedException as e:
            last = str(e).strip().splitlines()[-1] if str(e).strip() else "an exception"
            raise UserError(f"rank {e.error_index} of {world_size} failed ({last}); "
                            "the other ranks were stopped") from None
        if received:
            _stopped(procs, received[0], world_size)


def _signal_all(procs, signum):
    for proc in procs:
        try:
            os.kill(proc.pid, signum)
        except (ProcessLookupError, TypeError):
            pass


# after one rank has stopped, how long the others may take to follow before they are ended
STOP_GRACE_S = 30.0


def _stopped(procs, signum, world_size):
    """After a stop signal: wait for every rank. Ranks step in lockstep, so they stop within seconds
    of one another; one that the signal ended before it could stop in order (it came while the rank
    was starting, before its handler was in place) ends the others at once, and ranks still running
    STOP_GRACE_S after another stopped are ended too (one stopped in order while a peer waited on it
    at start-up, for ever).
    -> Stopped (exit 128 + signum), or a UserError for any other failure."""

    in_order = (0, 128 + signum)
    first_exit, ended = None, False
    while any(p.is_alive() for p in procs):
        done = [p for p in procs if not p.is_alive()]
        if done and first_exit is None:
            first_exit = time.monotonic()
        late = first_exit is not None and time.monotonic() - first_exit > STOP_GRACE_S
        if any(p.exitcode not in in_order for p in done) or late:
            _signal_all([p for p in procs if p.is_alive()], signal.SIGKILL)
            ended = True
        time.sleep(0.1)
    for p in procs:
        p.join()
    codes = [p.exitcode for p in procs]
    if all(c in in_order for c in codes):
        raise Stopped(f"stopped by {signal_name(signum)}: "
                      "every rank finished its step and rank 0 saved it",
                      128 + signum)
    if (all(c in in_order + (-signum, -signal.SIGKILL) for c in codes)
            and (-signum in codes or ended)):
        raise Stopped(f"stopped by {signal_name(signum)} while the ranks were starting: "
                      "nothing was trained since the last checkpoint", 128 + signum)
    failed = next(i for i, c in enumerate(codes) if c not in in_order)
    raise UserError(f"rank {failed} of {world_size} exited with code {codes[failed]} "
                    f"while stopping on {signal_name(signum)}")
