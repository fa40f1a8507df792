#!/usr/bin/env python
"""Print the migration table of docs/upstream.md: each upstream OpenNMT-py option and config key this
project knows of -> "same here", "here as X", "refused (why)" or "ignored (why)", as a markdown table.

    python tools/upstream_table.py            # the table, as docs/upstream.md holds it between its markers

The rows come from the code's own lists, so they cannot go stale:
- the options of train.py, preprocess.py, translate.py and onmt_build_vocab whose parser says they are
  OpenNMT-py's (the group "Model, OpenNMT-py's options", or a help text naming OpenNMT-py or upstream as
  their origin): an alias name is "here as" its option, an option stored into another one (-encoder_type)
  is "here as" that one, an option "accepted" that changes nothing is "ignored", the others "same here";
- onmt/opts/parse.py's UPSTREAM_OPTIONS: upstream options that are not options here, refused in one line
  that names the option to use instead, or says there is none;
- onmt/opts/upstream_config.py's lists for an OpenNMT-py 3.x -config: its corpora keys (CORPUS_KEYS), the
  dataset settings (DATA_KEYS), the keys with one possible value (ONLY_CHOICE) and the keys read and
  dropped (WHY_DROPPED, and any other key of a corpus entry).
tests/unit/test_upstream_table.py fails when docs/upstream.md's table differs from this output.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from onmt import opts  # noqa: E402
from onmt.opts import upstream_config  # noqa: E402
from onmt.opts.parse import UPSTREAM_OPTIONS  # noqa: E402

START, END = "<!-- upstream-table:start -->", "<!-- upstream-table:end -->"
COMMANDS = (("train.py", opts.train_parser), ("preprocess.py", opts.preprocess_parser),
            ("translate.py", opts.translate_parser), ("onmt_build_vocab", opts.build_vocab_parser))
# a help text that names OpenNMT-py (or upstream) as the option's origin
UPSTREAM_HELP = re.compile(r"OpenNMT-py's(:| name| flag| schedules| default|\))|as in OpenNMT-py|as upstream's"
                           r"|accepted for OpenNMT-py's configs")
UPSTREAM_GROUP = "OpenNMT-py's options"
IGNORED_HELP = re.compile(r"^accepted(,| for OpenNMT-py's configs)")


def _cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def _upstream_actions():
    """(name, the action, the commands that have it) of every option a parser marks as OpenNMT-py's; an
    option that means something else in another command (-overwrite: ignored by preprocess.py, the output
    rule's way out elsewhere) gets a row per meaning."""
    found = {}
    for command, make in COMMANDS:
        parser = make()
        for group in parser._action_groups:
            for action in group._group_actions:
                names = [s for s in action.option_strings if not s.startswith("--")]
                if not names or not (UPSTREAM_GROUP in (group.title or "") or UPSTREAM_HELP.search(action.help or "")):
                    continue
                entry = found.setdefault((names[0], action.help), [action, []])
                entry[1].append(command)
    for (name, _), (action, commands) in found.items():
        if "onmt_build_vocab" in commands and "train.py" in commands:
            commands.remove("onmt_build_vocab")   # onmt_build_vocab reads train.py's options
        yield name, action, commands


def option_rows():
    rows = []
    for name, action, commands in _upstream_actions():
        names = [s for s in action.option_strings if not s.startswith("--")]
        where, help_ = ", ".join(commands), _cell(action.help or "")
        for alias in names[1:]:
            rows.append((alias, where, f"here as `{name}` (the same option): {help_}"))
        if name.lstrip("-") != action.dest:
            rows.append((name, where, f"here as `-{action.dest}`: {help_}"))
        elif IGNORED_HELP.search(action.help or ""):
            rows.append((name, where, f"ignored ({help_})"))
        else:
            rows.append((name, where, f"same here: {help_}"))
    for bare, (here, what) in UPSTREAM_OPTIONS.items():
        if here:
            rows.append((f"-{bare}", "any command", f"here as `{here}` ({_cell(what)}); `-{bare}` itself is refused "
                                                   f"in one line naming `{here}`"))
        else:
            rows.append((f"-{bare}", "any command", f"refused ({_cell(what)}), in one line"))
    return sorted(rows, key=lambda r: r[0].lstrip("-"))


def config_rows():
    corpus = "same here: a corpus (NAME `valid`: the validation corpus; several training corpora are concatenated)"
    rows = [("data: NAME: " + key, "-config", corpus) for key in upstream_config.CORPUS_KEYS]
    for key, here in upstream_config.DATA_KEYS.items():
        what = "same here" if key == here else f"here as `{here}`"
        rows.append((key, "-config", f"{what}: preprocess.py's `-{here}` for the dataset train.py builds"))
    for key, only in upstream_config.ONLY_CHOICE.items():
        rows.append((key, "-config", f"same here for `{only}`, the only one here; another value is refused"))
    for key, why in upstream_config.WHY_DROPPED.items():
        rows.append((key, "-config", f"ignored ({_cell(why)}; one log line names it)"))
    other = upstream_config.ignored({"data": {"c": {"path_src": "s", "path_tgt": "t", "KEY": 1}}})[0]
    why = other[len("KEY ("):-1]
    rows.append(("data: NAME: any other key", "-config", f"ignored ({_cell(why)}; one log line names it)"))
    rows.sort(key=lambda r: (not r[0].startswith("data:"), "any other" in r[0], r[0]))
    rows.append(("any other key", "-config", "read as the command-line option of its name (the options above, with "
                                             "their checks): an unknown key is refused in one line naming the file "
                                             "and the closest names"))
    return rows


def table():
    lines = ["| upstream | in | here |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {where} | {here} |" for name, where, here in option_rows()]
    lines += [f"| `{name}` | {where} | {here} |" for name, where, here in config_rows()]
    return "\n".join(lines)


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    print(table())


if __name__ == "__main__":
    main()
