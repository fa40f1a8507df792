"""Per-example inspection records and the -attn_debug dump.

A record is a dict of plain values (what translate.py -attn_debug writes, what
`Summarizer.summarize(..., return_details=True)` returns, what plots.py draws):

    line     int                 0-based input line
    src      list of str         the source words as the model read them (lowercased / truncated)
    pred     list of str         the predicted words as written (copied OOVs, -replace_unk applied)
    ids      int64 (n,)          the predicted ids in the example's extended vocabulary
    score    float               the hypothesis score (length-penalized sum of log-probabilities)
    attn     float32 (n, s)      encoder attention of each output step over the s source words;
                                 None for a model without attention
    intra    float32 (n, n)      intra-decoder attention, row t over the output steps 0..t-1 (lower
                                 triangle; zero elsewhere); None without intra-decoder attention
    p_copy   float32 (n,)        the pointer's probability at each step; None without a pointer
    copied   bool (n,)           the word is copied: an OOV copy (id >= V_tgt) or p(copy) >= 0.5

n = len(pred) (</s> excluded), s = len(src). Records describe the best hypothesis.

The dump (`write_dump` / `read_dump`) is a numpy .npz archive (no pickled objects: np.load reads
it with the default allow_pickle=False). It holds `format` ("onmt-attn-debug"), `version` (1),
`n_examples`, and per record i (0..n_examples-1, in the order translation finished them; `read_dump`
sorts them by line) the arrays `ex{i}_line`,
`ex{i}_src`, `ex{i}_pred` (unicode string arrays), `ex{i}_ids`, `ex{i}_score`, `ex{i}_copied`, and,
when the model has them, `ex{i}_attn`, `ex{i}_intra`, `ex{i}_p_copy`. For example:

    d = numpy.load("debug.npz"); d["ex0_attn"]  # (n, s) encoder attention of the first example
It is written to a temporary file renamed when complete, one record at a time (records are not
all held in memory).
"""
import zipfile

import numpy as np

from onmt.utils.files import AtomicFile, write_error

DUMP_FORMAT = "onmt-attn-debug"
DUMP_VERSION = 1
ARRAYS = ("attn", "intra", "p_copy")
COPY_THRESHOLD = 0.5


def copied_marks(ids, p_copy, tgt_vocab_size, copy_model=True):
    """The definition of a copied word, used everywhere: (n,) bool, True where the id is an OOV
    copy (>= tgt_vocab_size) or p(copy) >= 0.5. ids: (n,) ints; p_copy: (n,) or None."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if not copy_model:
        return np.zeros(ids.shape, dtype=bool)
    marks = ids >= tgt_vocab_size
    if p_copy is not None:
        marks |= np.asarray(p_copy).reshape(-1) >= COPY_THRESHOLD
    return marks


def _array(t, dtype=np.float32):
    return None if t is None else t.detach().float().cpu().numpy().astype(dtype, copy=False)


def make_record(line, src_words, pred_words, hyp, tgt_vocab_size, copy_model):
    """The record (module docstring) of a search Hypothesis kept with keep_inspection."""
    n, s = len(hyp.tokens), len(src_words)
    extras = hyp.extras or {}
    attn = _array(hyp.attn)
    if attn is not None:
        attn = attn[:n, :s]
    p_copy = _array(extras.get("p_copy"))
    return {
        "line": int(line), "src": list(src_words), "pred": list(pred_words),
        "ids": np.asarray(hyp.tokens, dtype=np.int64), "score": float(hyp.score),
        "attn": attn, "intra": _array(extras.get("intra")), "p_copy": p_copy,
        "copied": copied_marks(hyp.tokens, p_copy, tgt_vocab_size, copy_model),
    }


def empty_record(line, src_words=()):
    """The record of a line the model did not read (an empty source): no prediction."""
    return {"line": int(line), "src": list(src_words), "pred": [],
            "ids": np.zeros(0, dtype=np.int64), "score": 0.0, "attn": None, "intra": None,
            "p_copy": None, "copied": np.zeros(0, dtype=bool)}


def _words(words):
    return np.array(list(words), dtype=np.str_) if words else np.zeros(0, dtype="<U1")


class DumpWriter:
    """Writes records into an .npz one at a time (`add`), on a files.AtomicFile renamed into place
    by `close()`; `abort()` (or leaving a with-block on an exception) removes the temporary file."""

    def __init__(self, path):
        self.path, self.what = path, f"-attn_debug {path}"
        self._out = AtomicFile(path, self.what, binary=True)
        try:
            self._zip = zipfile.ZipFile(self._out.file, "w", compression=zipfile.ZIP_DEFLATED,
                                        allowZip64=True)
        except BaseException:
            self._out.discard()
            raise
        self.n = 0

    def _put(self, name, array):
        try:
            with self._zip.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(array), allow_pickle=False)
        # a full disk: one line (the with-block's abort removes the file)
        except OSError as e:
            raise write_error(self.path, e, self.what) from None

    def add(self, record):
        i = self.n
        self._put(f"ex{i}_line", np.int64(record["line"]))
        self._put(f"ex{i}_src", _words(record["src"]))
        self._put(f"ex{i}_pred", _words(record["pred"]))
        self._put(f"ex{i}_ids", np.asarray(record["ids"], dtype=np.int64))
        self._put(f"ex{i}_score", np.float64(record["score"]))
        self._put(f"ex{i}_copied", np.asarray(record["copied"], dtype=bool))
        for key in ARRAYS:
            if record.get(key) is not None:
                self._put(f"ex{i}_{key}", np.asarray(record[key], dtype=np.float32))
        self.n += 1

    def close(self):
        """Complete the file and rename it into place; a failure (a full disk) removes it and is one
        UserError naming the file."""
        try:
            self._put("format", np.str_(DUMP_FORMAT))
            self._put("version", np.int64(DUMP_VERSION))
            self._put("n_examples", np.int64(self.n))
            self._zip.close()
        except BaseException as e:
            self.abort()
            if isinstance(e, OSError):
                raise write_error(self.path, e, self.what) from None
            raise
        self._out.commit()        # a failure removes the file too

    def abort(self):
        try:
            self._zip.close()
        except OSError:
            pass
        self._out.discard()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *rest):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def write_dump(path, records):
    """Write `records` (an iterable of records) to the .npz `path` atomically."""
    with DumpWriter(path) as w:
        for r in records:
            w.add(r)


def read_dump(path):
    """The records of a dump, in input-line order. Raises ValueError on a file that is not one."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path} is not an -attn_debug dump ({e})") from None
    with data:
        if "format" not in data.files or str(data["format"]) != DUMP_FORMAT:
            raise ValueError(f"{path} is not an -attn_debug dump")
        records = []
        for i in range(int(data["n_examples"])):
            rec = {"line": int(data[f"ex{i}_line"]), "src": data[f"ex{i}_src"].tolist(),
                   "pred": data[f"ex{i}_pred"].tolist(), "ids": data[f"ex{i}_ids"],
                   "score": float(data[f"ex{i}_score"]), "copied": data[f"ex{i}_copied"]}
            for key in ARRAYS:
                name = f"ex{i}_{key}"
                rec[key] = data[name] if name in data.files else None
            records.append(rec)
        return sorted(records, key=lambda r: r["line"])
