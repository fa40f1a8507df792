"""onmt_build_vocab -config CONFIG.yaml [-n_sample N]: OpenNMT-py 3.x's vocabulary step. It counts
the words of the config's training corpora (its data: mapping) and writes its src_vocab (and
tgt_vocab) files, which train.py -config CONFIG.yaml then preprocesses with
(onmt/inputters/upstream_data.py)."""
import json

from onmt import opts
from onmt.errors import UserError
from onmt.inputters.upstream_data import build_vocab
from onmt.utils.cli import run_main
from onmt.utils.files import check_distinct_outputs, check_not_inputs
from onmt.utils.logging import init_logger
from onmt.utils.output_rule import check_replaceable


def check_files(spec, opt):
    """The vocabulary files and the log are none of the files the command reads (the corpora, the
    validation pair, the config), no two of them one file, and, without -overwrite, none an
    existing file of another kind (the one output rule): one-line UserErrors."""
    outputs = {"src_vocab": spec.get("src_vocab"), "-log_file": opt.log_file,
               "tgt_vocab": None if spec.get("share_vocab") else spec.get("tgt_vocab")}
    inputs = {"the corpus": [p for pair in spec.get("train", []) for p in pair],
              "the validation data": list(spec.get("valid") or []),
              "-config": vars(opt).get("config")}
    check_not_inputs(outputs, inputs)
    check_distinct_outputs(outputs)
    if not opt.overwrite:
        # a vocabulary over a vocabulary only: never over a checkpoint or a dataset's files
        for what, path in outputs.items():
            if path:
                kind = "log" if what == "-log_file" else "vocabulary"
                check_replaceable(path, f"{what} {path}", kind)


def main(argv=None):
    opt = opts.parse_with_given(opts.build_vocab_parser(), argv)
    if not opt.data_config:
        raise UserError("onmt_build_vocab needs a -config in OpenNMT-py 3.x form "
                        "(a data: mapping of corpora)")
    spec = json.loads(opt.data_config)
    check_files(spec, opt)
    logger = init_logger(opt.log_file)
    if opts.repeated_options(opt):
        logger.warning(opts.repeated_options(opt))
    if opt._config_notes:
        logger.info(opt._config_notes)
    for path in build_vocab(spec, opt.n_sample):
        logger.info(f"wrote {path}")


def cli():
    run_main(main)


if __name__ == "__main__":
    cli()
