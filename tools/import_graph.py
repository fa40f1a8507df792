"""The folder-level import graph of the onmt package, and its cycles.

    python tools/import_graph.py           # the graph, one line per unit, then "no cycles" or each cycle
    python tools/import_graph.py -check    # the same; exit status 1 when there is a cycle

A unit is one of onmt's folders (onmt/models, onmt/utils, ...) or one of its top-level modules
(onmt/interface.py, onmt/api.py, ...); an edge A -> B says that some module of A imports a module of
B, at the top of the file or inside a function alike. `onmt/__init__.py` is left out: it imports
nothing until `onmt.Summarizer` is asked for. The layering is sound when no two units reach each
other, directly or through others.
"""
import argparse
import ast
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "onmt")


def unit_of(module):
    """"onmt.models.seq2seq" -> "models"; "onmt.opts" -> "opts"; "onmt" -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "onmt" else None


def imported_modules(path):
    """The absolute onmt modules a file imports (`from onmt import opts` counts as onmt.opts)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("onmt."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "onmt":
                yield from (f"onmt.{a.name}" for a in node.names)
            elif node.module.startswith("onmt."):
                yield node.module


def graph(root=ROOT):
    """{unit: set of units it imports}, self-imports left out."""
    edges = {}
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
            if rel == "onmt.__init__":
                continue
            src = unit_of(rel.removesuffix(".__init__"))
            targets = edges.setdefault(src, set())
            targets.update(u for u in map(unit_of, imported_modules(path)) if u and u != src)
    return edges


def cycles(edges):
    """The strongly connected components of more than one unit (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layers(edges):
    """Units grouped by depth: layer 0 imports no other unit, layer n only units of lower layers."""
    depth = {}

    def d(v, seen=()):
        if v not in depth:
            depth[v] = 1 + max((d(w, seen + (v,)) for w in edges.get(v, ()) if w not in seen), default=-1)
        return depth[v]

    for v in edges:
        d(v)
    return depth


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-check", action="store_true", help="exit 1 when two units import each other")
    args = p.parse_args(argv)
    edges = graph()
    found = cycles(edges)
    depth = layers(edges) if not found else {v: 0 for v in edges}
    for v in sorted(edges, key=lambda v: (depth[v], v)):
        print(f"{'L%d ' % depth[v] if not found else ''}{v:14s} -> {', '.join(sorted(edges[v])) or '(nothing)'}")
    if found:
        for c in found:
            print("cycle: " + " <-> ".join(c))
        return 1 if args.check else 0
    print("no cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
