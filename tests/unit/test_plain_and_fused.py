"""The layout rule of the model folders (docs/DESIGN.md §4): onmt/models/ and onmt/reinforced/ hold the plain,
equation-shaped classes; each folder's fused.py holds their fast subclasses, which the registry picks once from
the Execution (onmt/model_builder.py, onmt/models/components.py). So a plain module imports nothing from
onmt/fused/ and nothing from a fused.py, and no plain class reads what runs (`execution.fused`, `.precision`,
`decoding_only()`, ...); onmt/fused/ knows no model class."""
import ast
import os

import pytest

from helpers.paths import ROOT

MODEL_FOLDERS = ("onmt/models", "onmt/reinforced")
# the table that picks a component's class from the execution, as the registry picks the model's
SELECTORS = {"onmt/models/components.py"}
EXECUTION_READS = {"fused", "precision", "decoding_precision", "prepared_decoding", "compile",
                   "capture", "decoding_only", "training_pass"}


def plain_modules():
    return [f"{folder}/{name}" for folder in MODEL_FOLDERS for name in sorted(os.listdir(os.path.join(ROOT, folder)))
            if name.endswith(".py") and name != "fused.py"]


def tree(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def imported_modules(node_tree):
    """Every module an import statement names (`from a import b` names a and a.b)."""
    out = []
    for node in ast.walk(node_tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


@pytest.mark.parametrize("path", plain_modules())
def test_a_plain_module_imports_nothing_fused(path):
    fused = [m for m in imported_modules(tree(path)) if m == "onmt.fused" or m.startswith("onmt.fused.")
             or (m.endswith(".fused") and m.startswith(("onmt.models", "onmt.reinforced"))
                 and not path.endswith("__init__.py"))]
    assert not fused, f"{path} imports {fused}: fast paths belong in its folder's fused.py"


@pytest.mark.parametrize("path", [p for p in plain_modules() if p not in SELECTORS])
def test_a_plain_module_never_reads_the_execution(path):
    reads = sorted({ast.unparse(n) for n in ast.walk(tree(path)) if isinstance(n, ast.Attribute)
                    and n.attr in EXECUTION_READS and "execution" in ast.unparse(n.value)})
    assert not reads, f"{path} branches on what runs ({reads}): override the method in its folder's fused.py"


def test_the_fused_kernels_know_no_model_class():
    folder = os.path.join(ROOT, "onmt", "fused")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            models = [m for m in imported_modules(tree(f"onmt/fused/{name}"))
                      if m.startswith(("onmt.models", "onmt.reinforced"))]
            assert not models, f"onmt/fused/{name} imports {models}: a kernel takes tensors, not a model class"


def test_the_rule_is_checked_on_what_the_model_folders_hold():
    """The scan itself: it sees the plain modules, and it would see an import of a kernel or a read of the
    execution (the fused subclasses have both)."""
    assert {"onmt/reinforced/model.py", "onmt/reinforced/rollout.py", "onmt/models/seq2seq.py",
            "onmt/models/rnn_decoder.py"} <= set(plain_modules())
    for fused in ("onmt/models/fused.py", "onmt/reinforced/fused.py"):
        assert any(m.startswith("onmt.fused.") for m in imported_modules(tree(fused)))
        assert any(isinstance(n, ast.Attribute) and n.attr == "decoding_only" for n in ast.walk(tree(fused)))
