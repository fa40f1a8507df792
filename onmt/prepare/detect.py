"""Recognizing a corpus folder: which files of each accepted form are there, whether a form is
complete, and the one-line errors when the folder holds none, several, or only part of one.
"""
import os
import re

from onmt.errors import UserError
from onmt.prepare.text import files_in, read_pairs

SPLITS = ("train", "valid", "test")


class Found:
    """The files of one form found in a folder: complete splits (split -> (files, examples())),
    problems (a file without its partner, a missing piece), and notes worth a log line."""

    def __init__(self):
        self.splits = {}
        self.problems = []
        self.notes = []
        self.seen = []              # some of the form's file names, for messages

    @property
    def present(self):
        return bool(self.splits or self.problems)


def find_file(folders, names):
    """The first existing folder/name or folder/name.gz, for folders in order then names in
    order."""
    for folder in folders:
        for name in names:
            for n in (name, name + ".gz"):
                p = os.path.join(folder, n)
                if os.path.isfile(p):
                    return p
    return None


def find_pair(found, root, folders, src_names, tgt_names):
    """(src, tgt) paths when both exist; when only one does, a problem is recorded. None
    otherwise."""
    s, t = find_file(folders, src_names), find_file(folders, tgt_names)
    for p in (s, t):
        if p:
            found.seen.append(os.path.relpath(p, root))
    if s and t:
        return s, t
    if s or t:
        have = os.path.relpath(s or t, root)
        need = " or ".join(tgt_names if s else src_names)
        found.problems.append(f"{have} has no partner {need}")
    return None


def numbered_pieces(folder, pattern, what, found, root):
    """Files of `folder` whose name fully matches `pattern` (one group: the piece number), in
    numeric order; a gap in the numbering (a missing piece) is recorded as a problem."""
    rx = re.compile(pattern)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    pieces = sorted((int(m.group(1)), n) for n in names if (m := rx.fullmatch(n))
                    and os.path.isfile(os.path.join(folder, n)))
    for i, (k, _) in enumerate(pieces):
        if k != i:
            found.problems.append(f"piece {i} of {what} is missing in "
                                  f"{os.path.relpath(folder, root) or '.'}")
            break
    found.seen.extend(os.path.relpath(os.path.join(folder, n), root) for _, n in pieces[:2])
    return [os.path.join(folder, n) for _, n in pieces]


def choose(folder, forms, requested, what, accepted):
    """(form name, Found) of the one form in `folder`: the one asked for (-format) or the only one
    present (auto). Raises a one-line UserError, naming the accepted forms, otherwise."""
    if not os.path.isdir(folder):
        raise UserError(f"no {what} folder at {folder}; {accepted}")
    if requested == "auto":
        present = {k: v for k, v in forms.items() if v.present}
        if len(present) > 1:
            listing = "; ".join(f"{k}: {', '.join(v.seen[:2])}" for k, v in present.items())
            raise UserError(f"{folder} holds files of several forms ({listing}); "
                            "choose one with -format")
    else:
        present = {requested: forms[requested]} if forms[requested].present else {}
    if not present:
        form = f" in the '{requested}' form" if requested != "auto" else ""
        raise UserError(f"no {what} data{form} in {folder}; {accepted}")
    (name, found), = present.items()
    if found.problems:
        raise UserError(f"{folder} holds an incomplete '{name}' corpus: "
                        f"{'; '.join(found.problems)}; {accepted}")
    return name, found


def seed_pairs(folder, clean):
    """The seed layout {train,valid,test}.{src,tgt}.txt[.gz]: each example is
    `clean(src line, tgt line)`.
    Other *.src.txt / *.tgt.txt files (Gigaword's extra.*) are not splits: noted, ignored."""
    found = Found()
    for split in SPLITS:
        pair = find_pair(found, folder, [folder], [f"{split}.src.txt"], [f"{split}.tgt.txt"])
        if pair:
            def examples(s=pair[0], t=pair[1]):
                for src, tgt in read_pairs(s, t):
                    yield clean(src, tgt)
            found.splits[split] = ([os.path.basename(p) for p in pair], examples)
    others = [n for n in files_in(folder) if re.fullmatch(r"[^.]+\.(src|tgt)\.txt(\.gz)?", n)
              and n.split(".")[0] not in SPLITS]
    if others:
        found.notes.append(f"ignored (not a split): {', '.join(others)}")
    return found
