"""Predictions + references -> ROUGE table (`onmt_evaluate -pred pred.txt -ref test.tgt.txt`)."""
from onmt import opts
from onmt.utils.cli import UserError, run_main
from onmt.utils.rouge import corpus_rouge


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: invalid UTF-8 at byte {e.start}") from None


def main(argv=None):
    opt = opts.evaluate_parser().parse_args(argv)
    preds, refs = read_lines(opt.pred), read_lines(opt.ref)
    if len(preds) != len(refs):
        raise UserError(f"{opt.pred} has {len(preds)} lines but {opt.ref} has {len(refs)}")
    marker = opt.sentence_split.strip()
    scores = corpus_rouge(preds, refs, marker)
    print(f"{'metric':<10}{'P':>8}{'R':>8}{'F1':>8}")
    for name, (p, r, f) in scores.items():
        print(f"{name:<10}{p:8.2f}{r:8.2f}{f:8.2f}")
    return scores


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
