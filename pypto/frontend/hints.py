"""What to write instead: the replacement of Python / NumPy constructs a kernel cannot use.

A kernel is per-lane code, so a NumPy call, `print` or a list comprehension has no meaning in
it; but each has a pypto counterpart a newcomer is looking for. These messages name it.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
from typing import Any

import numpy as np

_NUMPY_REPLACEMENTS = {
    "exp": "pto.exp(x)", "log": "pto.log(x)", "sqrt": "pto.sqrt(x)", "tanh": "pto.tanh(x)",
    "where": "pto.select(cond, a, b)", "maximum": "max(a, b)", "minimum": "min(a, b)",
    "fmax": "max(a, b)", "fmin": "min(a, b)", "abs": "abs(x)", "absolute": "abs(x)",
    "fabs": "abs(x)", "zeros": "pto.alloc_local(count, dtype) and pto.fill(buf, 0.0, count)",
    "empty": "pto.alloc_local(count, dtype)", "full": "pto.alloc_local and pto.fill",
    "matmul": "pto.mma(c, a, b) on L1 tiles", "dot": "pto.mma(c, a, b) on L1 tiles",
    "float32": "pto.cast(x, pto.float32)", "float16": "pto.cast(x, pto.float16)",
    "float64": "pto.cast(x, pto.float64)", "int32": "pto.cast(x, pto.int32)",
    "int64": "pto.cast(x, pto.int64)", "bool_": "pto.cast(x, pto.bool_)",
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b",
    "sum": "a loop with atomic_add or an L1 tree (see tests/kernels/test_reduction.py)",
    "max": "max(a, b) per lane", "min": "min(a, b) per lane",
}


def _reduce_available() -> bool:
    """Whether the language has `pto.reduce` (then NumPy reductions point to it)."""
    import pypto.frontend.builtins as kernel_builtins

    return hasattr(kernel_builtins, "reduce")


def call_replacement(callee: Any, func: ast.expr) -> str | None:
    """A sentence naming what to call instead of `callee`, or None when there is none."""
    if callee is py_builtins.print:
        return ("print() is not supported in a kernel (every lane would print); use "
                "pto.printf(\"i=%d x=%f\", i, x), which prints once per active lane, prefixed by its block and lane")
    module = getattr(callee, "__module__", None) or ""
    name = getattr(callee, "__name__", None)
    is_numpy = module == "numpy" or module.startswith("numpy.") or \
        isinstance(callee, np.ufunc) or (isinstance(callee, type) and
                                          issubclass(callee, np.generic))
    if not is_numpy or not isinstance(name, str):
        return None
    spelled = ast.unparse(func)
    replacement = _NUMPY_REPLACEMENTS.get(name)
    if name in ("sum", "max", "min", "mean", "prod") and _reduce_available():
        replacement = f"pto.reduce(v, \"{'sum' if name in ('sum', 'mean') else name}\", " \
                      f"scope=\"block\")"
    if name in ("argmax", "argmin") and _reduce_available():
        replacement = f"pto.reduce_arg(v, \"{name[3:]}\", scope=\"block\")"
    if replacement is None:
        return (f"{spelled}() is not supported in a kernel: NumPy functions cannot run there, "
                f"a kernel computes one element per lane with the pto instructions "
                f"(docs/language.md)")
    return (f"{spelled}() is not supported in a kernel: NumPy functions cannot run there, a "
            f"kernel computes one element per lane; use {replacement}")


_COMPREHENSIONS = {
    "ListComp": "list comprehension", "SetComp": "set comprehension",
    "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
}


def expression_replacement(node: ast.expr) -> str | None:
    """The message for an unsupported expression with a known replacement, or None."""
    kind = _COMPREHENSIONS.get(type(node).__name__)
    if kind is None:
        return None
    return (f"a {kind} builds a Python collection, which a kernel does not have: each lane "
            f"computes its own element (i = pto.get_global_id(); pto.store(o + i, ...)); "
            f"repeat work per lane with a 'for' loop over range(), and keep per-block "
            f"arrays in L1 with pto.alloc_local")
