"""Rows of a Hugging Face export (onmt/prepare/tables.py): JSON lines, CSV and Parquet give the same
tuples of the named text columns, and a malformed file is one line naming the file and the place."""
import gzip
import json

import pytest

from onmt.errors import UserError
from onmt.prepare.tables import read_rows

ROWS = [{"id": "1", "article": "a long, \"quoted\"\ntext é", "highlights": "h1"},
        {"id": "2", "article": "x" * 200_000, "highlights": ""}]   # longer than csv's default field limit
WANT = [(r["article"], r["highlights"]) for r in ROWS]


def write_jsonl(path, rows):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n\n")             # blank lines are skipped


def write_csv(path, rows, header=("id", "article", "highlights"), bom=True):
    import csv
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(h, "") for h in header])


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.json.gz", "rows.csv", "rows.parquet"])
def test_every_format_gives_the_same_rows(tmp_path, name):
    path = tmp_path / name
    if "json" in name:
        write_jsonl(path, ROWS)
    elif name.endswith(".csv"):
        write_csv(path, ROWS)
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq
        pq.write_table(pa.table({k: [r[k] for r in ROWS] for k in ROWS[0]}), path)
    assert list(read_rows(str(path), ("article", "highlights"))) == WANT


def test_malformed_json_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROWS, indent=1))      # a JSON array over several lines
    with pytest.raises(UserError, match=r"line 1 is not a JSON object: .*\(a JSON array\? export with"):
        list(read_rows(str(path), ("article",)))
    path.write_text('{"article": "a"}\n[1]\n')
    with pytest.raises(UserError, match="line 2 is not a JSON object$"):
        list(read_rows(str(path), ("article",)))
    path.write_text('{"article": "a"}\n')
    with pytest.raises(UserError, match=r"line 1 has no 'highlights' \(it has: article\)"):
        list(read_rows(str(path), ("article", "highlights")))
    path.write_text('{"article": 3}\n')
    with pytest.raises(UserError, match="line 1: column 'article' is not text"):
        list(read_rows(str(path), ("article",)))
    path.write_text('{"article": null}\n')
    assert list(read_rows(str(path), ("article",))) == [("",)]


def test_malformed_csv(tmp_path):
    path = tmp_path / "rows.csv"
    write_csv(path, ROWS, header=("id", "article"))
    with pytest.raises(UserError, match=r"no column 'highlights' in the header \(id, article\)"):
        list(read_rows(str(path), ("article", "highlights")))
    path.write_text("article,highlights\na,b,c\n")
    with pytest.raises(UserError, match="row 2 has 3 fields, the header 2"):
        list(read_rows(str(path), ("article", "highlights")))
    path.write_text("")
    with pytest.raises(UserError, match="empty CSV file"):
        list(read_rows(str(path), ("article",)))
    path.write_bytes(b"article\n\xff\xfe\n")
    with pytest.raises(UserError, match="not valid UTF-8"):
        list(read_rows(str(path), ("article",)))


def test_malformed_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"article": ["a"]}), path)
    with pytest.raises(UserError, match=r"no column 'highlights' \(it has: article\)"):
        list(read_rows(str(path), ("article", "highlights")))
    path.write_text("not parquet")
    with pytest.raises(UserError, match="cannot read as Parquet"):
        list(read_rows(str(path), ("article",)))
