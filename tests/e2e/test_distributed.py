"""Gradient accumulation and several processes (gloo on the CPU): R ranks with batches of b, one process
with -accum_count R, and one process with batches of R*b make the same updates.

Same examples in both: ShardedDataset shuffles the examples, cuts them into pools of pool_factor *
batch_size examples, sorts each pool by length and cuts it into batches dealt round-robin to the
ranks. Batches of b with -pool_factor 2 and batches of 2b with -pool_factor 1 make the same pools
(64 examples, a multiple of 2b), so a pool is one batch of 2b, or two batches of b: one per rank,
or one accumulation step.

The ranks start once (distributed.spawn, as train.py -world_size 2 does, but forked: a fresh
interpreter importing torch costs far more than these runs) and run several trainings in turn; the
slow test runs train.py -world_size 2 itself. They never hang a test: a deadline kills them, and a
rank that fails stops the others (tested too).
"""
import multiprocessing
import os
import socket
import threading

import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import train as train_bin
from onmt.errors import Stopped, UserError
from onmt.utils import distributed

RNN = ["-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-brnn", "-dropout", "0",
       "-optim", "adam", "-learning_rate", "0.01"]
COPY = RNN + ["-copy_attn", "-coverage_attn"]
REINFORCED = ["-reinforced", "-rnn_size", "16", "-word_vec_size", "8", "-dropout", "0", "-scheduled_sampling", "0.25",
              "-optim", "adam", "-learning_rate", "0.01", "-rl_gamma", "0.5", "-max_gen_length", "6"]
B = 4            # batch size of a rank
DEADLINE_S = 240  # a run of spawned processes taking longer is killed (it takes about 15 s)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("dist")), seed=1, n_examples=64, max_len=8,
                            target=lambda words: words[: max(2, len(words) - 2)])


def _args(data, model, save, *more_args):
    return ["-data", data, "-save_model", str(save), *model, "-train_steps", "20", "-report_every", "5",
            "-valid_steps", "10", "-save_checkpoint_steps", "10", "-seed", "5", *more_args]


def _model(path):
    return torch.load(path, weights_only=True)["model"]


def _max_diff(a, b):
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.fixture(scope="module")
def one_process(data, tmp_path_factory):
    """family -> final parameters of one process with batches of 2b, and with b and -accum_count 2
    (the checkpoints are in the folder `family`)."""
    runs = {}

    def run(name, model):
        if name not in runs:
            folder = tmp_path_factory.mktemp(name)
            train_bin.main(_args(data, model, folder / "big", "-batch_size", str(2 * B), "-pool_factor", "1"))
            train_bin.main(_args(data, model, folder / "acc", "-batch_size", str(B), "-pool_factor", "2",
                                 "-accum_count", "2"))
            runs[name] = folder
        return _model(runs[name] / "big_step_20.pt"), _model(runs[name] / "acc_step_20.pt"), runs[name]
    return run


# ---------------------------------------------------------------------- one process
def test_accum_count_is_one_batch_n_times_larger(one_process):
    big, acc, folder = one_process("rnn", RNN)
    assert _max_diff(big, acc) < 1e-5  # measured 3e-6 (float sums in another order)
    # steps count optimizer updates; the data position counts batches: 20 steps of 2 batches of 4
    # from 16 batches an epoch
    ck = torch.load(folder / "acc_step_20.pt", weights_only=True)
    assert ck["step"] == 20 and ck["data_pos"] == [2, 8]


def test_accum_count_resumes_exactly_and_the_last_epoch_ends_with_a_short_step(data, tmp_path):
    common = RNN + ["-batch_size", str(B), "-accum_count", "3", "-seed", "5", "-report_every", "2"]
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "a"), *common, "-train_steps", "8",
                    "-save_checkpoint_steps", "4"])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "b"), *common, "-train_steps", "8",
                    "-train_from", str(tmp_path / "a_step_4.pt")])
    a, b = (torch.load(tmp_path / f"{x}_step_8.pt", weights_only=True) for x in "ab")
    assert a["data_pos"] == b["data_pos"] == [1, 8]  # 24 batches of 16 a epoch: the step crossing it
    assert _max_diff(a["model"], b["model"]) == 0.0
    # -epochs 1: 16 batches in steps of 3: five steps and a last one of the single batch left
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "e"), *common, "-epochs", "1",
                    "-save_checkpoint_steps", "0"])
    ck = torch.load(tmp_path / "e_step_6.pt", weights_only=True)
    assert ck["step"] == 6 and ck["data_pos"] == [1, 0]


# ---------------------------------------------------------------------- who runs where
def _resolve(device, **kw):
    """distributed.resolve for options given as `kw` (the others at their defaults), as train.py calls it."""
    from onmt import opts
    argv = [x for k, v in kw.items() for x in (f"-{k}", *map(str, v if isinstance(v, list) else [v]))]
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", *argv])
    return distributed.resolve(opt, device, **opts.distributed_choices(opt))


def test_world_of_the_options_and_of_torchrun(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", distributed.SPAWNED):
        monkeypatch.delenv(name, raising=False)
    cpu = torch.device("cpu")
    assert _resolve(cpu) == distributed.World()
    assert _resolve(cpu, world_size=1, gpu_ranks=[0]).device == torch.device("cuda:0")
    spawn = _resolve(cpu, world_size=3)
    assert spawn.spawn and spawn.world_size == 3 and spawn.device == cpu and not spawn.distributed
    with pytest.raises(UserError, match="torchrun"):  # another machine's ranks: torchrun's job
        _resolve(cpu, world_size=4, gpu_ranks=[2, 3])
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    world = _resolve(cpu)
    assert (world.rank, world.world_size, world.local_rank, world.spawn) == (3, 4, 1, False) and world.distributed
    assert world.device == (torch.device("cuda:1") if torch.cuda.device_count() > 1 else cpu)
    assert _resolve(cpu, gpu=-1).device == cpu   # -gpu -1 given: the CPU under torchrun too
    with pytest.raises(UserError, match="differs from torchrun's WORLD_SIZE 4"):
        _resolve(cpu, world_size=2)


def test_world_size_options_are_checked_in_one_line(data, tmp_path):
    from onmt.errors import OptionError
    for more_args, message in ((["-world_size", "0"], "-world_size must be positive"),
                           (["-accum_count", "0"], "-accum_count must be positive"),
                           (["-world_size", "2", "-gpu_ranks", "0", "2"], "distinct ranks below -world_size 2"),
                           (["-world_size", "2", "-gpu", "0"], "-gpu_ranks 0 1")):
        with pytest.raises(OptionError, match=message):
            train_bin.main(["-data", data, "-save_model", str(tmp_path / "m"), *more_args])


def test_resume_position_follows_another_number_of_ranks():
    ckpt = {"data_pos": [1, 6], "world_size": 2, "rng": "r0", "rng_ranks": ["r0", "r1"]}
    world = distributed.World(rank=1, world_size=2)
    assert distributed.resume_state(ckpt, world) == ((1, 6), "r1")
    # 12 global batches read: 4 ranks resume after 3 each, one process after 12
    assert distributed.resume_state(ckpt, distributed.World(rank=3, world_size=4)) == ((1, 3), None)
    assert distributed.resume_state(ckpt, distributed.World()) == ((1, 12), "r0")


# ---------------------------------------------------------------------- several processes
class _Deadline:
    """Kill this process's children (the spawned ranks) if the block runs past `seconds`."""

    def __init__(self, seconds):
        self.seconds, self.expired = seconds, False
        self._done = threading.Event()

    def __enter__(self):
        def watch():
            if not self._done.wait(self.seconds):
                self.expired = True
                for child in multiprocessing.active_children():
                    child.kill()
        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        assert not self.expired, f"the spawned ranks ran past {self.seconds} s and were killed"


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _jobs(jobs):
    """What each spawned rank runs: train.py's main on every (rendezvous port, argv) in turn (one start
    of the processes for several runs), then rank 1 fails while rank 0 waits for it in a rendezvous."""
    torch.set_num_threads(1)
    for port, argv in jobs:
        os.environ["MASTER_PORT"] = str(port)
        if callable(argv):
            torch.distributed.init_process_group("gloo", init_method="env://")
            argv(int(os.environ["RANK"]))
            torch.distributed.destroy_process_group()
        elif argv is None:
            if os.environ["RANK"] == "1":
                raise UserError("rank 1 stops here")
            torch.distributed.init_process_group("gloo", init_method="env://")  # waits for rank 1
        else:
            train_bin.main(argv)


def _check_sum_gradients(rank):
    """distributed.sum_gradients on 2 ranks: sums per dtype; a gradient only rank 0 has counts as 0 on
    rank 1; a parameter no rank has a gradient for keeps none (an optimizer then skips it)."""
    a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
    c = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
    if rank == 0:
        a.grad = torch.tensor([1.0, 2.0, 3.0])
    c.grad = torch.full((2, 2), 0.5 + rank, dtype=torch.float64)
    distributed.sum_gradients([a, b, c])
    assert a.grad.tolist() == [1.0, 2.0, 3.0] and b.grad is None
    assert c.grad.dtype == torch.float64 and c.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


@pytest.fixture(scope="module")
def two_ranks(data, tmp_path_factory):
    """Two spawned gloo ranks (distributed.spawn, as train.py -world_size 2 does) run: the rnn and the
    copy model with batches of b (20 steps), the reinforced model with the RL objective (8 steps, each
    rank sampling its own sequences) and its resume from step 4; check sum_gradients; then rank 1
    fails. -> (folder, the one-line error)."""
    folder = tmp_path_factory.mktemp("two_ranks")
    rl = ["-data", data, *REINFORCED, "-batch_size", str(B), "-report_every", "2", "-valid_steps", "4",
          "-save_checkpoint_steps", "4", "-seed", "5", "-train_steps", "8"]
    runs = [_args(data, RNN, folder / "rnn", "-batch_size", str(B), "-pool_factor", "2",
                  "-log_file", str(folder / "rnn.log")),
            _args(data, COPY, folder / "copy", "-batch_size", str(B), "-pool_factor", "2"),
            rl + ["-save_model", str(folder / "rl")],
            rl + ["-save_model", str(folder / "rl_resumed"), "-train_from", str(folder / "rl_step_4.pt")],
            _check_sum_gradients,
            None]
    with _Deadline(DEADLINE_S), pytest.raises(UserError) as failed:  # the ranks fork from a 1-thread torch
        distributed.spawn(_jobs, list(zip(_free_ports(len(runs)), runs)), 2, start_method="fork")
    return folder, str(failed.value)


@pytest.mark.parametrize("family,model", [("rnn", RNN), ("copy", COPY)])
def test_two_processes_make_the_update_of_one_batch_twice_as_large(two_ranks, one_process, family, model):
    """Two ranks with b == one process with 2b == one process with b and -accum_count 2."""
    folder, _ = two_ranks
    big, acc, _ = one_process(family, model)
    two = torch.load(folder / f"{family}_step_20.pt", weights_only=True)
    assert _max_diff(two["model"], acc) < 1e-5   # measured: equal bit for bit
    assert _max_diff(two["model"], big) < 1e-5   # measured 3e-6 (rnn)
    assert two["world_size"] == 2 and two["data_pos"] == [2, 4]  # 8 batches of a rank an epoch
    ranks = two["rng_ranks"]
    assert len(ranks) == 2 and not torch.equal(ranks[0]["torch"], ranks[1]["torch"])  # own draws


def test_rank_0_alone_logs_and_validation_covers_both_shares(two_ranks):
    folder, _ = two_ranks
    text = (folder / "rnn.log").read_text()
    assert text.count("Step 5/20;") == 1 and text.count("Validation perplexity") == 2
    saved = [line for line in text.splitlines() if "Saved checkpoint" in line]
    assert len([line for line in saved if "_step_" in line]) == 2   # and the best ones, rank 0 alone
    assert all(line.endswith(("_step_10.pt", "_step_20.pt", "_best.pt")) for line in saved)


def test_two_ranks_of_the_reinforced_model_resume_bit_for_bit(two_ranks):
    folder, _ = two_ranks
    full = torch.load(folder / "rl_step_8.pt", weights_only=True)
    resumed = torch.load(folder / "rl_resumed_step_8.pt", weights_only=True)
    assert _max_diff(full["model"], resumed["model"]) == 0.0
    assert full["data_pos"] == resumed["data_pos"]
    for a, b in zip(full["rng_ranks"], resumed["rng_ranks"]):
        assert torch.equal(a["torch"], b["torch"])
    assert _max_diff(full["model"], _model(folder / "rl_step_4.pt")) > 0


def test_a_failing_rank_stops_the_others_in_one_line(two_ranks):
    """(and before it, every job, _check_sum_gradients included, ended well on both ranks)"""
    _, error = two_ranks  # rank 0 was waiting for rank 1 in a rendezvous: stopped, not left hanging
    assert error == "rank 1 of 2 exited with code 1; the other ranks were stopped"


def test_world_size_without_torchrun_spawns_its_ranks(data, tmp_path, monkeypatch):
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    calls = []
    monkeypatch.setattr(distributed, "spawn", lambda fn, argv, n: calls.append((fn, argv, n)))
    argv = ["-data", data, "-save_model", str(tmp_path / "m"), "-world_size", "3"]
    train_bin.main(argv)
    assert calls == [(train_bin.main, argv, 3)]


@pytest.mark.slow
def test_train_py_world_size_2_on_the_command_line(data, tmp_path, one_process):
    """The real thing: train.py -world_size 2 in its own process, spawning fresh interpreters."""
    import signal
    import subprocess
    import sys

    from helpers.e2e import ROOT
    cmd = [sys.executable, os.path.join(ROOT, "train.py"),
           *_args(data, RNN, tmp_path / "cli", "-batch_size", str(B), "-pool_factor", "2", "-world_size", "2")]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        out, _ = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the session holds the spawned ranks too
        proc.communicate()
        raise
    assert proc.returncode == 0, out[-2000:]
    _, acc, _ = one_process("rnn", RNN)
    assert _max_diff(_model(tmp_path / "cli_step_20.pt"), acc) < 1e-5


@pytest.mark.parametrize("signum, to_group", [(15, True), (2, False)], ids=["SIGTERM-to-the-group", "SIGINT-to-parent"])
def test_a_signal_stops_every_rank_which_saves_once(data, tmp_path, signum, to_group):
    """train.py -world_size 2 (fresh interpreters), stopped by SIGTERM to the whole process group (what
    timeout, Slurm and systemd send) or SIGINT to the spawning process alone: every rank finishes its step,
    rank 0 saves it, the run exits 128 + the signal, one line, no traceback; the checkpoint resumes."""
    import signal
    import subprocess
    import sys
    import time

    from helpers.e2e import ROOT
    save, log = tmp_path / "s", tmp_path / "train.log"
    cmd = [sys.executable, os.path.join(ROOT, "train.py"), "-data", data, "-save_model", str(save), *RNN,
           "-train_steps", "100000", "-report_every", "1", "-valid_steps", "0", "-save_checkpoint_steps", "0",
           "-seed", "5", "-batch_size", str(B), "-world_size", "2", "-log_file", str(log)]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.time() + DEADLINE_S
        while time.time() < deadline and (not log.exists() or "Step 3/" not in log.read_text()):
            time.sleep(0.2)
        (os.killpg if to_group else os.kill)(proc.pid, signum)
        _, err = proc.communicate(timeout=DEADLINE_S)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    assert f"stopped by {name}" in err.strip().splitlines()[-1]
    (saved,) = tmp_path.glob("s_step_*.pt")
    assert _model(saved) and int(saved.stem.rsplit("_", 1)[-1]) >= 3


def _stop_one_after_the_other(folder):
    """A rank that waits for SIGINT (forwarded by the spawner), then stops as train.py's ranks do
    (exit 130); rank 0 takes longer, as when it saves the checkpoint."""
    import signal
    import time
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # as a rank past its handlers (saving, exiting)
    open(os.path.join(folder, "ready" + os.environ["RANK"]), "w").close()
    while not got:
        time.sleep(0.01)
    if os.environ["RANK"] == "0":
        time.sleep(1.5)
    raise Stopped("stopped", 130)


def test_a_rank_that_stops_first_does_not_end_the_one_still_saving(tmp_path):
    """^C to the spawner: rank 1 stops at once, rank 0 a moment later; the spawner waits for rank 0
    rather than ending it (torch's join ends the others when one exits non-zero)."""
    import signal
    import time

    def interrupt():
        deadline = time.time() + DEADLINE_S
        while time.time() < deadline and len(list(tmp_path.glob("ready*"))) < 2:
            time.sleep(0.05)
        # to the main thread itself, as a signal from outside usually lands: it interrupts the
        # spawner's wait for its ranks, during which rank 1 exits
        signal.pthread_kill(main, signal.SIGINT)

    main = threading.main_thread().ident
    threading.Thread(target=interrupt, daemon=True).start()
    with _Deadline(DEADLINE_S), pytest.raises(Stopped) as stopped:
        distributed.spawn(_stop_one_after_the_other, str(tmp_path), 2, start_method="fork")
    assert stopped.value.code == 130
    assert str(stopped.value).startswith("stopped by SIGINT: every rank finished its step")

