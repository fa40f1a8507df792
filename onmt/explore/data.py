"""The explorer's input and the data its page embeds.

    systems = [read_system(path, sources) for path in paths]
        # a dump of translate.py -attn_debug, or
        # a prediction file, one summary a line
    scores = [rouge_f1(s["preds"], refs) for s in systems]      # (n, 3) per system
    data = page_data(sources, refs, systems, names, scores)     # what the page's JSON holds (below)
    figures, pair = corpus_figures(names, sources, refs, systems, scores)
        # the summary panel's numbers

The page's JSON: {"systems": [name, ...], "metrics": ["R1", "R2", "RL"],
"articles": [article, ...]}, an article being {"s": source words, "r": reference words, "rm": the
reference's marks, "o": the share of reference words found in the source (%), "y": [one per system:
{"w": summary words, "m": its marks, "f": [ROUGE-1, ROUGE-2, ROUGE-L F1 x 100], and from a dump "a":
encoder attention, "i": intra-decoder attention (marks.sparse_rows), "p": p(copy) per word in %}]}.
Marks are marks.word_marks's digits.
"""
import os

from onmt.errors import UserError
from onmt.evaluation import score
from onmt.evaluation.bootstrap import confidence_intervals, paired_test
from onmt.evaluation.breakdown import reference_overlap
from onmt.evaluation.diagnostics import summary_diagnostics
from onmt.explore.marks import SOURCE, percents, sparse_rows, word_marks
from onmt.inputters.corpus import read_lines
from onmt.translate.records import read_dump

METRIC_NAMES = ("R1", "R2", "RL")
ZIP_MAGIC = b"PK\x03\x04"


def is_dump(path):
    """Whether `path` is a zip archive (an .npz dump) rather than a text file of predictions."""
    with open(path, "rb") as f:
        return f.read(4) == ZIP_MAGIC


def read_text(path, what):
    return list(read_lines(path, what, strip_cr=True))


def read_system(path, sources):
    """{"path", "preds": word lists, "records": the dump's records in line order, or None}.
    `sources`: the source lines. A dump must hold one record per source line whose source words
    begin that line."""
    what = f"-system {path}"
    if not os.path.isfile(path):
        raise UserError(f"{what}: no such file")
    if not is_dump(path):
        lines = read_text(path, what)
        if len(lines) != len(sources):
            raise UserError(f"{what} has {len(lines)} lines but -src has {len(sources)}")
        return {"path": path, "preds": [line.split() for line in lines], "records": None}
    records = read_checked_dump(path, what)
    if len(records) != len(sources) or [r["line"] for r in records] != list(range(len(sources))):
        raise UserError(f"{what} holds {len(records)} examples (lines "
                        f"{records[0]['line'] if records else '-'}.."
                        f"{records[-1]['line'] if records else '-'}) but -src has {len(sources)} "
                        "lines: give the dump of this -src")
    for r in records:
        words = sources[r["line"]].split()
        if r["src"] != words[:len(r["src"])]:
            raise UserError(f"{what}: line {r['line'] + 1}: the dump's source is not -src's line "
                            f"{r['line'] + 1} (give the -src the model translated, "
                            "prepared as it read it)")
    return {"path": path, "preds": [list(r["pred"]) for r in records], "records": records}


def read_checked_dump(path, what):
    """The records of the -attn_debug dump `path` (translate/records.py read_dump), each array of
    the shape its words give it; a file that is no dump, a missing key or a wrongly shaped array is
    one UserError naming `what` (e.g. "-system d.npz"), the example's line and the key. The
    explorer and tools/plot_attention.py read dumps through here."""
    try:
        records = read_dump(path)
    except KeyError as e:
        key = str(e.args[0] if e.args else e).split(" ")[0]
        raise UserError(f"{what}: not a complete -attn_debug dump: no {key}") from None
    except (ValueError, TypeError, IndexError) as e:
        raise UserError(f"{what}: {e}") from None
    for r in records:
        n, s = len(r["pred"]), len(r["src"])
        for key, shape in (("attn", (n, s)), ("intra", (n, n)), ("p_copy", (n,)), ("copied", (n,))):
            if r[key] is not None and tuple(r[key].shape) != shape:
                raise UserError(f"{what}: line {r['line'] + 1}: {key} has shape "
                                f"{tuple(r[key].shape)}, expected {shape} ({n} summary words, "
                                f"{s} source words)")
    return records


def system_names(paths, names=None):
    """The systems' names: `names` when given, else the shortest unique tail of each path without
    its extension (test, or a1/test and b1/test)."""
    if names:
        return list(names)
    stems = [os.path.splitext(os.path.normpath(p))[0].split(os.sep) for p in paths]
    for k in range(1, max(len(s) for s in stems) + 1):
        tails = ["/".join(s[-k:]) for s in stems]
        if len(set(tails)) == len(tails):
            return tails
    return [f"system {i + 1}" for i in range(len(paths))]


def rouge_f1(preds, refs):
    """(n, 3) float: ROUGE-1, ROUGE-2, ROUGE-L F1 x 100 of each summary (word lists) against its
    reference."""
    scores = score([" ".join(p) for p in preds], refs)   # (n, 4, 3): METRICS x P/R/F
    return scores[:, :3, 2] * 100


def _system_entry(words, source_words, record, f1):
    entry = {"w": words,
             "m": word_marks(words, source_words, None if record is None else record["copied"]),
             "f": [round(float(x), 1) for x in f1]}
    if record is not None:
        for key, value in (("a", sparse_rows(record["attn"])), ("i", sparse_rows(record["intra"])),
                           ("p", percents(record["p_copy"]))):
            if value is not None:
                entry[key] = value
    return entry


def page_data(sources, refs, systems, names, f1):
    """The page's JSON (module docstring) for source and reference lines, the read systems, their
    names and their per-article scores (rouge_f1)."""
    articles = []
    for i, (src, ref) in enumerate(zip(sources, refs)):
        src_words, ref_words = src.split(), ref.split()
        vocab = set(src_words)
        articles.append({
            "s": src_words, "r": ref_words,
            "rm": "".join(str(SOURCE) if w in vocab else "0" for w in ref_words),
            "o": round(100 * reference_overlap(src, ref), 1),
            "y": [_system_entry(s["preds"][i], src_words, s["records"][i] if s["records"] else None,
                                f1[k][i])
                  for k, s in enumerate(systems)]})
    return {"systems": list(names), "metrics": list(METRIC_NAMES), "articles": articles}


def corpus_figures(names, sources, refs, systems, f1, samples=1000, seed=1):
    """Per system {"name", "rouge": {metric: [mean, low, high]}, "length", "ref_length",
    "repeated_trigrams", "novel_bigrams", "copy_share" (dumps only, else None)}; and for the first
    two systems the paired test {"a", "b", "delta": {metric: a - b},
    "p": {metric: p-value of a > b}}, or None for one system."""
    out = []
    for name, s, scores in zip(names, systems, f1):
        lo, hi = confidence_intervals(scores, samples, seed)
        copied = [r["copied"] for r in s["records"]] if s["records"] else None
        diag = summary_diagnostics([" ".join(p) for p in s["preds"]], sources, refs, copied)
        out.append({"name": name, "path": s["path"],
                    "rouge": {m: [float(scores[:, j].mean()) if len(scores) else 0.0,
                                  float(lo[j]), float(hi[j])]
                              for j, m in enumerate(METRIC_NAMES)},
                    "copy_share": diag.get("copy_share"),
                    **{key: diag[key]
                       for key in ("length", "ref_length", "repeated_trigrams", "novel_bigrams")}})
    pair = None
    if len(systems) >= 2:
        p = paired_test(f1[0], f1[1], samples, seed)
        pair = {"a": out[0]["name"], "b": out[1]["name"],
                "delta": {m: out[0]["rouge"][m][0] - out[1]["rouge"][m][0] for m in METRIC_NAMES},
                "p": {m: float(p[j]) for j, m in enumerate(METRIC_NAMES)}}
    return out, pair
