"""bench/upstream_wrapper.py patches upstream OpenNMT-py 3.5.1's modules, run by upstream's python.
Its imports name upstream's package layout; a module path that is (also) this project's means a rename
here reached the wrapper (it once turned onmt.utils.loss into this project's onmt.losses.ml, and the
comparison failed in upstream's first training run)."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRAPPER = os.path.join(ROOT, "bench", "upstream_wrapper.py")

# what the wrapper imports from upstream OpenNMT-py 3.5.1's package (`from onmt.models import model`
# reads as onmt.models); a rename in this project that reaches the wrapper changes this set
UPSTREAM_IMPORTS = {"onmt", "onmt.utils.loss", "onmt.models", "onmt.inference_engine",
                    "onmt.bin.build_vocab", "onmt.bin.train", "onmt.bin.translate"}


def _onmt_imports(path):
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "onmt":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "onmt")
    return found


def test_wrapper_imports_upstreams_modules():
    assert _onmt_imports(WRAPPER) == UPSTREAM_IMPORTS
    # onmt.utils.loss is upstream's alone: this project has no such module
    assert not os.path.exists(os.path.join(ROOT, "onmt", "utils", "loss.py"))


def test_a_renamed_import_is_caught(tmp_path):
    bad = tmp_path / "wrapper.py"
    bad.write_text("import onmt.inference_engine as ie\n\n\ndef f():\n    from onmt.losses.ml import LossCompute\n")
    found = _onmt_imports(str(bad))
    assert found == {"onmt.inference_engine", "onmt.losses.ml"} and found != UPSTREAM_IMPORTS


def _wrapper_module():
    from helpers.paths import load_module
    return load_module(WRAPPER, "upstream_wrapper")


def test_a_missing_optional_module_gets_a_stand_in_that_fails_when_called(monkeypatch):
    import sys

    import pytest
    mod = _wrapper_module()
    monkeypatch.setattr(mod, "UNUSED_MODULES", ("no_such_module_xyz", "json"))
    monkeypatch.delitem(sys.modules, "no_such_module_xyz", raising=False)
    try:
        assert mod.stub_unused_modules() == ["no_such_module_xyz"]   # json is installed: left alone
        import json

        from no_such_module_xyz import fuzz, process  # upstream's import form
        assert not isinstance(json, mod._Absent)
        with pytest.raises(RuntimeError, match="no_such_module_xyz.process.extract was called, but "
                                               "no_such_module_xyz is not installed"):
            process.extract("a", ["b"])
        assert fuzz.ratio.__class__ is mod._Absent
    finally:
        sys.modules.pop("no_such_module_xyz", None)
