"""The layout rules of docs/DESIGN.md §5, checked.

One test file per module: every module of onmt/ (an `__init__.py` counts when it holds more than a
docstring, imports and `__all__`; its name is its package's) is imported by tests/unit/test_<name>.py or
tests/e2e/test_<name>.py, or TESTED_IN below names the test files that import it. A test file imports a
module when it, or a tests/helpers module it imports, names the module's import path (`onmt.a.b`),
imports it from its package (`from onmt.a import b`), or imports one of its public names from it or from
its package (`from onmt.opts import parse_values`, `from onmt import opts` then `opts.parse_values`); a
package's `__init__.py` needs `import onmt.a` itself or one of the names it defines.

The model folders hold plain, equation-shaped classes: their modules import nothing from onmt/fused/ nor
from their fused.py (the fast subclasses) and never read the execution; see test_plain_and_fused.py.

Files stay under MAX_LINES lines (LONG_FILES: the ones that are longer, each with its reason), and the
folders and top-level modules of onmt/ import only the ones listed above them in DESIGN §5's layout.
"""
import ast
import os
import re

import pytest

from helpers.paths import ROOT, load_module

# module -> the test files that import it, for every module without a same-named test file that does
TESTED_IN = {
    "onmt/bin/build_vocab.py": ["tests/e2e/test_upstream_config.py"],
    "onmt/bin/train.py": ["tests/unit/test_trainer.py", "tests/e2e/test_resume.py"],
    "onmt/bin/translate.py": ["tests/unit/test_translator.py", "tests/e2e/test_api.py"],
    "onmt/constants.py": ["tests/unit/test_numericalize.py", "tests/unit/test_vocab_builder.py"],
    "onmt/errors.py": ["tests/unit/test_cli.py", "tests/unit/test_opts.py"],
    "onmt/evaluation/__init__.py": ["tests/unit/test_rouge_scorer.py", "tests/unit/test_rouge_official.py"],
    "onmt/evaluation/lcs.py": ["tests/unit/test_rouge_scorer.py"],
    "onmt/evaluation/official.py": ["tests/unit/test_rouge_official.py", "tests/unit/test_rouge_stemmer.py"],
    "onmt/evaluation/scorer.py": ["tests/unit/test_rouge_scorer.py"],
    "onmt/evaluation/stemmer.py": ["tests/unit/test_rouge_stemmer.py"],
    "onmt/evaluation/text.py": ["tests/unit/test_rouge_scorer.py", "tests/unit/test_rouge_official.py"],
    "onmt/explore/data.py": ["tests/unit/test_explore.py"],
    "onmt/explore/marks.py": ["tests/unit/test_explore.py"],
    "onmt/explore/page.py": ["tests/unit/test_explore.py"],
    "onmt/explore/summary.py": ["tests/unit/test_explore.py"],
    "onmt/losses/__init__.py": ["tests/unit/test_model_builder.py", "tests/unit/test_rl_loss.py"],
    "onmt/hardware.py": ["tests/unit/test_amp.py", "tests/unit/test_low_precision.py", "tests/e2e/test_precision.py"],
    "onmt/inputters/collate.py": ["tests/unit/test_dataset.py"],
    "onmt/inputters/dataset_swap.py": ["tests/e2e/test_no_data_loss.py"],
    "onmt/inputters/preprocess.py": ["tests/unit/test_token_cache.py"],
    "onmt/inputters/shards.py": ["tests/unit/test_dataset.py", "tests/unit/test_preprocess.py"],
    "onmt/inputters/vocab.py": ["tests/unit/test_dataset.py", "tests/unit/test_embeddings.py"],
    "onmt/inspection/plots.py": ["tests/unit/test_inspect.py"],
    "onmt/inspection/sample.py": ["tests/unit/test_inspect.py", "tests/unit/test_sample_every.py"],
    "onmt/losses/ml.py": ["tests/unit/test_ml_loss.py"],
    "onmt/losses/rl.py": ["tests/unit/test_rl_loss.py"],
    "onmt/models/fused.py": ["tests/unit/test_components.py", "tests/unit/test_decoder_pass.py"],
    "onmt/models/generic.py": ["tests/unit/test_rl_loss.py"],
    "onmt/models/rnn_decoder.py": ["tests/unit/test_decoder_pass.py", "tests/unit/test_copy_generator.py"],
    "onmt/models/seq2seq.py": ["tests/unit/test_model_builder.py", "tests/unit/test_gold_mixture.py"],
    "onmt/modules/precision.py": ["tests/unit/test_amp.py"],
    "onmt/opts/data.py": ["tests/unit/test_opts.py"],
    "onmt/reinforced/fused.py": ["tests/unit/test_gold_mixture.py", "tests/unit/test_components.py"],
    "onmt/opts/model.py": ["tests/unit/test_opts.py", "tests/unit/test_upstream_flags.py"],
    "onmt/opts/parse.py": ["tests/unit/test_opts.py", "tests/unit/test_families.py"],
    "onmt/opts/server.py": ["tests/unit/test_server_batching.py"],
    "onmt/opts/release.py": ["tests/unit/test_average_models.py"],
    "onmt/opts/train.py": ["tests/unit/test_opts.py"],
    "onmt/opts/translate.py": ["tests/unit/test_opts.py"],
    "onmt/opts/update.py": ["tests/unit/test_opts.py", "tests/unit/test_families.py"],
    "onmt/opts/validate.py": ["tests/unit/test_opts.py", "tests/unit/test_families.py"],
    "onmt/utils/rank_failure.py": ["tests/e2e/test_distributed_blame.py"],
    "onmt/prepare/cnndm.py": ["tests/unit/test_prepare.py"],
    "onmt/prepare/gigaword.py": ["tests/unit/test_prepare.py"],
    "onmt/prepare/output.py": ["tests/unit/test_prepare.py", "tests/e2e/test_raw_text.py"],
    "onmt/prepare/tfexample.py": ["tests/unit/test_prepare.py"],
    "onmt/prepare/tokenize.py": ["tests/unit/test_prepare.py", "tests/unit/test_detokenize.py"],
    "onmt/reinforced/model.py": ["tests/unit/test_reinforced_model.py"],   # through helpers.reinforced
    "onmt/server/app.py": ["tests/unit/test_server_batching.py"],
    "onmt/server/batching.py": ["tests/unit/test_server_batching.py"],
    "onmt/server/models.py": ["tests/unit/test_server_batching.py"],
    "onmt/server/serve.py": ["tests/unit/test_server_batching.py"],
    "onmt/trainer_reporting.py": ["tests/unit/test_trainer.py"],
    "onmt/translate/decoding.py": ["tests/unit/test_beam_search.py", "tests/unit/test_properties.py"],
    "onmt/translate/records.py": ["tests/unit/test_inspect.py"],
    "onmt/utils/release_format.py": ["tests/unit/test_release_model.py"],
    "onmt/translate/session.py": ["tests/unit/test_inspect.py", "tests/e2e/test_precision.py"],
}

MAX_LINES = 400
# files longer than MAX_LINES, each with why it may be: a new long file fails test_no_file_over_max_lines
LONG_FILES = {
    "tests/unit/test_properties.py": "property tests of several modules; to split by module",
    "tests/unit/test_prepare.py": "every published CNN/DM and Gigaword form; to split by corpus",
}


def rel(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def python_files(*folders):
    for folder in folders:
        for d, subdirs, files in os.walk(os.path.join(ROOT, folder)):
            subdirs[:] = sorted(s for s in subdirs if s != "__pycache__")
            yield from (rel(os.path.join(d, f)) for f in sorted(files) if f.endswith(".py"))


def has_code(path):
    """More than a docstring, imports and __all__."""
    body = ast.parse(read(path)).body
    return any(not (isinstance(n, (ast.Import, ast.ImportFrom)) or (isinstance(n, ast.Expr) and isinstance(
        n.value, ast.Constant)) or (isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets]
                                   == ["__all__"])) for n in body)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def modules():
    """Every module of onmt/ that needs a test: its path -> its dotted name."""
    out = {}
    for path in python_files("onmt"):
        if path.endswith("/__init__.py") and not has_code(path):
            continue
        out[path] = path[:-3].replace("/", ".").removesuffix(".__init__")
    return out


def same_named_test_files(module):
    name = module.rpartition(".")[2]
    candidates = (f"tests/unit/test_{name}.py", f"tests/e2e/test_{name}.py")
    return [p for p in candidates if os.path.exists(os.path.join(ROOT, p))]


def public_names(path):
    names = set()
    for node in ast.parse(read(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


def imports(test_path, module_path, module, follow_helpers=True):
    """Whether the test file imports the module (module docstring)."""
    src = read(test_path)
    if follow_helpers and any(imports(helper, module_path, module, False) for helper in helper_files(src)):
        return True
    package, _, last = module.rpartition(".")
    is_init = module_path.endswith("__init__.py")
    names = public_names(module_path)
    if not is_init and re.search(rf"\b{re.escape(module)}\b", src):
        return True
    tree = ast.parse(src)
    module_aliases, package_aliases = set(), set()
    parent, _, package_last = package.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            imported = {a.name: a.asname or a.name for a in node.names}
            if node.module == module and (not is_init or names & set(imported)):
                return True
            if node.module == package and not is_init and (last in imported or names & set(imported)):
                return True
            if node.module == package and last in imported:
                module_aliases.add(imported[last])
            if node.module == parent and package_last in imported and not is_init:
                package_aliases.add(imported[package_last])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == module and is_init:
                    return True
                if a.name == module and a.asname:
                    module_aliases.add(a.asname)
                elif a.name == package and a.asname and not is_init:
                    package_aliases.add(a.asname)
    return any(isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in names
               and node.value.id in module_aliases | package_aliases for node in ast.walk(tree))


def helper_files(src):
    """The tests/helpers modules that test source `src` imports."""
    names = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("helpers."):
                names.add(node.module.split(".")[1])
            elif node.module == "helpers":
                names.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("helpers."))
    return [p for p in (f"tests/helpers/{n}.py" for n in sorted(names)) if os.path.exists(os.path.join(ROOT, p))]


def own_test_files(path, module):
    return [t for t in same_named_test_files(module) if imports(t, path, module)]


def test_every_module_has_a_test_file_or_a_table_entry():
    missing = [p for p, m in modules().items() if not own_test_files(p, m) and p not in TESTED_IN]
    assert not missing, ("modules of onmt/ without a test file that imports them (add tests/unit/test_<name>.py, "
                         f"or name where they are tested in TESTED_IN): {missing}")


@pytest.mark.parametrize("path", sorted(TESTED_IN))
def test_table_entries_name_test_files_that_import_the_module(path):
    found = modules()
    assert path in found, f"{path} is not a module of onmt/ that needs a test (removed? renamed?)"
    assert not own_test_files(path, found[path]), f"{path} has its own test file: leave it out of TESTED_IN"
    assert TESTED_IN[path], path
    for test in TESTED_IN[path]:
        assert os.path.exists(os.path.join(ROOT, test)), f"{test} does not exist"
        assert imports(test, path, found[path]), f"{test} does not import {found[path]}"


def test_the_import_check_tells_importing_from_mentioning():
    """`imports` itself: an import of the module or of a public name counts, a namesake does not."""
    assert imports("tests/unit/test_common.py", "onmt/bin/common.py", "onmt.bin.common")
    assert imports("tests/unit/test_opts.py", "onmt/opts/update.py", "onmt.opts.update")    # opts.update_*
    assert not imports("tests/unit/test_common.py", "onmt/opts/validate.py", "onmt.opts.validate")  # opts.other
    assert not imports("tests/e2e/test_precision.py", "onmt/modules/precision.py", "onmt.modules.precision")
    assert not imports("tests/unit/test_text.py", "onmt/evaluation/text.py", "onmt.evaluation.text")


@pytest.mark.parametrize("folder", ["onmt", "tests", "bench", "tools", "experiments"])
def test_no_file_over_max_lines(folder):
    long = {p: n for p in python_files(folder) if (n := read(p).count("\n")) > MAX_LINES}
    new = {p: n for p, n in long.items() if p not in LONG_FILES}
    assert not new, f"over {MAX_LINES} lines (split by responsibility, docs/DESIGN.md §5): {new}"
    gone = [p for p in LONG_FILES if p.startswith(folder + "/") and p not in long]
    assert not gone, f"no longer over {MAX_LINES} lines: take them out of LONG_FILES: {gone}"


def design_layout():
    """The units of onmt/ (folders and top-level modules, tools/import_graph.py's names) in the order of
    DESIGN §5's layout; units on one entry share a rank."""
    text = read("docs/DESIGN.md")
    block = text[text.index("- **Layout**"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    rank, out = -1, {}
    for line in block.splitlines()[1:]:
        if line.strip() and not line.startswith(" " * 10):        # a new entry: its first column names it
            rank += 1
            named = re.split(r"\s{2,}", line.strip())[0]
        else:                                                      # a continuation: the files it names
            named = " ".join(re.findall(r"\w+\.py", line))
        for unit in re.findall(r"(?:onmt/)?(\w+)(?:/|\.py)", named):
            out.setdefault(unit, rank)
    return out


def test_onmt_imports_go_down_the_design_layout():
    graph = load_module(os.path.join("tools", "import_graph.py"), "_import_graph")
    edges = graph.graph()
    order = design_layout()
    units = set(edges) | {u for targets in edges.values() for u in targets}
    assert not units - set(order), f"units of onmt/ missing from DESIGN §5's layout: {sorted(units - set(order))}"
    up = sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets if order[b] > order[a])
    assert not up, f"imports up DESIGN §5's layout (a unit imports only the ones above it): {up}"
    assert not graph.cycles(edges)


def test_only_onmt_opts_writes_opt_asks_what_was_given_or_reads_a_family_alias():
    """DESIGN §5, Options and One interface: outside onmt/opts/, no assignment to an attribute of `opt`
    or `model_opt` (nor setattr on them), no `given(...)` or `._given`, no `getattr(opt, name, default)`,
    and no `opt.reinforced` / `opt.copy_attn` (the family is `opt.model_family`)."""
    from onmt.opts.families import FAMILIES
    aliases = {f.alias for f in FAMILIES.values() if f.alias}
    options = {"opt", "model_opt"}
    found = []
    for path in python_files("onmt"):
        if path.startswith("onmt/opts/"):
            continue
        for node in ast.walk(ast.parse(read(path))):
            where = f"{path}:{getattr(node, 'lineno', '?')}"
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in options
                   for t in targets):
                found.append(f"{where} assigns to opt")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                args = [a.id for a in node.args[:1] if isinstance(a, ast.Name)]
                if node.func.id == "setattr" and set(args) & options:
                    found.append(f"{where} setattr on opt")
                if node.func.id == "getattr" and set(args) & options and len(node.args) > 2:
                    found.append(f"{where} getattr(opt, name, default)")
                if node.func.id == "given":
                    found.append(f"{where} given()")
            if isinstance(node, ast.Attribute) and (node.attr == "_given" or node.attr == "given" or (
                    node.attr in aliases and isinstance(node.value, ast.Name) and node.value.id in options)):
                found.append(f"{where} .{node.attr}")
    assert not found, found


def _local_imports(folder, package):
    """{module name: the modules of `package` it imports (anywhere in the file, function bodies too)}."""
    graph = {}
    for name in sorted(os.listdir(os.path.join(ROOT, folder))):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(ROOT, folder, name), encoding="utf-8").read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith(package + "."):
                    found.add(node.module.split(".")[1])
                elif node.module == package:
                    found.update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name.split(".")[1] for a in node.names if a.name.startswith(package + "."))
        graph[name[:-3]] = found - {name[:-3]}
    return graph


@pytest.mark.parametrize("folder", ["experiments", "bench"])
def test_no_import_circle_among_scripts(folder):
    """experiments/ and bench/ modules import one another in one direction only (rl_vs_ml.py and its
    report once imported each other)."""
    graph = _local_imports(folder, folder)
    state = {}

    def visit(node, path):
        if state.get(node) == "open":
            pytest.fail(f"{folder}/: import circle {' -> '.join(path + [node])}")
        if state.get(node) == "done":
            return
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        state[node] = "done"
    for node in graph:
        visit(node, [])


UPSTREAM_PATHS = {"onmt/utils/loss.py"}   # upstream OpenNMT-py's own files, named where docs compare with it


def test_cited_onmt_paths_exist():
    """Every onmt/… .py path that a benchmark, an experiment, a tool or a doc names exists (a benchmark
    once cited onmt/reinforced/rewards.py, which had moved to onmt/losses/)."""
    missing = []
    for folder in ("bench", "experiments", "tools", "docs"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith((".py", ".md", ".sh")):
                continue
            text = open(os.path.join(ROOT, folder, name), encoding="utf-8").read()
            for path in sorted(set(re.findall(r"(?<![\w/])onmt/[\w/]+\.py", text))):
                if path not in UPSTREAM_PATHS and not os.path.exists(os.path.join(ROOT, path)):
                    missing.append(f"{folder}/{name}: {path}")
    assert not missing, missing
