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

The chosen alpha and minimum length are reported with where they sit on their axis (interior, an
edge, the stated bound); with -widen an axis whose choice is at its top or bottom grows by one step
and the grid is tuned again (only the new settings decode) until every choice is interior or at a
bound (-max_alpha, -max_min_length; alpha 0 and minimum length 0 are the lowest possible).
-match_output writes a length-matched rule: the best checkpoint and alpha with the minimum (or
maximum) length found by bisection whose mean output length comes nearest the references'.
"""
import json
import os

from onmt import opts
from onmt.bin.common import start
from onmt.errors import UserError
from onmt.inputters.corpus import check_line_counts, read_lines
from onmt.opts.translate import input_rule_opts, tune_fixed_opts
from onmt.translate import length_grid as lg
from onmt.utils.cli import run_main
from onmt.utils.files import check_not_inputs, check_output, write_text_atomic
from onmt.utils.logging import logger


def fixed_options():
    """translate.py's options held fixed over the grid (copied into each setting when given here):
    those its declarations put in the fixed group (onmt/opts/translate.py tune_fixed_opts), then the
    input rules, in declaration order."""
    return opts.option_names(tune_fixed_opts) + opts.option_names(input_rule_opts)


FIXED = fixed_options()
RUN = ("batch_size",)     # given to every decoding, never written: the output does not depend on it


def grid(opt):
    """The length rules to try, in order: [{"length_penalty", "alpha" (wu only), "min_length"}]."""
    return settings_of(opt.length_penalty, opt.alpha, opt.min_length)


def settings_of(length_penalty, alphas, min_lengths):
    alphas = alphas if length_penalty == "wu" else [None]
    return [{"length_penalty": length_penalty, **({"alpha": a} if a is not None else {}),
             "min_length": m}
            for a in alphas for m in min_lengths]


def axis_bounds(opt):
    """{axis: (lowest, highest)} of the axes tuned: alpha (wu only) and the minimum length."""
    bounds = {"min_length": (0, opt.max_min_length or opt.max_length)}
    if opt.length_penalty == "wu":
        bounds["alpha"] = (0.0, opt.max_alpha)
    return bounds


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
    from onmt.evaluation import METRICS, score, summarize  # start-up time: the scorer imports numpy
    res = summarize(score(preds, refs))
    n = max(len(preds), 1)
    return {"rouge": {m: round(res[m]["f"], 4) for m in METRICS},
            "length": sum(len(p.split()) for p in preds) / n,
            "ref_length": sum(len(r.split()) for r in refs) / n}


def tune(models, settings, decode, refs, metric, rows=None):
    """Decode with every (model, setting) via `decode(model, setting) -> predictions` and score
    each (appended to `rows`, skipping a pair already there): (rows, index of the best). A row:
    {"model", "setting", "rouge", "length", "ref_length"}."""
    rows = [] if rows is None else rows
    seen = {(r["model"], describe(r["setting"])) for r in rows}
    for model in models:
        for setting in settings:
            if (model, describe(setting)) in seen:
                continue
            row = {"model": model, "setting": dict(setting),
                   **score_row(decode(model, setting), refs)}
            rows.append(row)
            logger.info(f"{model_name(model)} {describe(setting)}: ROUGE-1/2/L F1 "
                        f"{row['rouge']['rouge1']:.2f}/{row['rouge']['rouge2']:.2f}/"
                        f"{row['rouge']['rougeL']:.2f}, "
                        f"length {row['length']:.2f} (references {row['ref_length']:.2f})")
    return rows, best_index(rows, metric)


def edges(rows, best, bounds):
    """{axis: where the best row's value sits among the values the rows tried}."""
    chosen = rows[best]["setting"]
    return {axis: lg.axis_status([r["setting"][axis] for r in rows], chosen[axis], lo, hi)
            for axis, (lo, hi) in bounds.items()}


def tune_widening(models, axes, length_penalty, decode, refs, metric, bounds, widen):
    """tune() over the grid of `axes` ({"alpha": [...], "min_length": [...]}); with `widen`, while
    an axis's choice is at its top or bottom edge, that axis grows one step (lg.widened) and the new
    settings are tuned: (rows, best, {axis: status}, the axes' final values)."""
    axes = {k: list(v) for k, v in axes.items()}
    rows, best = tune(models, settings_of(length_penalty, axes["alpha"], axes["min_length"]),
                      decode, refs, metric)
    while True:
        status = edges(rows, best, bounds)
        grown = {}
        for axis, where in status.items():
            edge = where in (lg.TOP, lg.BOTTOM)
            new = lg.widened(axes[axis], where, *bounds[axis]) if edge else None
            if widen and new is not None:
                grown[axis] = new
        if not grown:
            return rows, best, status, axes
        for axis, new in grown.items():
            logger.info(f"-{axis} {rows[best]['setting'][axis]} is at the {status[axis]} of "
                        f"{sorted(axes[axis])}: widening to {new}")
            axes[axis].append(new)
        rows, best = tune(models, settings_of(length_penalty, axes["alpha"], axes["min_length"]),
                          decode, refs, metric, rows)


def match_length(row, decode_length, target, max_length):
    """The length-matched rule of `row`'s checkpoint and alpha: its minimum length (or, when the
    outputs are longer than `target` at minimum length 0, its maximum length) whose mean output
    length comes nearest `target`. decode_length(setting) -> mean words. Returns
    {"setting", "length", "target", "probes"}."""
    base = {k: v for k, v in row["setting"].items() if k != "min_length"}
    at = lambda **kw: decode_length({**base, **kw})            # noqa: E731
    if at(min_length=0) > target:
        x, length, probes = lg.nearest_length(lambda m: at(min_length=0, max_length=m), 1,
                                              max_length, target)
        setting = {**base, "min_length": 0, "max_length": x}
    else:
        x, length, probes = lg.nearest_length(lambda m: at(min_length=m), 0, max_length, target)
        setting = {**base, "min_length": x}
    return {"setting": setting, "length": length, "target": target,
            "probes": {str(k): v for k, v in probes.items()}}


def model_name(model):
    """A candidate for a reader: its file name, an ensemble's joined by " + "."""
    return " + ".join(os.path.basename(m) for m in candidate_paths(model))


def candidate_paths(model):
    return list(model) if isinstance(model, (list, tuple)) else [model]


def describe(setting):
    return " ".join(f"-{k} {v}" for k, v in setting.items())


def table(rows, best, metric):
    """The grid as a Markdown table, the best row marked."""
    lines = ["| checkpoint | setting | R-1 | R-2 | R-L | length | best |",
             "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        lines.append(f"| {model_name(r['model'])} | {describe(r['setting'])} | "
                     f"{r['rouge']['rouge1']:.2f} | {r['rouge']['rouge2']:.2f} | "
                     f"{r['rouge']['rougeL']:.2f} | {r['length']:.2f} | "
                     f"{'<- ' + metric if i == best else ''} |")
    return "\n".join(lines)


def chosen_config(row, fixed):
    """What translate.py -config reads: the checkpoint, the fixed search options, the length
    rule."""
    paths = [os.path.abspath(m) for m in candidate_paths(row["model"])]
    return {"model": paths if isinstance(row["model"], (list, tuple)) else paths[0],
            **fixed, **row["setting"]}


def main(argv=None):

    # start-up time: this module imports neither at its top
    import torch
    import yaml
    opt, device = start(opts.tune_decoding_parser(), opts.update_tune_decoding_opts,
                        opts.validate_tune_decoding_opts, argv, inputs=inputs,
                        outputs=lambda o: {"-output": o.output, "-report": o.report,
                                           "-match_output": o.match_output,
                                           "-log_file": o.log_file})
    torch.manual_seed(opt.seed)
    check_not_inputs({"-output": opt.output, "-report": opt.report,
                      "-match_output": opt.match_output}, inputs(opt))
    for name, kind in (("output", "yaml"), ("report", "json"), ("match_output", "yaml")):
        if getattr(opt, name):
            check_output(getattr(opt, name), f"-{name} {getattr(opt, name)}", kind, opt.overwrite)
    fixed = fixed_values(opt)
    runs = {}

    def run_of(setting):
        key = describe(setting)
        if key not in runs:
            runs[key] = translate_namespace({**fixed, **{k: getattr(opt, k) for k in RUN},
                                             **setting})
        return runs[key]

    settings = grid(opt)
    for s in settings:                       # every setting of the grid checked before decoding
        run_of(s)
    src = list(read_lines(opt.src, "-src"))
    refs = list(read_lines(opt.tgt, "-tgt"))
    check_line_counts("-src", len(src), "-tgt", len(refs))
    if not src:
        raise UserError(f"-src {opt.src} is empty: nothing to tune on")
    sessions = {}

    def decode(model, setting):
        # looked up on its module when called: the tests replace it there
        from onmt.translate.session import load_session, translate_lines
        if model not in sessions:
            sessions.clear()                 # one checkpoint in memory at a time
            sessions[model] = load_session(candidate_paths(model), device, opt.precision,
                                           opt.compile)
        results = translate_lines(run_of(setting), sessions[model], src, show_progress=False)
        return [" ".join(nbest[0].tokens) for nbest in results]

    # an ensemble is one candidate, a tuple of paths (hashable: rows and sessions are keyed by it)
    candidates = [tuple(opt.model)] if opt.ensemble else opt.model
    logger.info(f"Tuning {len(candidates)} checkpoint(s) x {len(settings)} length rule(s) on "
                f"{len(src)} lines of {opt.src}, best by {opt.metric} F1"
                + (" (widening an axis whose choice is at its edge)" if opt.widen else ""))
    bounds = axis_bounds(opt)
    rows, best, status, axes = tune_widening(
        candidates, {"alpha": opt.alpha, "min_length": opt.min_length}, opt.length_penalty,
        decode, refs, opt.metric, bounds, opt.widen)
    print(table(rows, best, opt.metric))
    config = chosen_config(rows[best], fixed)
    write_text_atomic(opt.output, yaml.safe_dump(config, default_flow_style=False, sort_keys=False),
                      f"-output {opt.output}")
    for axis, where in status.items():
        line = f"-{axis} {rows[best]['setting'][axis]}: {where} of {sorted(set(axes[axis]))}"
        if where in lg.FLAGGED:
            logger.warning(line + ("" if where == lg.CAP else
                                   " (-widen tunes beyond it)" if not opt.widen else ""))
        else:
            logger.info(line)
    matched = None
    if opt.match_output:
        matched = matched_rule(opt, rows[best], decode, refs, fixed)
        write_text_atomic(opt.match_output,
                          yaml.safe_dump(chosen_config(matched, fixed),
                                         default_flow_style=False, sort_keys=False),
                          f"-match_output {opt.match_output}")
    if opt.report:
        report = {"metric": opt.metric, "best": best, "chosen": config, "edges": status,
                  "axes": {k: sorted(set(v)) for k, v in axes.items() if k in bounds},
                  "rows": rows, "src": opt.src, "tgt": opt.tgt,
                  **({"matched": {**matched, "chosen": chosen_config(matched, fixed)}}
                     if matched else {})}
        write_text_atomic(opt.report, json.dumps(report, indent=1) + "\n",
                          f"-report {opt.report}")
    logger.info(f"Best ({opt.metric} F1 {rows[best]['rouge'][opt.metric]:.2f}): "
                f"{model_name(rows[best]['model'])} {describe(rows[best]['setting'])}; "
                f"written to {opt.output} "
                f"(translate.py -config {opt.output})")
    return rows, best


def matched_rule(opt, row, decode, refs, fixed):
    """The length-matched rule of the best row (match_length), with its ROUGE on the tuning set:
    {"model", "setting", "rouge", "length", "ref_length", "target", "probes"}."""
    scored = {}

    def decode_length(setting):
        key = describe(setting)
        if key not in scored:
            scored[key] = score_row(decode(row["model"], setting), refs)
        return scored[key]["length"]

    target = opt.match_target or sum(len(r.split()) for r in refs) / max(len(refs), 1)
    max_length = fixed.get("max_length", opt.max_length)
    m = match_length(row, decode_length, target, max_length)
    logger.info(f"Length-matched ({target:.2f} words): {describe(m['setting'])}, mean length "
                f"{m['length']:.2f}, {opt.metric} F1 "
                f"{scored[describe(m['setting'])]['rouge'][opt.metric]:.2f}")
    return {"model": row["model"], **m, **scored[describe(m["setting"])], "target": target}


def inputs(opt):
    return {"-model": opt.model, "-src": opt.src, "-tgt": opt.tgt,
            "-config": vars(opt).get("config")}


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
