"""The layout's rules, checked on the source: stages hand typed values to each other.

- No module-level import cycle between the package's modules (an import inside a function or
  under `if TYPE_CHECKING:` is not a module-level edge; a module's own package `__init__` is
  not counted as an edge either, as Python imports it first anyway).
- What a stage hands on is typed and read as such: no event kind spelled as a string outside
  `trace/events.py` (`EventKind`), no plan note's sentence searched outside `plan_notes.py`
  (`PlanNote.kind`), no device name taken apart outside `devices.py` (`Device.kind`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "parallelgraph"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        inner = (
            node.body + [n for h in node.handlers for n in h.body]
            if isinstance(node, ast.Try)
            else [node]
        )
        found += [n for n in inner if isinstance(n, ast.Import | ast.ImportFrom)]
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports at module level."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges: set[str] = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names}
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                edges.add(submodule if submodule in MODULES else target)
        graph[name] = {edge for edge in edges if edge in MODULES and edge != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_level_import_cycle():
    graph = import_graph()
    assert len(graph) > 100 and graph["parallelgraph.trace.analysis"]
    assert cycles(graph) == []


def _code_lines(pattern: str, *, allowed: tuple[str, ...]) -> list[str]:
    """`path:line: text` of every package line matching `pattern`, outside `allowed` modules,
    comments and docstrings left out (lines of code only: the tokens of the AST's nodes)."""
    hits = []
    compiled = re.compile(pattern)
    for name, path in MODULES.items():
        if name in allowed:
            continue
        source = path.read_text(encoding="utf-8")
        docstrings = {
            line
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        }
        for number, line in enumerate(source.splitlines(), 1):
            code = line.split("#", 1)[0]
            if number not in docstrings and compiled.search(code):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_event_kinds_are_EventKind_outside_the_module_that_defines_them():
    literal = r"""(kind\s*(==|!=|in)\s*\(?|kind\s*=\s*)["'](op|shard|copy)["']"""
    assert _code_lines(literal, allowed=("parallelgraph.trace.events",)) == []


def test_plan_notes_are_read_by_kind_not_by_their_words():
    words = r"""["'](soft placement|placed on )["']\s*(in\b|,\s*1\))|split\(["']placed on"""
    assert _code_lines(words, allowed=("parallelgraph.plan_notes",)) == []


def test_devices_are_read_by_kind_not_taken_apart():
    parsing = r"""device\w*\.(startswith|split|partition)\(|["'](gpu|cpu):?["']\s+in\s+\w*device"""
    assert _code_lines(parsing, allowed=("parallelgraph.devices",)) == []
