"""Predictions + references -> ROUGE table, as papers report it.

    onmt_evaluate -pred pred.txt -ref test.tgt.txt [-ref ref2.txt ...] [-json scores.json]
                  [-official] [-bootstrap 1000] [-pred other.txt] [-limit_bytes 75] [-recall_only]

ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum precision / recall / F1 (x 100), averaged over examples,
with ROUGE-1.5.5's standard settings (-m -n 2 -a: Porter stemming, no stopword removal, no length
limit, several references averaged). The built-in scorer (onmt/evaluation) by default, the Perl
script with -official. A second -pred is compared with the first: a paired bootstrap p-value per
metric for "the first file scores higher".
"""
import json
import sys

import numpy as np

from onmt import opts
from onmt.errors import UserError
from onmt.evaluation import METRICS, score, score_sentences, summarize
from onmt.evaluation.bootstrap import confidence_intervals, paired_test
from onmt.evaluation.official import OfficialUnavailable
from onmt.evaluation.text import read_sent_per_line
from onmt.inputters.corpus import check_line_counts, read_lines
from onmt.utils.cli import run_main
from onmt.utils.files import (
    check_distinct_outputs,
    check_not_inputs,
    check_output,
    write_text_atomic,
)

NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}


def read_summaries(path, opt):
    """A file's summaries: lines (plain or .gz, UTF-8, a Windows "\\r" dropped), or lists of
    sentences with -sent_per_line."""
    lines = list(read_lines(path, strip_cr=True))
    return read_sent_per_line(lines) if opt.sent_per_line else lines


def load(opt):
    """(list of prediction summaries per -pred file, reference summaries per example)."""
    preds = [read_summaries(p, opt) for p in opt.pred]
    refs = [read_summaries(r, opt) for r in opt.ref]
    n = len(preds[0])
    unit = "summaries" if opt.sent_per_line else "lines"
    for path, s in list(zip(opt.pred, preds)) + list(zip(opt.ref, refs)):
        check_line_counts(path, len(s), opt.pred[0], n, unit)
    return preds, [list(r) for r in zip(*refs)]


def _score(preds, refs, opt):
    kw = dict(official=opt.official, stem=not opt.no_stemming, limit_words=opt.limit_words,
              limit_bytes=opt.limit_bytes)
    try:
        if opt.sent_per_line:
            return score_sentences(preds, refs, **kw)
        return score(preds, refs, sentence_marker=opt.sentence_split, **kw)
    except OfficialUnavailable as e:
        raise UserError(str(e)) from None


def report(scores, opt, samples):
    """{metric: {p, r, f[, p_ci, r_ci, f_ci]}, n} in points."""
    out = summarize(scores)
    if samples:
        lo, hi = confidence_intervals(scores, samples, opt.seed)
        for i, m in enumerate(METRICS):
            for j, k in enumerate("prf"):
                out[m][f"{k}_ci"] = [float(lo[i, j] * 100), float(hi[i, j] * 100)]
    out["n"] = int(scores.shape[0])
    return out


def print_table(title, res, opt):
    cols = ["r"] if opt.recall_only else ["p", "r", "f"]
    heads = {"p": "P", "r": "R", "f": "F1"}
    ci = "r_ci" in res[METRICS[0]]
    width = 24 if ci else 8
    print(title)
    print(f"{'metric':<12}" + "".join(f"{heads[c]:>{width}}" for c in cols))
    for m in METRICS:
        cells = []
        for c in cols:
            cell = f"{res[m][c]:.2f}"
            if ci:
                lo, hi = res[m][f"{c}_ci"]
                cell += f" [{lo:.2f}, {hi:.2f}]"
            cells.append(f"{cell:>{width}}")
        print(f"{NAMES[m]:<12}" + "".join(cells))


def main(argv=None):
    opt = opts.parse_with_given(opts.evaluate_parser(), argv)
    opts.update_evaluate_opts(opt)
    opts.validate_evaluate_opts(opt)
    if opts.repeated_options(opt):
        print(f"onmt_evaluate: {opts.repeated_options(opt)}", file=sys.stderr)
    check_not_inputs({"-json": opt.json, "-log_file": vars(opt).get("log_file")},
                     {"-pred": opt.pred, "-ref": opt.ref, "-config": vars(opt).get("config")})
    if opt.json:
        check_distinct_outputs({"-json": opt.json, "-log_file": vars(opt).get("log_file")})
        check_output(opt.json, f"-json {opt.json}", "json", opt.overwrite)
    preds, refs = load(opt)
    if not refs:
        raise UserError(f"{opt.pred[0]} and the references are empty: no summary to score")
    scorer = "ROUGE-1.5.5" if opt.official else "built-in"
    settings = (("-m " if not opt.no_stemming else "") + "-n 2 -a"
                + (f" -b {opt.limit_bytes}" if opt.limit_bytes else "")
                + (f" -l {opt.limit_words}" if opt.limit_words else ""))
    scores = [_score(p, refs, opt) for p in preds]
    result = report(scores[0], opt, opt.bootstrap)
    result.update(scorer=scorer, settings=settings, pred=opt.pred[0], ref=list(opt.ref))
    print_table(f"{opt.pred[0]}: {result['n']} examples, {len(opt.ref)} reference(s) each, "
                f"{scorer} ROUGE ({settings})", result, opt)
    if len(preds) == 2:
        samples = opt.bootstrap or 1000
        other = report(scores[1], opt, opt.bootstrap)
        print_table(f"{opt.pred[1]}:", other, opt)
        pv = paired_test(scores[0], scores[1], samples, opt.seed)
        paired = {m: {"delta_r": result[m]["r"] - other[m]["r"],
                      "delta_f": result[m]["f"] - other[m]["f"],
                      "p_value_r": float(pv[i, 1]), "p_value_f": float(pv[i, 2])}
                  for i, m in enumerate(METRICS)}
        print(f"paired bootstrap ({samples} samples): "
              f"p-value of '{opt.pred[0]} scores higher than {opt.pred[1]}'")
        print(f"{'metric':<12}{'dR':>8}{'p(R)':>8}"
              + ("" if opt.recall_only else f"{'dF1':>8}{'p(F1)':>8}"))
        for m in METRICS:
            d = paired[m]
            print(f"{NAMES[m]:<12}{d['delta_r']:8.2f}{d['p_value_r']:8.4f}"
                  + ("" if opt.recall_only else f"{d['delta_f']:8.2f}{d['p_value_f']:8.4f}"))
        result.update(pred2=dict(other, pred=opt.pred[1]), paired=paired, paired_samples=samples)
    if opt.json:
        write_json(opt.json, result)
    return result


def write_json(path, obj):
    """Write `obj` as JSON to `path`, atomically."""
    text = json.dumps(obj, indent=1,
                      default=lambda x: float(x) if isinstance(x, np.floating) else str(x))
    write_text_atomic(path, text + "\n", f"-json {path}")


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
