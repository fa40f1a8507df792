"""Choose a checkpoint and its length rule on a tuning set, as summarization papers do by hand.

    onmt_tune_decoding -model step_1000.pt step_2000.pt -src tune.src -tgt tune.tgt \
        -output best.yaml \
        [-alpha 0 0.5 1 1.5 2] [-min_length 0 5] [-metric rougeL] [-beam_size 5] [-report grid.json]
    translate.py -config best.yaml -src test.src -output pred.txt     # decodes with what was chosen

Every checkpoint decodes the tuning sources with every length rule of the grid (-length_penalty with
each -alpha, times each -min_length; the other search options, e.g. -beam_size, the same in every
setting); each setting's ROUGE F1 (built-in scorer, ROUGE-1.5.5's settings) and mean length are
logged and printed as a table, and the best by -metric (ties: the earlier checkpoint, then the
earlier setting) is written as YAML that translate.py -config reads: the checkpoint (absolute path),
the length rule and the search options given here. A search option left out here is left out of the
YAML too, so translate.py applies the checkpoint's own rule (-max_length, n-gram blocking) as it did
here.
"""
import os

from onmt import opts
from onmt.bin.common import start
from onmt.errors import UserError
from onmt.inputters.corpus import check_line_counts, read_lines
from onmt.utils.cli import run_main
from onmt.utils.files import check_not_inputs, check_output, write_text_atomic
from onmt.utils.logging import logger

# translate.py's options held fixed over the grid (copied into each setting when given here)
FIXED = ("beam_size", "max_length", "coverage_penalty", "beta", "stepwise_penalty",
         "block_ngram_repeat", "avoid_trigram_repetition", "ignore_when_blocking", "replace_unk",
         "src_seq_length_trunc", "tgt_seq_length_trunc")
RUN = ("batch_size",)     # given to every decoding, never written: the output does not depend on it


def grid(opt):
    """The length rules to try, in order: [{"length_penalty", "alpha" (wu only), "min_length"}]."""
    alphas = opt.alpha if opt.length_penalty == "wu" else [None]
    return [{"length_penalty": opt.length_penalty, **({"alpha": a} if a is not None else {}),
             "min_length": m}
            for a in alphas for m in opt.min_length]


def fixed_values(opt):
    """The fixed search options given here (command line or -config), by name."""
    return opts.given_values(opt, FIXED)


def translate_namespace(values):
    """translate.py's options for `values` ({option: value}), converted, updated and validated as
    translate.py's (an OptionError names the option)."""
    t = opts.parse_values(opts.translate_parser(), values)
    opts.update_translate_opts(t)
    opts.validate_translate_opts(t)
    return t


def best_index(rows, metric):
    """The index of the row of highest rows[i]["rouge"][metric]; the first on a tie."""
    if not rows:
        raise ValueError("no setting was scored")
    return max(range(len(rows)), key=lambda i: (rows[i]["rouge"][metric], -i))


def score_row(preds, refs):
    """{"rouge": {metric: F1 in points}, "length": mean words per prediction, "ref_length"}."""
    from onmt.evaluation import METRICS, score, summarize
    res = summarize(score(preds, refs))
    n = max(len(preds), 1)
    return {"rouge": {m: round(res[m]["f"], 4) for m in METRICS},
            "length": sum(len(p.split()) for p in preds) / n,
            "ref_length": sum(len(r.split()) for r in refs) / n}


def tune(models, settings, decode, refs, metric):
    """Decode with every (model, setting) via `decode(model, setting) -> predictions` and score
    each: (rows, index of the best). A row: {"model", "setting", "rouge", "length",
    "ref_length"}."""
    rows = []
    for model in models:
        for setting in settings:
            row = {"model": model, "setting": dict(setting),
                   **score_row(decode(model, setting), refs)}
            rows.append(row)
            logger.info(f"{os.path.basename(model)} {describe(setting)}: ROUGE-1/2/L F1 "
                        f"{row['rouge']['rouge1']:.2f}/{row['rouge']['rouge2']:.2f}/"
                        f"{row['rouge']['rougeL']:.2f}, "
                        f"length {row['length']:.2f} (references {row['ref_length']:.2f})")
    return rows, best_index(rows, metric)


def describe(setting):
    return " ".join(f"-{k} {v}" for k, v in setting.items())


def table(rows, best, metric):
    """The grid as a Markdown table, the best row marked."""
    lines = ["| checkpoint | setting | R-1 | R-2 | R-L | length | best |",
             "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        lines.append(f"| {os.path.basename(r['model'])} | {describe(r['setting'])} | "
                     f"{r['rouge']['rouge1']:.2f} | {r['rouge']['rouge2']:.2f} | "
                     f"{r['rouge']['rougeL']:.2f} | {r['length']:.2f} | "
                     f"{'<- ' + metric if i == best else ''} |")
    return "\n".join(lines)


def chosen_config(row, fixed):
    """What translate.py -config reads: the checkpoint, the fixed search options, the length
    rule."""
    return {"model": os.path.abspath(row["model"]), **fixed, **row["setting"]}


def main(argv=None):
    import json

    import torch
    import yaml
    opt, device = start(opts.tune_decoding_parser(), opts.update_tune_decoding_opts,
                        opts.validate_tune_decoding_opts, argv, inputs=inputs,
                        outputs=lambda o: {"-output": o.output, "-report": o.report,
                                           "-log_file": o.log_file})
    torch.manual_seed(opt.seed)
    check_not_inputs({"-output": opt.output, "-report": opt.report}, inputs(opt))
    check_output(opt.output, f"-output {opt.output}")
    if opt.report:
        check_output(opt.report, f"-report {opt.report}")
    fixed = fixed_values(opt)
    settings = grid(opt)
    runs = [translate_namespace({**fixed, **{k: getattr(opt, k) for k in RUN}, **s})
            for s in settings]
    src = list(read_lines(opt.src, "-src"))
    refs = list(read_lines(opt.tgt, "-tgt"))
    check_line_counts("-src", len(src), "-tgt", len(refs))
    if not src:
        raise UserError(f"-src {opt.src} is empty: nothing to tune on")
    sessions = {}

    def decode(model, setting):
        from onmt.translate.session import load_session, translate_lines
        if model not in sessions:
            sessions.clear()                 # one checkpoint in memory at a time
            sessions[model] = load_session(model, device, opt.precision, opt.compile)
        results = translate_lines(runs[settings.index(setting)], sessions[model], src,
                                  show_progress=False)
        return [" ".join(nbest[0].tokens) for nbest in results]

    logger.info(f"Tuning {len(opt.model)} checkpoint(s) x {len(settings)} length rule(s) on "
                f"{len(src)} lines of {opt.src}, best by {opt.metric} F1")
    rows, best = tune(opt.model, settings, decode, refs, opt.metric)
    print(table(rows, best, opt.metric))
    config = chosen_config(rows[best], fixed)
    write_text_atomic(opt.output, yaml.safe_dump(config, default_flow_style=False, sort_keys=False),
                      f"-output {opt.output}")
    if opt.report:
        write_text_atomic(opt.report,
                          json.dumps({"metric": opt.metric, "best": best, "chosen": config,
                                      "rows": rows, "src": opt.src, "tgt": opt.tgt},
                                     indent=1) + "\n",
                          f"-report {opt.report}")
    logger.info(f"Best ({opt.metric} F1 {rows[best]['rouge'][opt.metric]:.2f}): "
                f"{rows[best]['model']} {describe(rows[best]['setting'])}; written to {opt.output} "
                f"(translate.py -config {opt.output})")
    return rows, best


def inputs(opt):
    return {"-model": opt.model, "-src": opt.src, "-tgt": opt.tgt,
            "-config": vars(opt).get("config")}


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
