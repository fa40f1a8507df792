"""CNN/DailyMail as users have it -> `-output/{train,valid,test}.{src,tgt}.txt`
(tools/prepare_cnndm.py).

One example per line, tokens separated by single spaces, lowercased unless -no_lower, a summary's
sentences joined on one line with no <t> </t> <s> </s> tags. The forms of `-input` (-format,
detected when auto, the detected one logged):

    opennmt  OpenNMT's release (cnndm.tar.gz): {train,val,test}.txt.src + .txt.tgt.tagged
             (<t> ... </t>)
    bin      See et al.'s finished_files: {train,val,test}.bin or chunked/{train,val,test}_NNN.bin
    hf       Hugging Face cnn_dailymail 3.0.0 exported with Dataset.to_json / to_csv / to_parquet:
             {train,validation,test}.{jsonl,json,csv,parquet}, or pieces
             train-00000-of-00003.parquet
    seed     {train,valid,test}.{src,tgt}.txt[.gz], sentences possibly separated by </s> (becomes .)

Only the Hugging Face text is raw: -tokenize auto runs the PTB-style tokenizer (tokenize.py) on it
and leaves the other, already tokenized forms as they are; its highlights (one sentence per line)
get a final `.` where they lack one, as See et al. did. `val` and `validation` are written as
`valid`.
"""
import os
import re

from onmt import opts
from onmt.prepare.detect import Found, choose, find_pair, numbered_pieces, seed_pairs
from onmt.prepare.output import Corpus, prepare_main
from onmt.prepare.tables import read_rows
from onmt.prepare.text import Cleaner, between_tags, files_in, read_pairs, remove_eos
from onmt.prepare.tfexample import read_text_features
from onmt.utils.cli import run_main

ACCEPTED = ("accepted forms: (opennmt) OpenNMT's summarization release, cnndm.tar.gz of the "
            "OpenNMT data release (see OpenNMT-py's summarization docs): {train,val,test}.txt.src "
            "and .txt.tgt.tagged; (bin) See et al.'s cnn-dailymail repository, its finished_files: "
            "{train,val,test}.bin or chunked/{train,val,test}_000.bin ...; (hf) the Hugging Face "
            "datasets hub's cnn_dailymail 3.0.0 exported with Dataset.to_json/to_csv/to_parquet: "
            "{train,validation,test}.{jsonl,json,csv,parquet} or pieces like "
            "train-00000-of-00003.parquet; (seed) the seed layout {train,valid,test}.{src,tgt}.txt "
            "(or .txt.gz)")
DESCRIPTIONS = {"opennmt": "OpenNMT's summarization release",
                "bin": "See et al.'s finished_files .bin",
                "hf": "Hugging Face cnn_dailymail export", "seed": "seed layout"}
# our name -> opennmt's and See's
THEIR_SPLITS = {"train": "train", "valid": "val", "test": "test"}
HF_NAME = re.compile(r"(train|validation|valid|val|test)(?:-(\d+)-of-(\d+))?"
                     r"\.(jsonl|json|csv|parquet)(\.gz)?")
HF_SPLIT = {"train": "train", "validation": "valid", "valid": "valid", "val": "valid",
            "test": "test"}


def _rel(paths, root):
    return [os.path.relpath(p, root) for p in paths]


# ------------------------------------------------------------------------------------------ forms
def find_opennmt(folder, cleaner):
    found = Found()
    for split, theirs in THEIR_SPLITS.items():
        pair = find_pair(found, folder, [folder], [f"{theirs}.txt.src"],
                         [f"{theirs}.txt.tgt.tagged"])
        if pair:
            def examples(s=pair[0], t=pair[1]):
                for src, tgt in read_pairs(s, t):
                    yield cleaner.line(src), cleaner.sentences(between_tags(tgt, "<t>", "</t>"))
            found.splits[split] = (_rel(pair, folder), examples)
    return found


def find_bin(folder, cleaner):
    found = Found()
    chunk_dir = os.path.join(folder, "chunked")
    for split, theirs in THEIR_SPLITS.items():
        whole = os.path.join(folder, f"{theirs}.bin")
        probe = Found()
        chunks = numbered_pieces(chunk_dir, rf"{theirs}_(\d+)\.bin", f"{theirs}_NNN.bin", probe,
                                 folder)
        if os.path.isfile(whole):
            files = [whole]
            found.seen.append(f"{theirs}.bin")
            if chunks:
                found.notes.append(f"{split}: {theirs}.bin used, chunked/{theirs}_NNN.bin ignored")
        elif chunks:
            files = chunks
            found.seen.extend(probe.seen)
            found.problems.extend(probe.problems)
        else:
            continue

        def examples(files=files):
            for path in files:
                for article, abstract in read_text_features(path, ("article", "abstract")):
                    yield (cleaner.line(article),
                           cleaner.sentences(between_tags(abstract, "<s>", "</s>")))
        found.splits[split] = (_rel(files, folder), examples)
    return found


def find_hf(folder, cleaner):
    found = Found()
    by_split = {}
    for name in files_in(folder):
        m = HF_NAME.fullmatch(name)
        if m:
            by_split.setdefault(HF_SPLIT[m.group(1)], []).append((m, name))
    for split in ("train", "valid", "test"):
        entries = by_split.get(split)
        if not entries:
            continue
        found.seen.extend(n for _, n in entries[:2])
        kinds = {(m.group(1), m.group(4), m.group(3) is not None) for m, _ in entries}
        if len(kinds) > 1:
            found.problems.append(f"several files for {split}: {', '.join(n for _, n in entries)}")
            continue
        pieces = sorted((int(m.group(2) or 0), int(m.group(3) or 1), n) for m, n in entries)
        total = pieces[0][1]
        if [p[0] for p in pieces] != list(range(total)) or any(p[1] != total for p in pieces):
            have = ", ".join(p[2] for p in pieces)
            found.problems.append(f"{split} pieces are not numbered 0 to {total - 1} of {total}: "
                                  f"{have}")
            continue
        files = [os.path.join(folder, p[2]) for p in pieces]

        def examples(files=files):
            for path in files:
                for article, highlights in read_rows(path, ("article", "highlights")):
                    yield (cleaner.line(article),
                           cleaner.sentences(highlights.split("\n"), end_period=True))
        found.splits[split] = (_rel(files, folder), examples)
    return found


def find_seed(folder, cleaner):
    return seed_pairs(folder, lambda s, t: (cleaner.line(remove_eos(s)),
                                            cleaner.line(remove_eos(t))))


FORMS = {"opennmt": find_opennmt, "bin": find_bin, "hf": find_hf, "seed": find_seed}


def tokenize_for(form, mode):
    """Whether to run the tokenizer on a form: -tokenize auto does it for the raw Hugging Face text
    only."""
    return mode == "ptb" or (mode == "auto" and form == "hf")


def detect(folder, requested="auto", lower=True, tokenize="auto"):
    """The Corpus in `folder` (see the module docstring); a one-line UserError when there is
    none."""
    forms = {name: find(folder, Cleaner(tokenize_for(name, tokenize), lower))
             for name, find in FORMS.items()}
    name, found = choose(folder, forms, requested, "CNN/DailyMail", ACCEPTED)
    how = "PTB-style tokenizer" if tokenize_for(name, tokenize) else "whitespace tokens as given"
    notes = found.notes + [f"tokens: {how}; {'lowercased' if lower else 'case kept'}"]
    return Corpus(name, DESCRIPTIONS[name], found.splits, notes)


def main(argv=None):
    return prepare_main(opts.prepare_cnndm_parser(), detect, argv)


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()
