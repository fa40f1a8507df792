"""Rows of a Hugging Face dataset exported with `Dataset.to_json` (JSON lines), `to_csv` or
`to_parquet`, streamed: `read_rows(path, columns)` yields one tuple of the named text columns per
row.
"""
import csv
import io
import json
import sys

from onmt.errors import UserError
from onmt.inputters.corpus import read_lines
from onmt.prepare.text import open_binary


def read_rows(path, columns):
    """Yield tuples of the `columns` (strings) of each row of a .jsonl / .json / .csv / .parquet
    file."""
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(".parquet"):
        return _parquet(path, columns)
    if name.endswith(".csv"):
        return _csv(path, columns)
    return _jsonl(path, columns)


def _text(value, path, where, column):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UserError(f"{path}: {where}: column '{column}' is not text")
    return value


def _jsonl(path, columns):
    for n, line in enumerate(read_lines(path, strip_cr=True), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            hint = (" (a JSON array? export with Dataset.to_json, which writes JSON lines)"
                    if n == 1 and line.lstrip().startswith("[") else "")
            raise UserError(f"{path}: line {n} is not a JSON object: {e.msg}{hint}") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}: line {n} is not a JSON object")
        missing = [c for c in columns if c not in row]
        if missing:
            raise UserError(f"{path}: line {n} has no '{missing[0]}' (it has: {', '.join(row)})")
        yield tuple(_text(row[c], path, f"line {n}", c) for c in columns)


def _csv(path, columns):
    old = csv.field_size_limit()
    # an article is longer than the default 128k
    csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))
    try:
        with open_binary(path) as raw:
            f = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            try:
                reader = csv.reader(f)
                header = next(reader, None)
                if header is None:
                    raise UserError(f"{path}: empty CSV file (no header)")
                missing = [c for c in columns if c not in header]
                if missing:
                    raise UserError(f"{path}: no column '{missing[0]}' in the header "
                                    f"({', '.join(header)})")
                idx = [header.index(c) for c in columns]
                for row in reader:
                    if not row:
                        continue
                    if len(row) != len(header):
                        raise UserError(f"{path}: row {reader.line_num} has {len(row)} fields, "
                                        f"the header {len(header)}")
                    yield tuple(row[i] for i in idx)
            except UnicodeDecodeError:
                raise UserError(f"{path}: not valid UTF-8 "
                                f"(near row {reader.line_num + 1})") from None
            except csv.Error as e:
                raise UserError(f"{path}: bad CSV near line {reader.line_num}: {e}") from None
    finally:
        csv.field_size_limit(old)


def _parquet(path, columns):
    try:
        # pyarrow is optional (pip install .[parquet]): only Parquet input needs it
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(f"{path}: reading Parquet needs pyarrow: pip install .[parquet]") from None
    import pyarrow
    try:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
        missing = [c for c in columns if c not in names]
        if missing:
            raise UserError(f"{path}: no column '{missing[0]}' (it has: {', '.join(names)})")
        n = 0
        for batch in pf.iter_batches(batch_size=1024, columns=list(columns)):
            cols = [batch.column(c).to_pylist() for c in columns]
            for row in zip(*cols):
                n += 1
                yield tuple(_text(v, path, f"row {n}", c) for v, c in zip(row, columns))
    except (pyarrow.ArrowException, OSError) as e:
        if isinstance(e, (FileNotFoundError, PermissionError)):
            raise
        raise UserError(f"{path}: cannot read as Parquet: "
                        f"{str(e).splitlines()[0] if str(e) else e}") from None
