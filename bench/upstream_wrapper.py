"""Runs upstream OpenNMT-py 3.5.1 (with ITS python, from bench/compare_upstream.py) with the harness's
workarounds, patched at import time; nothing in upstream's site-packages is changed.

    <upstream venv>/bin/python bench/upstream_wrapper.py build_vocab -config C.yaml
    <upstream venv>/bin/python bench/upstream_wrapper.py train -config C.yaml
    <upstream venv>/bin/python bench/upstream_wrapper.py translate -model M.pt -src S -output O ...
    <upstream venv>/bin/python bench/upstream_wrapper.py check   # versions; every patch applies, nothing runs

Every `onmt` imported here is upstream's package (onmt.utils.loss, onmt.models.model, ...), never this
project's: tests/unit/test_upstream_wrapper.py keeps a rename in this project from reaching this file.

Workarounds:
- torch >= 2.6 loads with weights_only=True; upstream's checkpoints hold a Namespace and a vocab dict:
  TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1.
- perplexity: upstream adds the coverage loss to the loss its statistics report (train and
  validation perplexity); this project's perplexity is the token NLL alone, so the wrapper takes the
  coverage term out of the statistics (the training loss, and so the gradients, are unchanged).
- a -copy_attn checkpoint does not load for translation ("Missing key in checkpoint:
  generator.linear.weight", upstream issue #2503): the generator's tensors are saved under
  checkpoint["generator"] as "linear.weight" & co. but looked up as "generator.linear.weight"; the
  wrapper moves them into checkpoint["model"] under their full names before loading.
- translating a copy model fails with KeyError: 'src_map': the inference iterator is built without
  copy support; the wrapper builds it with copy=True.
- on CUDA, a -copy_attn model's validation and translation fail ("Expected all tensors to be on the same
  device ... index_select"): upstream's collapse_copy_scores builds its index tensors on the CPU; the
  wrapper's own version (`collapse_copy_scores`, the same sums) builds them on the scores' device.
- timing: prints `COMPARE_TRANSLATE_SECONDS=<s>` for the file inference alone (no start-up, no model load).
- upstream imports every transform and its CTranslate2 engine at start-up, and with them spacy
  (terminology), ahocorasick and rapidfuzz (fuzzy matching), fasttext (clean) and ctranslate2: where one
  is not installed (the GPU machine's image has none, and carrying them all would not fit,
  bench/gpu_prepare.sh), the wrapper puts a stand-in module in its place that fails, naming it, as soon
  as anything in it is called. The comparison uses no transform and no CTranslate2, so nothing calls them.
"""
import importlib.util
import os
import sys
import time
import types

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


# upstream's imports at start-up that the comparison never calls (see the docstring)
UNUSED_MODULES = ("spacy", "ahocorasick", "rapidfuzz", "fasttext", "ctranslate2")


class _Absent(types.ModuleType):
    """A module that is not installed: any name in it is another _Absent; calling one fails, naming it."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"upstream_wrapper: {self.__name__} was called, but {self.__name__.split('.')[0]} is "
                           "not installed (a stand-in: bench/upstream_wrapper.py)")


def stub_unused_modules():
    """Puts an _Absent stand-in in sys.modules for each of UNUSED_MODULES that is not installed (upstream
    imports them as `import spacy`, `from rapidfuzz import fuzz, process`: no submodules); their names."""
    stubbed = []
    for name in UNUSED_MODULES:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = _Absent(name)
            stubbed.append(name)
    return stubbed


def patch_statistics():
    from onmt.utils.loss import LossCompute  # upstream's module, not this project's
    coverage_loss = LossCompute._compute_coverage_loss
    stats = LossCompute._stats

    def _compute_coverage_loss(self, *args, **kwargs):
        c = coverage_loss(self, *args, **kwargs)
        self._compare_coverage_sum = float(c.detach().sum())
        return c

    def _stats(self, bsz, loss, scores, target):
        return stats(self, bsz, loss - self.__dict__.pop("_compare_coverage_sum", 0.0), scores, target)

    LossCompute._compute_coverage_loss = _compute_coverage_loss
    LossCompute._stats = _stats


def patch_checkpoint_keys():
    from onmt.models import model as model_mod
    load = model_mod.BaseModel.load_state_dict

    def load_state_dict(self, checkpoint, *args, **kwargs):
        gen = checkpoint.get("generator")
        if gen and "model" in checkpoint:
            for k, v in list(gen.items()):
                checkpoint["model"][f"generator.{k}"] = v
            checkpoint["generator"] = None
        return load(self, checkpoint, *args, **kwargs)

    model_mod.BaseModel.load_state_dict = load_state_dict


def patch_inference():
    import onmt.inference_engine as ie
    build = ie.build_dynamic_dataset_iter

    def build_dynamic_dataset_iter(*args, **kwargs):
        kwargs["copy"] = True
        return build(*args, **kwargs)

    ie.build_dynamic_dataset_iter = build_dynamic_dataset_iter
    infer_file = ie.InferenceEnginePY.infer_file

    def timed_infer_file(self):
        t = time.perf_counter()
        out = infer_file(self)
        print(f"COMPARE_TRANSLATE_SECONDS={time.perf_counter() - t:.3f}", file=sys.stderr, flush=True)
        return out

    ie.InferenceEnginePY.infer_file = timed_infer_file


def collapse_copy_scores(scores, batch, tgt_vocab, batch_dim=1):
    """Upstream's collapse_copy_scores with its indices on the scores' device: each source word of example
    b that the target vocabulary holds (id ti != 0) has its copy score (column len(tgt_vocab) + i) added
    to column ti and set to 1e-10; `scores` is changed in place and returned."""
    import torch
    offset = len(tgt_vocab)
    for b in range(scores.size(batch_dim)):
        words = batch["src_ex_vocab"][b].ids_to_tokens
        pairs = [(offset + i, tgt_vocab[words[i]]) for i in range(1, len(words)) if tgt_vocab[words[i]] != 0]
        if not pairs:
            continue
        index = torch.tensor(pairs, dtype=torch.int64, device=scores.device)  # (N, 2): copy column, vocab id
        row = scores[:, b] if batch_dim == 1 else scores[b]
        row.index_add_(1, index[:, 1], row.index_select(1, index[:, 0]))
        row.index_fill_(1, index[:, 0], 1e-10)
    return scores


def patch_copy_scores_device():
    import onmt.translate.translator as translator
    import onmt.utils.loss as loss
    loss.collapse_copy_scores = translator.collapse_copy_scores = collapse_copy_scores


def main():
    what, rest = sys.argv[1], sys.argv[2:]
    stubbed = stub_unused_modules()
    patch_statistics()
    patch_copy_scores_device()
    if what == "check":
        patch_checkpoint_keys()
        patch_inference()
        import torch

        import onmt
        print(f"upstream OpenNMT-py {onmt.__version__} on torch {torch.__version__}: every patch applies"
              + (f"; stand-ins for {', '.join(stubbed)}" if stubbed else ""))
        return
    if what == "build_vocab":
        from onmt.bin.build_vocab import main as entry
        sys.argv = ["onmt_build_vocab"] + rest
    elif what == "train":
        from onmt.bin.train import main as entry
        sys.argv = ["onmt_train"] + rest
    elif what == "translate":
        patch_checkpoint_keys()
        patch_inference()
        from onmt.bin.translate import main as entry
        sys.argv = ["onmt_translate"] + rest
    else:
        sys.exit(f"upstream_wrapper: unknown command {what!r} (build_vocab, train, translate, check)")
    entry()


if __name__ == "__main__":
    main()
