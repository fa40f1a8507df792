"""The one output rule (docs/hostile-inputs.md, "What each command writes"): a command writes only
into a path that does not exist, or into an existing file that is recognisably its own kind of
output (a vocabulary over a vocabulary, predictions over a text file), never over a checkpoint, a
file of a dataset or a corpus, unless the user gives -overwrite (OpenNMT-py's name).

`check_replaceable(path, what, kind)` decides it (files.check_output calls it with the command's
`kind` and -overwrite); `KINDS` names the kinds of output, each with the test an existing file must
pass to be replaced by one; `protected(path)` says what a file is that no output replaces."""
import json
import os
import re
import zipfile

from onmt.errors import UserError

# the files of a dataset of prefix P (preprocess.py -save_data P), recognised by P.meta.json beside
DATASET_SUFFIX = re.compile(r"^((train|valid)\.\d+\.pt|(src\.|tgt\.)?vocab\.txt|meta\.json)$")
# a corpus: the split files preprocess.py reads (make_toy_data.py, tools/prepare_*.py write them)
CORPUS_FILE = re.compile(r"^(train|valid|test)\.(src|tgt)(\.txt)?(\.gz)?$")
TOY_MARK = "toy.json"        # what make_toy_data.py writes beside its corpus: the corpus is its own
HEAD = 1 << 16               # bytes of an existing file read to tell what it is


def _head(path):
    try:
        with open(path, "rb") as f:
            return f.read(HEAD)
    except OSError:
        return b""


def _text(head):
    """`head` decoded as UTF-8 text (a character cut at the end allowed), or None for binary."""
    if b"\0" in head:
        return None
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as e:
        return head[:e.start].decode("utf-8") if e.start >= len(head) - 3 else None


def _is_checkpoint(path, head):
    if path.endswith(".pt") or head[:1] == b"\x80":      # a pickle (torch's legacy format)
        return True
    if head[:4] != b"PK\x03\x04":
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("data.pkl") for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def protected(path):
    """What the existing regular file `path` is, when it is a file no output replaces without
    -overwrite ("a checkpoint", "a file of the dataset P", "a corpus file"), else None."""
    name = os.path.basename(path)
    for i, c in enumerate(name):
        if c == "." and i and DATASET_SUFFIX.match(name[i + 1:]):
            prefix = os.path.join(os.path.dirname(path), name[:i])
            if os.path.isfile(prefix + ".meta.json"):
                return f"a file of the dataset {prefix} (preprocess.py -save_data)"
    if _is_checkpoint(path, _head(path)):
        return "a checkpoint"
    if CORPUS_FILE.match(name):
        return "a corpus file"
    return None


def _vocabulary(path, text):
    """A vocabulary file: a word a line, optionally 'word count' (this project's, OpenNMT-py's)."""
    lines = text.splitlines()[:-1] or text.splitlines()     # the last may be cut
    for line in lines[:2000]:
        fields = line.split()
        if len(fields) > 2 or (len(fields) == 2 and not fields[1].isdigit()):
            return False
    return True


def _json(path, text):
    """JSON: a file whole within HEAD parses; a longer one (a -dump_beam of many examples) is not
    read through: it begins as JSON does ({ or [)."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body:
        return True
    if os.path.getsize(path) > HEAD:
        return body[0] in "{["
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _yaml_mapping(path, text):
    """A YAML mapping (an options file): whole within HEAD, as an options file is."""
    # yaml only when a YAML file's kind is checked (start-up time)
    import yaml
    if not text.strip():
        return True
    if os.path.getsize(path) > HEAD:
        return False
    try:
        return isinstance(yaml.safe_load(text), dict)
    except (ValueError, yaml.YAMLError):
        return False


def _html(path, text):
    return not text.strip() or text.lstrip().lower().startswith(("<!doctype html", "<html"))


def _npz(path, head):
    if head[:4] != b"PK\x03\x04":
        return not head
    try:
        with zipfile.ZipFile(path) as z:
            return all(n.endswith(".npy") for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


# kind -> (what it is, in the message; the test an existing file passes to be replaced: on the text
# of its head, or None on the bytes of a binary kind)
KINDS = {
    "text": ("a text file", lambda path, text: True),
    "log": ("a log (appended to)", lambda path, text: True),
    "vocabulary": ("a vocabulary", _vocabulary),
    "json": ("a JSON file", _json),
    "yaml": ("a YAML mapping", _yaml_mapping),
    "html": ("an HTML page", _html),
    "dump": ("an -attn_debug dump (.npz)", None),
    "corpus": (f"a corpus of tools/make_toy_data.py (with its {TOY_MARK})", None),
}


def check_replaceable(path, what, kind):
    """UserError naming `what` (e.g. "-json runs/x.json") when the existing regular file `path` is
    not an output of `kind` (KINDS) or is `protected`; nothing for a path that does not exist."""
    if not os.path.isfile(path):
        return
    fix = "give another file, or -overwrite to replace it"
    name, test = KINDS[kind]
    if kind == "corpus":
        if os.path.isfile(os.path.join(os.path.dirname(path), TOY_MARK)):
            return
        raise UserError(f"{what}: {path} exists and is not toy data this tool made (no {TOY_MARK} "
                        f"beside it): it may be a real corpus; {fix}")
    kind_of = protected(path)
    if kind_of:
        raise UserError(f"{what}: {path} exists and is {kind_of}, not {name}: "
                        f"writing it would destroy it; {fix}")
    head = _head(path)
    if test is None:
        if _npz(path, head):
            return
        ok = False
    else:
        text = _text(head)
        ok = text is not None and test(path, text)
    if not ok:
        raise UserError(f"{what}: {path} exists and is not {name}"
                        f"{'' if _text(head) is not None else ' (a binary file)'}: "
                        f"writing it would destroy it; {fix}")
