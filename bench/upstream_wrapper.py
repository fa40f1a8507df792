"""Runs upstream OpenNMT-py 3.5.1 (with ITS python, from bench/compare_upstream.py) with the harness's
workarounds, patched at import time; nothing in upstream's site-packages is changed.

    <upstream venv>/bin/python bench/upstream_wrapper.py train -config C.yaml
    <upstream venv>/bin/python bench/upstream_wrapper.py translate -model M.pt -src S -output O ...
    <upstream venv>/bin/python bench/upstream_wrapper.py check   # every patch applies, nothing runs

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
- timing: prints `COMPARE_TRANSLATE_SECONDS=<s>` for the file inference alone (no start-up, no model load).
"""
import os
import sys
import time

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


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


def main():
    what, rest = sys.argv[1], sys.argv[2:]
    patch_statistics()
    if what == "check":
        patch_checkpoint_keys()
        patch_inference()
        print("upstream_wrapper: every patch applies")
        return
    if what == "train":
        from onmt.bin.train import main as entry
        sys.argv = ["onmt_train"] + rest
    elif what == "translate":
        patch_checkpoint_keys()
        patch_inference()
        from onmt.bin.translate import main as entry
        sys.argv = ["onmt_translate"] + rest
    else:
        sys.exit(f"upstream_wrapper: unknown command {what!r} (train, translate, check)")
    entry()


if __name__ == "__main__":
    main()
