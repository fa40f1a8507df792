"""Vocabulary building from word counts, its files, and `load_vocabs` for the later stages.

Word lists are ordered by decreasing count, ties broken by the word itself (code-point order), so
the result does not depend on the order the corpus was read in (nor on the number of workers).
With `share_vocab`, ONE list is built from the source and target counts added together; the source
vocabulary is its first `src_vocab_size` entries and the target vocabulary its first
`tgt_vocab_size` entries (a prefix: same ids in both). Min-frequency cuts are prefix cuts of the
same list.
"""
import hashlib
import json
import os
from collections import Counter

from onmt.constants import N_SPECIALS, SPECIALS
from onmt.errors import UserError
from onmt.inputters.dataset_swap import finish_or_remove_dead_stages
from onmt.inputters.vocab import Vocab, Vocabs, read_vocab_file, write_vocab_file
from onmt.utils.files import write_text_atomic


def drop_specials(counter):
    """Remove the special-token strings from a Counter (they are never counted as words)."""
    for w in SPECIALS:
        counter.pop(w, None)
    return counter


def ranked_words(counter):
    """[(word, count)] by decreasing count, ties by word."""
    items = list(counter.items())
    items.sort(key=lambda wc: wc[0])
    items.sort(key=lambda wc: wc[1], reverse=True)     # stable: ties stay in word order
    return items


def _top_words(ranked, size, min_freq):
    """The first entries of `ranked` that fit `size` (specials included) and reach `min_freq`."""
    keep = max(0, size - N_SPECIALS)
    out = ranked[:keep]
    if min_freq > 1:
        lo, hi = 0, len(out)                           # counts are non-increasing: binary search
        while lo < hi:
            mid = (lo + hi) // 2
            if out[mid][1] >= min_freq:
                lo = mid + 1
            else:
                hi = mid
        out = out[:lo]
    return out


def read_word_list(path):
    """-src_vocab / -tgt_vocab (OpenNMT-py's): [(word, count)] of a file with one word a line,
    optionally followed by its count (`word count` or `word<TAB>count`, e.g. a vocabulary file of
    this project or of OpenNMT-py); count 0 where none is given. Kept in the file's order, first
    occurrence of a word; the special tokens and empty lines are skipped (the specials always come
    first, with fixed ids)."""
    out, seen = [], set(SPECIALS)
    try:
        return _read_word_list(path, out, seen)
    except UnicodeDecodeError as e:
        raise UserError(f"{path} is not UTF-8 text ({e.reason}): a word list is UTF-8") from None


def _read_word_list(path, out, seen):
    with open(path, encoding="utf-8-sig") as f:   # a byte-order mark is not part of the first word
        for lineno, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
                raise UserError(f"{path}, line {lineno}: expected 'word' or 'word count', "
                                f"got {line.strip()!r}")
            word = parts[0]
            if word in seen:
                continue
            seen.add(word)
            out.append((word, int(parts[1]) if len(parts) == 2 else 0))
    return out


def _first_words(words, size):
    """A given word list cut to `size` entries (specials included); min-frequency does not apply."""
    return words[:max(0, size - N_SPECIALS)]


def build_vocabs(src_counts, tgt_counts, src_vocab_size, tgt_vocab_size, share_vocab,
                 src_min_freq=0, tgt_min_freq=0, src_words=None, tgt_words=None):
    """-> (Vocabs, {"src": counts list, "tgt": counts list}) from Counters of the training data.

    With share_vocab, `tgt_counts` may be None when `src_counts` already holds both sides.
    src_words / tgt_words: a given word list ([(word, count)], read_word_list) for that side, taken
    in its order and cut to the vocabulary size only (with share_vocab: src_words is the shared
    list).
    """
    if share_vocab:
        if src_words is not None:
            src_list = _first_words(src_words, src_vocab_size)
            tgt_list = _first_words(src_list, tgt_vocab_size)
        else:
            total = Counter(src_counts)
            if tgt_counts is not None:
                total.update(tgt_counts)
            ranked = ranked_words(drop_specials(total))
            src_list = _top_words(ranked, src_vocab_size, src_min_freq)
            tgt_list = _top_words(src_list, tgt_vocab_size, tgt_min_freq)
    else:
        src_list = (_first_words(src_words, src_vocab_size) if src_words is not None else
                    _top_words(ranked_words(drop_specials(Counter(src_counts))), src_vocab_size,
                               src_min_freq))
        tgt_list = (_first_words(tgt_words, tgt_vocab_size) if tgt_words is not None else
                    _top_words(ranked_words(drop_specials(Counter(tgt_counts))), tgt_vocab_size,
                               tgt_min_freq))
    src = Vocab(SPECIALS + [w for w, _ in src_list])
    tgt = Vocab(SPECIALS + [w for w, _ in tgt_list])
    counts = {"src": [0] * N_SPECIALS + [c for _, c in src_list],
              "tgt": [0] * N_SPECIALS + [c for _, c in tgt_list]}
    return Vocabs(src, tgt, share_vocab), counts


# ---------------------------------------------------------------------------- files
def vocab_paths(save_data, shared):
    if shared:
        return {"shared": save_data + ".vocab.txt"}
    return {"src": save_data + ".src.vocab.txt", "tgt": save_data + ".tgt.vocab.txt"}


def meta_path(save_data):
    return save_data + ".meta.json"


def save_vocabs(save_data, vocabs, counts):
    """Write `P.vocab.txt` (shared) or `P.src.vocab.txt` + `P.tgt.vocab.txt`; returns the paths."""
    paths = vocab_paths(save_data, vocabs.shared)
    if vocabs.shared:
        write_vocab_file(paths["shared"], vocabs.src.itos, counts["src"])
    else:
        write_vocab_file(paths["src"], vocabs.src.itos, counts["src"])
        write_vocab_file(paths["tgt"], vocabs.tgt.itos, counts["tgt"])
    return paths


def file_sha1(path):
    """The SHA-1 of a file's bytes (hex): meta.json records its vocabulary files' (`vocab_sha1`)."""
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path, obj):
    """`obj` as indented JSON (UTF-8, not escaped) to `path`, whole or not at all."""
    write_text_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def load_meta(save_data):
    path = meta_path(save_data)
    # a preprocessing run killed inside its swap: finish it (dataset_swap.py)
    if not os.path.isfile(path):
        if os.path.isdir(os.path.dirname(os.path.abspath(save_data))):
            finish_or_remove_dead_stages(save_data)
    if not os.path.isfile(path) and os.path.isdir(save_data):
        found = sorted(p[:-len(".meta.json")] for p in os.listdir(save_data)
                       if p.endswith(".meta.json"))
        hint = (f"give -data {os.path.join(save_data, found[0])}" if len(found) == 1 else
                f"give one of {', '.join(os.path.join(save_data, f) for f in found[:3])}" if found
                else "no preprocessed data there: run preprocess.py first")
        raise UserError(f"-data {save_data} is a folder; -data takes the prefix given to "
                        f"preprocess.py -save_data ({hint})")
    if not os.path.isfile(path):
        raise UserError(f"{path} not found: run preprocess.py first (-save_data {save_data})")
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path} ({e}): run preprocess.py again") from None
    problem = meta_problem(meta)
    if problem:
        raise UserError(f"{path} is damaged ({problem}): run preprocess.py again")
    return meta


def meta_problem(meta):
    """What is wrong with the fields of a meta.json that the readers use (a hand edit, another
    tool's file); None when nothing is. A field that older versions did not write may be missing."""
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    def names_list(v):
        return isinstance(v, list) and all(isinstance(n, str) and n and os.path.basename(n) == n
                                           for n in v)
    if not isinstance(meta, dict):
        return f"a JSON {type(meta).__name__}, not an object"
    for key, ok, what in (
            ("share_vocab", lambda v: isinstance(v, bool), "true or false"),
            ("src_vocab_size", lambda v: is_int(v) and v > 0, "a positive integer"),
            ("tgt_vocab_size", lambda v: is_int(v) and v > 0, "a positive integer"),
            ("shards", lambda v: isinstance(v, dict) and all(names_list(x) for x in v.values()),
             "an object of lists of file names")):
        if key not in meta:
            return f"no \"{key}\""
        if not ok(meta[key]):
            return f"\"{key}\" should be {what}, got {json.dumps(meta[key])[:80]}"
    for key, ok, what in (
            ("dynamic_dict", lambda v: isinstance(v, bool), "true or false"),
            ("lower", lambda v: isinstance(v, bool), "true or false"),
            ("shard_sizes", lambda v: isinstance(v, dict) and all(
                isinstance(x, list) and all(is_int(n) and n >= 0 for n in x) for x in v.values()),
             "an object of lists of example counts"),
            ("summary", lambda v: isinstance(v, dict) and all(
                isinstance(x, dict) for x in v.values()),
             "an object of objects"),
            ("vocab_sha1", lambda v: isinstance(v, dict) and all(
                isinstance(x, str) for x in v.values()),
             "an object of strings"),
            ("run_id", lambda v: isinstance(v, str), "a string"),
            ("text", lambda v: isinstance(v, dict), "an object"),
            *((k, lambda v: is_int(v) and v >= 0, "an integer >= 0") for k in (
                "src_seq_length", "tgt_seq_length", "src_seq_length_trunc",
                "tgt_seq_length_trunc"))):
        if key in meta and meta[key] is not None and not ok(meta[key]):
            return f"\"{key}\" should be {what}, got {json.dumps(meta[key])[:80]}"
    sizes = meta.get("shard_sizes") or {}
    for split, names in meta["shards"].items():
        if split in sizes and len(sizes[split]) != len(names):
            return f"{len(names)} {split} shards but {len(sizes[split])} sizes"
    return None


def load_vocabs(save_data):
    """-> (Vocabs, meta dict) written by preprocess with prefix `save_data`."""
    meta = load_meta(save_data)
    shared = bool(meta["share_vocab"])
    paths = vocab_paths(save_data, shared)
    for name, p in paths.items():
        if not os.path.isfile(p):
            raise UserError(f"{p} not found: run preprocess.py first (-save_data {save_data})")
        recorded = meta.get("vocab_sha1", {}).get(name)   # data of older versions has no record
        if recorded is not None and file_sha1(p) != recorded:
            raise UserError(f"{p} was changed after preprocessing (it no longer matches "
                            f"{meta_path(save_data)}): its words would not be the ones the shards "
                            "were numbered with; run preprocess.py again (to train with a word "
                            "list of your own, give it as -src_vocab)")
    try:
        if shared:
            src = read_vocab_file(paths["shared"], meta["src_vocab_size"])
            tgt = src.prefix(meta["tgt_vocab_size"])
        else:
            src = read_vocab_file(paths["src"], meta["src_vocab_size"])
            tgt = read_vocab_file(paths["tgt"], meta["tgt_vocab_size"])
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"bad vocabulary file for {save_data} ({e}): "
                        "run preprocess.py again") from None
    if len(src) != meta["src_vocab_size"] or len(tgt) != meta["tgt_vocab_size"]:
        raise UserError(f"vocabulary files of {save_data} do not match its meta.json: "
                        "run preprocess.py again")
    return Vocabs(src, tgt, shared), meta


def shard_paths(save_data, meta, split):
    """Full paths of the shards of `split` ("train" / "valid") listed in meta.json."""
    folder = os.path.dirname(save_data)
    return [os.path.join(folder, name) for name in meta["shards"].get(split, [])]


# The preprocessing options that shape what a model sees as input; the checkpoint keeps them
# ("preprocess") so that translation can prepare its input the same way.
INPUT_OPTIONS = ("lower", "src_seq_length_trunc", "tgt_seq_length_trunc", "src_seq_length",
                 "tgt_seq_length",
                 # text: prepare's record ({"tokenize": "ptb", "lower": true}) when the data came
                 # from it
                 "text")


def text_record(train_src):
    """The record `prepare.json` beside a training source written by the prepare tools (how the text
    was tokenized and cased), or None where there is none. A record that cannot be read is a
    UserError naming it: dropped, the model would later get raw text untokenized and uncased at
    translation."""
    path = os.path.join(os.path.dirname(os.path.abspath(train_src)), "prepare.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"{path} (how the prepare tools made the text beside it) cannot be read: "
                        f"{str(e).splitlines()[0] if str(e) else type(e).__name__}; repair it, "
                        "or remove it if the text was not made by onmt_prepare_*") from None
    if not isinstance(record, dict) or record.get("tokenize") not in ("ptb", "none") or \
            not isinstance(record.get("lower", False), bool) or record.get("digits", "#") != "#":
        raise UserError(f"{path}: expected {{\"tokenize\": \"ptb\" or \"none\", "
                        f"\"lower\": true or false}} (and \"digits\": \"#\" where digits are "
                        f"masked), got {json.dumps(record)[:200]}")
    out = {"tokenize": record["tokenize"], "lower": record.get("lower", False)}
    if "digits" in record:
        out["digits"] = record["digits"]
    return out


def input_options(meta):
    """{name: value} of INPUT_OPTIONS recorded in `meta` (older meta.json files lack some)."""
    return {k: meta[k] for k in INPUT_OPTIONS if k in meta}


# A length limit above this many tokens means the data had none (configs use 100000 to switch the
# drop filter off).
NO_LIMIT_ABOVE = 1000


def target_length_limit(meta, default=100):
    """The longest target the data allows: its truncation, else its length limit (either one if at
    most NO_LIMIT_ABOVE), else `default`. `meta`: meta.json or a checkpoint's "preprocess"
    record."""
    for key in ("tgt_seq_length_trunc", "tgt_seq_length"):
        n = int(meta.get(key, 0) or 0)
        if 0 < n <= NO_LIMIT_ABOVE:
            return n
    return default
