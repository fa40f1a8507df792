"""Sources, references and systems' summaries -> one self-contained HTML page to see why one system
beats another (onmt/explore/; docs/explorer.md).

    onmt_explore -src test.src.txt -ref test.tgt.txt -system mixed/test.npz ml/test.npz \
                 [-names mixed ml] -output explore.html [-title ...] [-bootstrap 1000] [-seed 1]

A -system is a translate.py -attn_debug dump (attention, p(copy), the pointer's copies) or a
prediction file (one summary a line: marks and ROUGE, no attention). The page embeds everything (no
network), shows one article at a time and prints nothing but one line: the file written and its
size.
"""
import os
import sys
import time

from onmt import opts
from onmt.errors import UserError
from onmt.explore.data import (
    corpus_figures,
    page_data,
    read_system,
    read_text,
    rouge_f1,
    system_names,
)
from onmt.explore.page import page_html, write_page
from onmt.explore.summary import summary_html
from onmt.utils.cli import run_main
from onmt.utils.files import check_not_inputs, check_output, descriptor_of


def build_page(opt):
    """The page's HTML for parsed, validated options; reads every input first."""
    sources, refs = read_text(opt.src, "-src"), read_text(opt.ref, "-ref")
    if len(refs) != len(sources):
        raise UserError(f"-ref {opt.ref} has {len(refs)} lines "
                        f"but -src {opt.src} has {len(sources)}")
    if not sources:
        raise UserError(f"-src {opt.src} is empty: no article to show")
    systems = [read_system(path, sources) for path in opt.system]
    names = system_names(opt.system, opt.names)
    scores = [rouge_f1(s["preds"], refs) for s in systems]                    # (n, 3) each
    data = page_data(sources, refs, systems, names, scores)
    figures, pair = corpus_figures(names, sources, refs, systems, scores, opt.bootstrap, opt.seed)
    title = opt.title or f"Summaries of {os.path.basename(opt.src)}"
    return page_html(data, summary_html(figures, pair, data), title)


def main(argv=None):
    opt = opts.parse_with_given(opts.explore_parser(), argv)
    opts.update_explore_opts(opt)
    opts.validate_explore_opts(opt)
    if opts.repeated_options(opt):
        print(f"onmt_explore: {opts.repeated_options(opt)}", file=sys.stderr)
    check_not_inputs({"-output": opt.output},
                     {"-src": opt.src, "-ref": opt.ref, "-system": opt.system,
                      "-config": vars(opt).get("config")})
    check_output(opt.output, f"-output {opt.output}", "html", opt.overwrite)
    start = time.perf_counter()
    html = build_page(opt)
    size = write_page(opt.output, html)
    human = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
    print(f"{opt.output}: {size:,} bytes ({human}), {len(opt.system)} system(s), "
          f"written in {time.perf_counter() - start:.1f} s",
          file=sys.stderr if descriptor_of(opt.output) == 1 else sys.stdout)   # not inside the page
    return size


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
