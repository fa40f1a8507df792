#!/usr/bin/env python
"""Lead baselines, the first row of every summarization results table.

    tools/lead_baseline.py -src test.src.txt -output lead3.txt -sentences 3       # CNN/DM: lead-3
    tools/lead_baseline.py -src test.src.txt -output lead8.txt -words 8           # Gigaword: first 8 words
    tools/lead_baseline.py -src duc.src.txt -output lead.txt -words 75  # DUC-2004, scored with -limit_bytes 75

`-sentences K` keeps the first K sentences of each source line; a sentence ends with one of the
`-sentence_end` tokens (default `. ! ?`), and with `-tag_sentences` each kept sentence is written as
`<t> ... </t>` so that onmt_evaluate's ROUGE-Lsum splits the output where it was cut (without it,
onmt_evaluate splits on ` . `). `-words K` keeps the first K whitespace tokens. One output line per
input line (an empty line stays empty); the output is written to a temporary file renamed when complete.
"""
import argparse

from onmt.errors import UserError
from onmt.inputters.corpus import read_lines
from onmt.utils.files import check_not_inputs, check_output, write_atomic


def lead_sentences(tokens, k, ends=(".", "!", "?")):
    """The first k sentences of a token list, as lists of tokens."""
    sents, cur = [], []
    for t in tokens:
        cur.append(t)
        if t in ends:
            sents.append(cur)
            cur = []
            if len(sents) == k:
                return sents
    if cur:
        sents.append(cur)
    return sents[:k]


def baseline(line, sentences=0, words=0, ends=(".", "!", "?"), tag=False):
    toks = line.split()
    if words:
        return " ".join(toks[:words])
    sents = lead_sentences(toks, sentences, ends)
    if tag:
        return " ".join(f"<t> {' '.join(s)} </t>" for s in sents)
    return " ".join(" ".join(s) for s in sents)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-src", required=True, help="source text, one document per line")
    p.add_argument("-output", required=True, help="the baseline summaries, one per line")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("-sentences", type=int, help="keep the first K sentences (lead-K)")
    g.add_argument("-words", type=int, help="keep the first K words")
    p.add_argument("-sentence_end", nargs="+", default=[".", "!", "?"], help="tokens that end a sentence")
    p.add_argument("-tag_sentences", action="store_true", help="write each sentence as <t> ... </t>")
    p.add_argument("-overwrite", action="store_true",
                   help="replace -output even when it is not a text file of summaries (a checkpoint, a corpus)")
    opt = p.parse_args(argv)
    k = opt.sentences if opt.sentences is not None else opt.words
    if k <= 0:
        p.error(f"-{'sentences' if opt.sentences is not None else 'words'} must be positive, got {k}")
    def write(out):
        for line in read_lines(opt.src):
            out.write(baseline(line, opt.sentences or 0, opt.words or 0, tuple(opt.sentence_end),
                               opt.tag_sentences) + "\n")
    try:
        check_not_inputs({"-output": opt.output}, {"-src": opt.src})
        check_output(opt.output, f"-output {opt.output}", "text", opt.overwrite)
        write_atomic(opt.output, write)
    except UserError as e:      # the source unreadable (a line not UTF-8...) or the output unwritable
        raise SystemExit(f"lead_baseline.py: error: {e}")


if __name__ == "__main__":
    from onmt.utils.cli import run_main
    run_main(main)      # SIGTERM / ^C: the file being written removed, one line, 143 / 130
