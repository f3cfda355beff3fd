"""Generate `pypto/frontend/builtins.pyi`, the type stub of the kernel language's builtins.

The builtins are made at import time from the dialect (`pypto.frontend.builtins`), which a type
checker or an editor cannot see; the stub gives them their real signatures and docstrings, from
the same declarations (`KernelFunction` traits and op docstrings, `LANGUAGE_FUNCTIONS`).
Regenerate after changing the dialect:

    python -m pypto.tools.stubs > pypto/frontend/builtins.pyi

`tests/frontend/test_builtins.py` fails when the file differs from `render()`.
"""

from __future__ import annotations

import ast
import sys
import textwrap

from pypto.frontend.builtins import declared

REGENERATE = "python -m pypto.tools.stubs > pypto/frontend/builtins.pyi"


def _parameters(signature: str) -> str:
    """`(count, dtype=float32)` with every parameter annotated `Any`."""
    tree = ast.parse(f"def f{signature}: pass")
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    args = fn.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        arg.annotation = ast.Name("Any")
    if args.vararg is not None:
        args.vararg.annotation = ast.Name("Any")
    if args.kwarg is not None:
        args.kwarg.annotation = ast.Name("Any")
    return ast.unparse(args)


def _docstring(doc: str) -> str:
    lines: list[str] = []
    for paragraph in doc.split("\n\n"):
        lines += textwrap.wrap(paragraph, 92, break_on_hyphens=False, break_long_words=False) \
            or [""]
        lines.append("")
    body = "\n".join(f"    {line}" if line else "" for line in lines[:-1])
    return f'    """{body.lstrip()}\n    """'


def render() -> str:
    out = [
        f"# GENERATED from the pto dialect by `{REGENERATE}`. Do not edit by hand.",
        '"""Kernel-side functions of the PTO language (see pypto/frontend/builtins.py)."""',
        "",
        "from typing import Any",
        "",
        "from pypto.dtypes import float32",
        "",
        "BUILTINS: dict[Any, str]",
        "LANGUAGE_FUNCTIONS: dict[str, tuple[str, str]]",
        "ELEMENTWISE: dict[str, Any]",
        "",
        "def declared() -> dict[str, tuple[str, str]]: ...",
        "def op_doc(op: Any) -> str: ...",
        "",
        "class constexpr:",
        '    """Annotation forcing a kernel parameter to be a compile-time constant."""',
        "",
        "STATIC_LOOP_LIMIT: int",
        "",
        "def static_range(*args: int) -> range:",
        '    """`range(a, b, s)` over compile-time integers, unrolled by the frontend."""',
        "",
    ]
    names = []
    for name, (signature, doc) in declared().items():
        names.append(name)
        out += ["", f"def {name}({_parameters(signature)}) -> Any:", _docstring(doc), "    ..."]
    out += ["", f"__all__ = {[*names, 'constexpr', 'static_range']!r}", ""]
    return "\n".join(out)


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
