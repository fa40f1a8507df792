#!/usr/bin/env python
"""Re-plot the examples of a translate.py -attn_debug dump, as translate.py -attn_plot does.

    tools/plot_attention.py -attn_debug debug.npz -attn_plot plots/ [-attn_plot_n 10]

Writes plots/example_00001.png ... for the first -attn_plot_n examples of the dump (0: all of them);
see onmt/inspection/plots.py for the panels and onmt/translate/records.py for the dump format.
"""
import os


def main(argv=None):
    from onmt import opts
    from onmt.errors import UserError
    from onmt.explore.data import read_checked_dump
    from onmt.inspection.plots import plot_records, require_matplotlib
    from onmt.utils.files import check_output_folder
    from onmt.utils.logging import init_logger
    opt = opts.parse_with_given(opts.plot_attention_parser(), argv)
    logger = init_logger(opt.log_file)
    if opts.repeated_options(opt):
        logger.warning(opts.repeated_options(opt))
    opts.update_plot_attention_opts(opt)
    opts.validate_plot_attention_opts(opt)
    check_output_folder(opt.attn_plot, f"-attn_plot {opt.attn_plot}")
    require_matplotlib("-attn_plot")
    if not os.path.isfile(opt.attn_debug):
        raise UserError(f"-attn_debug {opt.attn_debug}: no such file")
    records = read_checked_dump(opt.attn_debug, f"-attn_debug {opt.attn_debug}")   # the explorer's checks
    paths = plot_records(records, opt.attn_plot, opt.attn_plot_n or None)
    logger.info(f"Plotted {len(paths)} of the {len(records)} examples of {opt.attn_debug} into {opt.attn_plot}")
    return paths


if __name__ == "__main__":
    from onmt.utils.cli import run_main
    run_main(main)
