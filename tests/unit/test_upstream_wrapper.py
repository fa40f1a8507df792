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
UPSTREAM_IMPORTS = {"onmt", "onmt.utils.loss", "onmt.models", "onmt.translate.translator", "onmt.inference_engine",
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


class _Vocab:
    def __init__(self, tokens):
        self.ids_to_tokens = list(tokens)

    def __len__(self):
        return len(self.ids_to_tokens)

    def __getitem__(self, token):   # upstream's target vocabulary: unknown words are id 0
        return self.ids_to_tokens.index(token) if token in self.ids_to_tokens else 0


def test_collapse_copy_scores_is_upstreams_sum_on_the_scores_device():
    """The wrapper's collapse_copy_scores (indices built on the scores' device, for CUDA) against the sum
    written out one word at a time: each source word the target vocabulary holds moves its copy score onto
    its vocabulary id, the copy column left at 1e-10; in both batch layouts."""
    import torch
    mod = _wrapper_module()
    tgt = _Vocab(["<unk>", "<blank>", "a", "b", "c"])
    batch = {"src_ex_vocab": [_Vocab(["<unk>", "b", "zz", "a"]), _Vocab(["<unk>", "yy"])]}
    scores = torch.rand(3, 2, 5 + 4, generator=torch.Generator().manual_seed(0))  # (T, B, V + X)
    want = scores.clone()
    for b, ex in enumerate(batch["src_ex_vocab"]):
        for i in range(1, len(ex)):
            ti = tgt[ex.ids_to_tokens[i]]
            if ti != 0:
                want[:, b, ti] += want[:, b, 5 + i]
                want[:, b, 5 + i] = 1e-10
    assert torch.equal(mod.collapse_copy_scores(scores.clone(), batch, tgt), want)
    flat = scores.transpose(0, 1).contiguous()   # (B, T, V + X): batch_dim 0
    assert torch.equal(mod.collapse_copy_scores(flat, batch, tgt, batch_dim=0), want.transpose(0, 1))
    assert not torch.equal(want, scores)   # the example moved scores
