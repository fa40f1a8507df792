"""Every command line of the README and of docs/*.md parses with its command's own parser (exact option
names, choices, config files that exist), every `./run.sh` action it names exists, and every tool it runs
answers -h: the documentation cannot go stale when an option is renamed. Lines with placeholders (`...`,
`[optional]`, upper-case names such as D or HOST) are illustrations, not commands, and are left out."""
import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

from helpers.paths import ROOT
from onmt import opts
from onmt.opts.release import average_models_parser, release_model_parser

DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
PARSERS = {"train.py": opts.train_parser, "translate.py": opts.translate_parser,
           "preprocess.py": opts.preprocess_parser, "onmt.bin.evaluate": opts.evaluate_parser,
           "onmt_evaluate": opts.evaluate_parser, "onmt_train": opts.train_parser,
           "onmt_translate": opts.translate_parser, "onmt_preprocess": opts.preprocess_parser,
           "onmt_build_vocab": opts.build_vocab_parser, "onmt_tune_decoding": opts.tune_decoding_parser,
           "tune_decoding.py": opts.tune_decoding_parser, "onmt.bin.tune_decoding": opts.tune_decoding_parser,
           "onmt_explore": opts.explore_parser, "explore.py": opts.explore_parser,
           "onmt_server": opts.server_parser, "onmt.bin.server": opts.server_parser,
           "onmt_average_models": average_models_parser, "onmt.bin.average_models": average_models_parser,
           "onmt_release_model": release_model_parser, "onmt.bin.release_model": release_model_parser}
WRAPPERS = {"timeout": 1, "nohup": 0}


def readme_commands(path):
    """(line number, command) of each command in the code blocks of the markdown file `path`, continuation
    lines joined, comments dropped."""
    text = open(path, encoding="utf-8").read().split("\n")
    out, in_block, pending, start = [], False, "", 0
    for n, line in enumerate(text, 1):
        if line.startswith("```"):
            in_block, pending = not in_block, ""
            continue
        if not in_block:
            continue
        code = re.split(r"\s#\s|\s#$|^#", line)[0].rstrip()
        if not pending:
            start = n
        pending += " " + code.rstrip("\\").strip()
        if code.endswith("\\"):
            continue
        command, pending = pending.strip(), ""
        if command:
            out.append((start, command))
    return out


def _argv(command):
    words = shlex.split(re.sub(r"\[[^\]]*\]", " ", command))   # [optional parts] left out
    while words and (re.fullmatch(r"[A-Za-z_]+=\S*", words[0]) or words[0] in WRAPPERS):
        skip = WRAPPERS.get(words[0], 0)
        words = words[1 + skip:]
    return words


def _users_config(command):
    """A -config file of the user's (not in the repository): the command shows how to use one."""
    m = re.search(r"-config\s+(\S+)", command)
    return m is not None and not os.path.exists(os.path.join(ROOT, m.group(1)))


def _placeholder(command):
    return "..." in command or _users_config(command) or re.search(r"(?<![\w/.-])[A-Z]{1,5}(?![\w])",
                                                                             command.split(" ", 2)[-1])


def _cases():
    """(where: "FILE line N", the command, its script, its arguments) of every command of DOCS."""
    cases = []
    for path in DOCS:
        name = os.path.relpath(path, ROOT)
        cases += [(f"{name} line {n}", *case) for n, *case in _file_cases(path)]
    return cases


def _file_cases(path):
    cases = []
    for n, command in readme_commands(path):
        argv = _argv(command)
        if not argv:
            continue
        head = argv[0]
        if head in ("python", ".venv/bin/python"):
            if argv[1:2] == ["-m"]:
                script, args = argv[2], argv[3:]
            else:
                script, args = argv[1], argv[2:]
        else:
            script, args = head, argv[1:]
        cases.append((n, re.sub(r"\[[^\]]*\]", " ", command), script, args))
    return cases


CASES = _cases()


def test_the_docs_have_commands_of_each_kind():
    scripts = {os.path.basename(c[2]) for c in CASES}
    kinds = {"train.py", "translate.py", "preprocess.py", "run.sh", "onmt.bin.evaluate", "onmt_evaluate"}
    assert kinds <= scripts, scripts
    assert {c[0].split(" line ")[0] for c in CASES} >= {"README.md", "docs/user-guide.md", "docs/upstream.md"}


@pytest.mark.parametrize("where, command, script, args", [c for c in CASES if os.path.basename(c[2]) in PARSERS
                                                        and not _placeholder(c[1])], ids=lambda v: str(v)[:40])
def test_command_parses(where, command, script, args):
    parser = PARSERS[os.path.basename(script)]()
    cwd = os.getcwd()
    os.chdir(ROOT)   # config/... paths are the repository's
    try:
        opts.parse_with_given(parser, args)
    except SystemExit as e:
        pytest.fail(f"{where}: `{command}` does not parse (exit {e.code})")
    finally:
        os.chdir(cwd)


def test_run_sh_actions_exist():
    actions = set(re.findall(r"^\s+([a-z_|]+)\)", open(os.path.join(ROOT, "run.sh"), encoding="utf-8").read(), re.M))
    known = {a for group in actions for a in group.split("|")}
    for where, command, script, args in CASES:
        if script.endswith("run.sh"):
            for word in args:
                assert word in known, f"{where}: ./run.sh {word} is no action of run.sh"


def test_tools_answer_help():
    tools = {}
    for where, command, script, args in CASES:
        if script.startswith("tools/") and script.endswith(".py"):
            tools.setdefault(script, where)
    assert tools
    for tool, where in sorted(tools.items()):
        r = subprocess.run([sys.executable, os.path.join(ROOT, tool), "-h"], capture_output=True, text=True,
                           cwd=ROOT, timeout=120)
        assert r.returncode == 0, f"{where}: {tool} -h: {r.stderr[-500:]}"
