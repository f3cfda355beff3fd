"""The package is layered: each folder imports only from the layers below it (README, Layout),
with no import cycles, also none hidden in function bodies.

Every `import` / `from ... import` of a pypto module anywhere in a file counts (module level or
inside a function); imports under `if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "pypto"

LAYERS = [
    {"pypto.errors", "pypto.dtypes", "pypto.diagnostics", "pypto.exact"},
    {"pypto.dialects"},
    {"pypto.ir"},
    {"pypto.analysis"},
    {"pypto.passes", "pypto.frontend", "pypto.backend.targets"},
    {"pypto.backend.interpreter", "pypto.backend"},
    {"pypto.runtime"},
    {"pypto.compiler"},
    {"pypto.tools", "pypto"},
]
"""Lowest first. A module may import its own layer and the layers below, never above."""

KNOWN_CYCLES = [{"pypto.runtime.device", "pypto.runtime.stream"}]
"""A device owns its default stream and a stream belongs to a device (the default one unless
given): one concept split over two files."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _resolve(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(path: Path) -> set[str]:
    return _imports_in(path.read_text()) - {_module(path)}


def _imports_in(source: str) -> set[str]:
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pypto"):
            for alias in node.names:
                target = _resolve(f"{node.module}.{alias.name}") \
                    if f"{node.module}.{alias.name}" in MODULES else _resolve(node.module)
                if target:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(t for a in node.names if (t := _resolve(a.name)) and
                         a.name.startswith("pypto"))
    return found


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _layer(module: str) -> int:
    best = None
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_every_import_points_down() -> None:
    upward = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
              for m, targets in GRAPH.items() for t in targets
              if _layer(t) > _layer(m) and m != "pypto"]
    assert upward == []


def test_analysis_does_not_import_passes() -> None:
    assert not [t for m, ts in GRAPH.items() if m.startswith("pypto.analysis")
                for t in ts if t.startswith("pypto.passes")]


def _cycles() -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert [c for c in _cycles() if c not in KNOWN_CYCLES] == []


def test_the_check_sees_imports_inside_functions_but_not_type_checking_ones() -> None:
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from pypto.runtime.stream import Stream\n"
              "def f():\n    from pypto.compiler import compile\n")
    assert _imports_in(source) == {"pypto.compiler"}
