"""onmt_build_vocab -config CONFIG.yaml [-n_sample N]: OpenNMT-py 3.x's vocabulary step. It counts the words
of the config's training corpora (its data: mapping) and writes its src_vocab (and tgt_vocab) files, which
train.py -config CONFIG.yaml then preprocesses with (onmt/inputters/upstream_data.py)."""
import json

from onmt import opts
from onmt.errors import UserError
from onmt.utils.cli import run_main
from onmt.utils.logging import init_logger


def main(argv=None):
    opt = opts.parse_with_given(opts.build_vocab_parser(), argv)
    logger = init_logger(opt.log_file)
    if not opt.data_config:
        raise UserError("onmt_build_vocab needs a -config in OpenNMT-py 3.x form (a data: mapping of corpora)")
    from onmt.inputters.upstream_data import build_vocab
    for path in build_vocab(json.loads(opt.data_config), opt.n_sample):
        logger.info(f"wrote {path}")


def cli():
    run_main(main)


if __name__ == "__main__":
    cli()
