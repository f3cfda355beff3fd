"""The package is layered: each folder imports only from the layers below it (README, Layout),
with no import cycles, also none hidden in function bodies.

Every `import` / `from ... import` of a pypto module anywhere in a file counts (module level or
inside a function); imports under `if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "pypto"

LAYERS = [
    {"pypto.errors", "pypto.dtypes", "pypto.diagnostics", "pypto.exact", "pypto.settings"},
    {"pypto.dialects"},
    {"pypto.ir"},
    {"pypto.analysis"},
    {"pypto.passes", "pypto.frontend", "pypto.backend.targets"},
    {"pypto.backend.interpreter", "pypto.backend.native", "pypto.backend"},
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


@cache
def _graph() -> dict[str, set[str]]:
    """Each module's pypto imports: parsed at the first test that asks, not at collection (every
    xdist worker imports this file; only the one running these tests pays for the parse)."""
    return {name: _imports(path) for name, path in MODULES.items()}


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
              for m, targets in _graph().items() for t in targets
              if _layer(t) > _layer(m) and m != "pypto"]
    assert upward == []


def test_analysis_does_not_import_passes() -> None:
    assert not [t for m, ts in _graph().items() if m.startswith("pypto.analysis")
                for t in ts if t.startswith("pypto.passes")]


def _cycles() -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in _graph()[v]:
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

    for v in _graph():
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


# Op facts are traits (docs/adding-an-op.md): the analyses, the cost model, the debugger, the
# autotuner and the interpreter's instruments, executor, access planner and strategies ask
# `pypto.dialects.traits`, never name an op class. (Rewriting passes, the frontend and the
# emitters build and match ops, and may name them.)
TRAIT_ONLY = ["analysis", "backend/cost_model", "debug", "backend/interpreter/instruments.py",
              "backend/interpreter/executor.py", "backend/interpreter/planning.py",
              "backend/interpreter/plan.py", "backend/interpreter/affine.py",
              "backend/interpreter/strategies", "tuning"]

# Passes build and match ops, so they name op classes; but an op-by-op rewrite is an xDSL
# `RewritePattern` on the op type it rewrites (`op_type_rewrite_pattern`, as canonicalize.py and
# convert_pto_to_npu.py do), and a fact about ops (is it a wait? a block barrier?) is a trait
# query: no `isinstance` on a pto / npu op class. Files listed here would still have some
# (issue 28 counted 59 in passes/; double_buffer.py's 30 and npu_fuse_load_mma.py's 12 are
# gone: traits and pypto.analysis.ir_utils's structural questions, a `RewritePattern` on
# `npu.mma`); a count may only go down. They still name op classes to build them, so they are
# not in TRAIT_ONLY.
ISINSTANCE_LEFT: dict[str, int] = {}


def _op_classes() -> dict[str, set[str]]:
    from xdsl.ir import Operation

    from pypto.dialects import npu, pto

    return {name: {attr for attr, value in vars(module).items()
                   if isinstance(value, type) and issubclass(value, Operation)}
            for name, module in (("pto", pto), ("npu", npu))}


def _annotations(tree: ast.AST) -> set[int]:
    """ids of the nodes inside type annotations (naming a class there is documentation)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST | None] = []
        if isinstance(node, ast.arg):
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        for root in roots:
            if root is not None:
                inside.update(id(n) for n in ast.walk(root))
    return inside


def _named_op_classes(source: str) -> list[str]:
    """`pto.LoadOp`-style references to op classes of the pto / npu dialects (outside type
    annotations), and imports of them, as "line: text"."""
    classes = _op_classes()
    tree = ast.parse(source)
    skip = _annotations(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.attr in classes.get(node.value.id, ()):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("pypto.dialects.pto",
                                                                   "pypto.dialects.npu"):
            dialect = node.module.rsplit(".", 1)[1]
            found.extend(f"{node.lineno}: {dialect}.{a.name}" for a in node.names
                         if a.name in classes[dialect])
    return found


def test_analyses_cost_model_debugger_and_instruments_ask_traits_not_op_classes() -> None:
    named = {}
    for entry in TRAIT_ONLY:
        path = ROOT / entry
        for file in ([path] if path.suffix == ".py" else sorted(path.rglob("*.py"))):
            hits = _named_op_classes(file.read_text())
            if hits:
                named[str(file.relative_to(ROOT))] = hits
    assert named == {}, "ask pypto.dialects.traits instead of naming op classes"


def _isinstance_on_op_classes(source: str) -> list[str]:
    """`isinstance(x, pto.LoadOp)`-style tests of pto / npu op classes, as "line: text"."""
    classes = _op_classes()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "isinstance" and len(node.args) == 2:
            if any(isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and
                   sub.attr in classes.get(sub.value.id, ()) for sub in ast.walk(node.args[1])):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_passes_ask_traits_or_match_op_types_with_rewrite_patterns() -> None:
    counts = {}
    for file in sorted((ROOT / "passes").rglob("*.py")):
        hits = _isinstance_on_op_classes(file.read_text())
        name = str(file.relative_to(ROOT))
        if len(hits) > ISINSTANCE_LEFT.get(name, 0):
            counts[name] = hits
    assert counts == {}, "use a RewritePattern on the op type, or ask pypto.dialects.traits"
    assert _isinstance_on_op_classes("isinstance(op, pto.WaitOp | npu.MmaOp)\n"
                                     "isinstance(op, scf.ForOp)\n") == \
        ["1: isinstance(op, pto.WaitOp | npu.MmaOp)"]


def test_the_op_class_check_sees_isinstance_tuples_patterns_and_imports() -> None:
    source = ("from pypto.dialects.pto import LoadOp, PtrType\n"
              "ASYNC = (pto.AsyncLoadOp, npu.CopyInOp)\n"
              "def f(op: pto.AllocLocalOp, t) -> pto.MmaOp:\n"
              "    if isinstance(t, pto.PtrType):\n"
              "        return isinstance(op, pto.WaitOp | npu.WaitFlagOp)\n"
              "    match op:\n"
              "        case pto.FillOp():\n"
              "            pass\n")
    assert sorted(_named_op_classes(source)) == [
        "1: pto.LoadOp", "2: npu.CopyInOp", "2: pto.AsyncLoadOp", "5: npu.WaitFlagOp",
        "5: pto.WaitOp", "7: pto.FillOp"]
