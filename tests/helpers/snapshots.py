"""Behaviour snapshots: what each model family computes, recorded so that a refactor can show it changed
nothing (tests/e2e/test_snapshots.py compares; tests/data/snapshots/ holds the expected values, one file per
PyTorch build and CPU kernel set, named by `environment_name()`).

For each case of CASES, through the real entry points (helpers.e2e) on one tiny toy dataset, at fixed
seeds, on one torch thread, in float32 on the CPU:
  - the training loss of every step (each term of the mixed loss apart), as float.hex: bit for bit;
  - a digest of the parameters after the ML steps and after the mixed steps (sha256 of every tensor's
    float64 bytes, keys sorted);
  - translate.py's output lines with -beam_size 3 and -beam_size 1 (greedy), and with -precision int8
    where the case names it and this CPU runs it; for each, a digest of its -attn_debug dump (every
    hypothesis score, attention, intra-decoder attention and p(copy), float64 bytes).
Everything here is deterministic on one machine and one PyTorch build; another CPU (oneDNN picks its
kernels by instruction set) or another PyTorch may round differently, so each snapshot file records both and
the test compares against the file of this host's environment, or skips, saying why, where none exists.

Record this host's file (only from code whose behaviour is the reference; other hosts' files stay):
    cd tests && OMP_NUM_THREADS=1 python helpers/snapshots.py --write
"""
import hashlib
import json
import os
import sys

if __name__ == "__main__":   # run as a script: the tests folder and the checkout on sys.path
    sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

from helpers.e2e import make_data, preprocess, torch_threads, train, translate  # noqa: E402
from helpers.paths import ROOT  # noqa: E402

EXPECTED_DIR = os.path.join(ROOT, "tests", "data", "snapshots")
COMMON = ["-rnn_size", "16", "-word_vec_size", "8", "-batch_size", "8", "-seed", "7", "-optim", "adam",
          "-learning_rate", "0.02", "-report_every", "1", "-valid_steps", "1000", "-param_init", "0.3"]
ML_STEPS, MIXED_STEPS = 16, 3
# name -> (model options, mixed-objective options (None: ML only), extra translate precisions)
CASES = {
    "reinforced": (["-reinforced", "-scheduled_sampling", "0.25"],
                   ["-rl_gamma", "0.5", "-max_gen_length", "8"], ["int8"]),
    "reinforced_2layer": (["-reinforced", "-layers", "2", "-scheduled_sampling", "0.25"], None, []),
    "copy_coverage": (["-copy_attn", "-coverage_attn", "-global_attention", "mlp", "-brnn", "-dropout", "0.2"],
                      ["-rl_gamma", "0.5", "-max_gen_length", "8"], ["int8"]),
    "rnn_general": (["-global_attention", "general", "-dropout", "0.2"], None, []),
    "rnn_mlp": (["-global_attention", "mlp", "-brnn"], None, ["int8"]),
    "rnn_mlp_gru": (["-rnn_type", "GRU", "-global_attention", "mlp"], None, []),
    "rnn_mlp_2layer": (["-layers", "2", "-global_attention", "mlp", "-dropout", "0.2"], None, []),
}
TRANSLATE = ["-max_length", "12", "-batch_size", "4"]


def environment():
    """What bit-exact figures depend on beyond the code: the PyTorch build and the CPU's kernels (the
    capability PyTorch dispatches on, and the extensions oneDNN chooses other kernels by: two AVX-512
    hosts, one with AMX, round the same float32 training differently)."""
    import torch

    from onmt.hardware import cpu_flags
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_features": sorted(set(cpu_flags()) & set(KERNEL_FLAGS))}


def environment_name(env):
    """The snapshot file's name for one environment: "torch2.13.0-AVX2.json", "torch2.13.0-AVX512-amx_bf16-...json"."""
    return "-".join([f"torch{env['torch']}", env["cpu_capability"], *env["cpu_features"]]).replace("+", "_") + ".json"


KERNEL_FLAGS = ("avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
                "amx_fp16")


def parameter_digest(checkpoint_path):
    """sha256 over the checkpoint's model tensors (keys sorted; name, shape, float64 bytes)."""
    import torch

    from onmt.utils.checkpoint import weights_digest
    return weights_digest(torch.load(checkpoint_path, map_location="cpu", weights_only=True)["model"])


def dump_digest(path):
    """sha256 over an -attn_debug dump's records (onmt/translate/records.py), in line order: ids, the
    score and every float array as float64 bytes."""
    import numpy as np

    from onmt.translate.records import read_dump
    h = hashlib.sha256()
    for rec in read_dump(path):
        for key in ("line", "ids", "score", "attn", "intra", "p_copy", "copied"):
            value = rec.get(key)
            h.update(f"{key};".encode())
            if value is not None:
                h.update(np.asarray(value, dtype=np.float64).tobytes())
    return h.hexdigest()


class LossRecorder:
    """While active, every training step's loss terms ({name: float.hex}) as the trainer computes them
    (onmt.trainer.Trainer._loss_parts, which both the ML and the mixed loss go through)."""

    def __init__(self):
        self.steps = []

    def __enter__(self):
        from onmt.trainer import Trainer
        self._original = original = Trainer._loss_parts
        steps = self.steps

        def recorded(trainer, batch):
            parts, stats = original(trainer, batch)
            steps.append({k: float(v.detach().double()).hex() for k, v in sorted(parts.items())})
            return parts, stats
        Trainer._loss_parts = recorded
        return self

    def __exit__(self, *exc):
        from onmt.trainer import Trainer
        Trainer._loss_parts = self._original


def toy_data(root):
    """The one preprocessed toy dataset of every case; returns (prefix, test source path)."""
    data = make_data("summ", os.path.join(root, "data"), seed=5, train_size=48, valid_size=8, test_size=6)
    prefix = preprocess(data, os.path.join(root, "prep", "data"))
    return prefix, os.path.join(data, "test.src.txt")


def record_case(name, root, prefix, src):
    """The snapshot of one case of CASES (module docstring)."""
    from onmt.hardware import precision_problem
    model_args, mixed_args, precisions = CASES[name]
    out = {}
    save = os.path.join(root, name, "m")
    with LossRecorder() as losses:
        ckpt = train(prefix, save, *COMMON, *model_args, "-train_steps", ML_STEPS,
                     "-save_checkpoint_steps", ML_STEPS)
    out["ml_losses"], out["ml_params"] = losses.steps, parameter_digest(ckpt)
    if mixed_args is not None:
        with LossRecorder() as losses:
            ckpt = train(prefix, save + "_rl", *COMMON, *mixed_args, "-train_from", ckpt,
                         "-train_steps", ML_STEPS + MIXED_STEPS, "-save_checkpoint_steps", ML_STEPS + MIXED_STEPS)
        out["mixed_losses"], out["mixed_params"] = losses.steps, parameter_digest(ckpt)
    runs = [("beam3", ["-beam_size", "3"]), ("greedy", ["-beam_size", "1"])]
    runs += [(f"beam3_{p}", ["-beam_size", "3", "-precision", p]) for p in precisions
             if precision_problem(p, "cpu") is None]
    for run, args in runs:
        dump = os.path.join(root, name, f"{run}.npz")
        out[f"translate_{run}"] = translate(ckpt, src, os.path.join(root, name, f"{run}.txt"), *TRANSLATE, *args,
                                            "-attn_debug", dump)
        out[f"dump_{run}"] = dump_digest(dump)
    return out


def record(root, names=None):
    """{"environment": ..., "cases": {name: snapshot}} for `names` (default: every case), under `root`."""
    with torch_threads(1):
        prefix, src = toy_data(root)
        return {"environment": environment(),
                "cases": {name: record_case(name, root, prefix, src) for name in (names or CASES)}}


def expected_path(env=None):
    return os.path.join(EXPECTED_DIR, environment_name(env or environment()))


def load_expected():
    """This environment's recorded snapshot, or None when none was recorded here."""
    path = expected_path()
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def recorded_environments():
    return sorted(n for n in os.listdir(EXPECTED_DIR) if n.endswith(".json")) if os.path.isdir(EXPECTED_DIR) else []


def main(argv):
    import tempfile
    if argv != ["--write"]:
        sys.exit("usage: python helpers/snapshots.py --write   (from tests/; module docstring)")
    with tempfile.TemporaryDirectory() as root:
        snapshot = record(root)
    path = expected_path(snapshot["environment"])
    os.makedirs(EXPECTED_DIR, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(snapshot, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
