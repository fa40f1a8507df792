"""docs/upstream.md's migration table is tools/upstream_table.py's output, pasted between its markers: a
change of the code's lists of upstream options and config keys (onmt/opts/parse.py's UPSTREAM_OPTIONS,
onmt/opts/upstream_config.py's, the parsers' OpenNMT-py options) fails here until the table is pasted again."""
import os

from helpers.paths import ROOT, load_module

DOC = os.path.join(ROOT, "docs", "upstream.md")


def _tool():
    return load_module("tools/upstream_table.py", "upstream_table")


def _doc_table(tool):
    text = open(DOC, encoding="utf-8").read()
    assert text.count(tool.START) == 1 and text.count(tool.END) == 1, f"{DOC}: one pair of table markers"
    return text.split(tool.START, 1)[1].split(tool.END, 1)[0].strip("\n")


def test_the_docs_table_is_the_tools_output():
    tool = _tool()
    assert _doc_table(tool) == tool.table(), (
        "docs/upstream.md's migration table differs from the code's lists: paste the output of "
        "`python tools/upstream_table.py` between its markers")


def test_every_kind_of_row_is_there():
    tool = _tool()
    rows = {line.split(" | ")[0].strip("| `"): line for line in tool.table().split("\n")[2:]}
    assert "here as `-rnn_size` (the same option)" in rows["-hidden_size"]    # an alias
    assert "here as `-brnn`" in rows["-encoder_type"]                         # stored into another option
    assert rows["-reuse_copy_attn"].split(" | ")[2].startswith("ignored (")   # accepted, changes nothing
    assert rows["-heads"].split(" | ")[2].startswith("refused (")             # UPSTREAM_OPTIONS, no counterpart
    assert "here as `-gpu`" in rows["-gpuid"]                                 # UPSTREAM_OPTIONS, renamed
    assert rows["transforms"].split(" | ")[2].startswith("ignored (")         # upstream_config.WHY_DROPPED
    assert rows["src_seq_length_trunc"].split(" | ")[2].startswith("same here")   # upstream_config.DATA_KEYS
    assert "any other key" in rows


def test_the_tool_prints_the_table(capsys):
    tool = _tool()
    tool.main([])
    assert capsys.readouterr().out == tool.table() + "\n"
