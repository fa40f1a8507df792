"""Release a model (upstream OpenNMT-py's onmt_release_model): a checkpoint without its training
state.

    onmt_release_model -model run_best.pt -output model.pt [-precision fp16]
    onmt_release_model -model run_best.pt -output model/ -format safetensors [-card -metrics s.json]

What is kept: the weights (the moving average of -average_decay, as translate.py reads them), the
model's options, the vocabularies and the preprocessing record (the input rules translate.py and the
API apply to raw text); what is dropped: the optimizer, RNG, data position, loss scale,
early-stopping state and list of checkpoints. translate.py -model, onmt_tune_decoding, onmt_explore
and the API (Summarizer.load) read either format as a checkpoint (utils/release_format.py). -card
writes a model card with YAML metadata (task, data, metrics of an onmt_evaluate -json file, the
options): README.md in the safetensors folder, X.md beside a released X.pt.
"""
import json
import os

from onmt.errors import UserError
from onmt.opts import parse_with_given
from onmt.opts.families import family_name
from onmt.opts.release import release_model_parser
from onmt.utils.cli import run_main
from onmt.utils.files import (
    check_distinct_outputs,
    check_not_inputs,
    check_output,
    write_text_atomic,
)
from onmt.utils.logging import init_logger, logger

# the options a card lists: the model's and the training recipe's
CARD_OPTIONS = ("model_family", "rnn_type", "layers", "brnn", "rnn_size", "word_vec_size",
                "global_attention", "copy_attn", "coverage_attn", "share_embeddings",
                "share_vocab", "optim", "learning_rate", "batch_size", "train_steps", "rl_gamma",
                "rl_reward", "average_decay", "seed", "data")
METRIC_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L",
                "rougeLsum": "ROUGE-Lsum"}


def read_metrics(path):
    """The ROUGE F1 scores of an onmt_evaluate -json file: [(metric, name, value)], its line count
    and its scorer; one UserError line naming -metrics when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            scores = json.load(f)
        rows = [(m, f"{name} F1", float(scores[m]["f"])) for m, name in METRIC_NAMES.items()
                if m in scores]
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise UserError(f"-metrics {path}: not an onmt_evaluate -json file ({e})") from None
    if not rows:
        raise UserError(f"-metrics {path}: not an onmt_evaluate -json file (no ROUGE scores)")
    return rows, scores.get("n"), scores.get("scorer"), scores.get("settings")


def model_card(release, name, metrics=None):
    """README.md text of a model card: YAML front matter (library, task, data, metrics in the
    Hugging Face model-index form) and a body with the options and how to run it."""
    import yaml  # start-up time: only a model card needs it

    opt, pre = release["opt"], release.get("preprocess") or {}
    family = family_name(opt)
    data = os.path.basename(str(opt.get("data") or "unknown"))
    meta = {"library_name": "onmt-reinforced", "pipeline_tag": "summarization",
            "tags": ["summarization", "onmt-reinforced", family]}
    result = {"task": {"type": "summarization", "name": "Summarization"},
              "dataset": {"name": data, "type": data}}
    if metrics:
        rows, n, scorer, settings = metrics
        result["metrics"] = [{"type": m, "name": label, "value": round(v, 2)}
                             for m, label, v in rows]
    meta["model-index"] = [{"name": name, "results": [result]}]
    options = {k: opt[k] for k in CARD_OPTIONS if k in opt and opt[k] not in (None, "", [])}
    lines = ["---", yaml.safe_dump(meta, sort_keys=False).rstrip(), "---", "", f"# {name}", "",
             f"A {family} summarization model of onmt-reinforced, trained for "
             f"{release.get('step', '?')} steps on `{data}`; weights in "
             f"{release['release']['precision']}.", ""]
    if metrics:
        lines += [f"ROUGE F1 on {n} examples ({scorer} scorer, {settings}):", "",
                  "| metric | F1 |", "| --- | --- |"]
        lines += [f"| {label} | {v:.2f} |" for _, label, v in rows] + [""]
    lines += ["## Input", "",
              f"Raw text is tokenized as `{pre.get('text', {}).get('tokenize', 'given')}`"
              f"{', lowercased' if pre.get('text', {}).get('lower') else ''} (the model's "
              "preprocessing record, applied by translate.py and the API).", "",
              "## Use", "", "```", f"translate.py -model {name} -src articles.txt -output "
              "summaries.txt", "```", "", "```python", "from onmt import Summarizer",
              f"Summarizer.load({name!r}).summarize([\"an article ...\"])", "```", "",
              "## Options", "", "| option | value |", "| --- | --- |"]
    lines += [f"| -{k} | {v} |" for k, v in options.items()]
    return "\n".join(lines) + "\n"


def disk_size(path):
    """Bytes of the file `path`, or of the files in the folder `path`."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def card_path(opt):
    """README.md in the safetensors folder; beside a .pt file, its name with .md (model.pt ->
    model.md: a README.md of the folder is not the release's to replace)."""
    return (os.path.join(opt.output, "README.md") if opt.format == "safetensors"
            else os.path.splitext(opt.output)[0] + ".md")


def check_options(opt):
    """One-line UserErrors before any work: -metrics without -card, a -format the installed
    packages cannot write, an output over an input."""
    if opt.metrics and not opt.card:
        raise UserError("-metrics is what -card reports: give -card too")
    if opt.format == "safetensors":
        from onmt.utils.release_format import safetensors_module  # start-up time: it imports torch
        safetensors_module()
    outputs = {"-output": opt.output, "-log_file": opt.log_file,
               "-card": card_path(opt) if opt.card else None}
    check_not_inputs(outputs, {"-model": opt.model, "-metrics": opt.metrics,
                               "-config": vars(opt).get("config")})
    check_distinct_outputs(outputs)
    if opt.format == "pt":
        check_output(opt.output, f"-output {opt.output}")


def main(argv=None):
    # start-up time: these import torch
    from onmt.utils.checkpoint import atomic_torch_save, load_checkpoint
    from onmt.utils.release_format import released, write_folder
    opt = parse_with_given(release_model_parser(), argv)
    check_options(opt)
    metrics = read_metrics(opt.metrics) if opt.metrics else None
    init_logger(opt.log_file)
    release = released(load_checkpoint(opt.model), opt.precision)
    name = os.path.basename(os.path.normpath(opt.output))
    card = model_card(release, name, metrics) if opt.card else None
    if opt.format == "safetensors":
        write_folder(release, opt.output, card)
    else:
        atomic_torch_save(release, opt.output, f"-output {opt.output}")
        if card is not None:
            write_text_atomic(card_path(opt), card, f"-card {card_path(opt)}")
    logger.info(f"Released {opt.model} (step {release['step']}, {opt.precision}) -> {opt.output} "
                f"({opt.format}, {disk_size(opt.output) / 1e6:.2f} MB; the checkpoint: "
                f"{disk_size(opt.model) / 1e6:.2f} MB)"
                + (f"; card {card_path(opt)}" if card else ""))
    return release


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
