"""Kernel-side functions of the PTO language (`pto.load`, `pto.get_global_id`, ...).

These Python functions exist so that `pto.load` is a real name a user can import, document and
look up; they are never executed. Inside a `@pto.kernel` the frontend recognises them *by identity*
(so `from pypto import load` works as well as `pto.load`) and emits the corresponding op. Called
from ordinary Python they raise a `PtoError` that says so.

They are derived from the dialect, not re-typed: every op of `pto.PTO_OPS` with a
`KernelFunction(name, signature)` trait is the function `name`, with that signature and a
docstring made of its op's documentation (the same text as docs/isa.md). The few functions that
lower to upstream dialects (`math`, `arith`), which cannot carry pypto traits, are declared in
`LANGUAGE_FUNCTIONS` below. The stub file `builtins.pyi` next to this module is generated from
the same source (`python -m pypto.tools.stubs`; a test fails when it is stale).

`BUILTINS` maps each function to its name: the frontend lowers a call with its `call_<name>`
method, or, for an `Elementwise` op without one, generically (`ELEMENTWISE`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from xdsl.irdl import IRDLOperation

from pypto import dtypes
from pypto.dialects import pto
from pypto.dialects.op_docs import parse_docstring
from pypto.dialects.traits import elementwise_reference, kernel_function
from pypto.errors import PtoError

LANGUAGE_FUNCTIONS: dict[str, tuple[str, str]] = {
    "exp": ("(x)", "Exponential per lane (`math.exp`): floats, evaluated in float64 and rounded "
                   "once to the operand type (within 1 ulp)."),
    "log": ("(x)", "Natural logarithm per lane (`math.log`): floats, evaluated in float64 and "
                   "rounded once (within 1 ulp)."),
    "sqrt": ("(x)", "Square root per lane (`math.sqrt`): floats, correctly rounded; a negative "
                    "operand gives NaN."),
    "rsqrt": ("(x)", "Reciprocal square root `1 / sqrt(x)` per lane (`math.rsqrt`): floats, "
                     "evaluated in float64 and rounded once (within 1 ulp)."),
    "tanh": ("(x)", "Hyperbolic tangent per lane (`math.tanh`): floats, evaluated in float64 "
                    "and rounded once (within 1 ulp)."),
    "select": ("(cond, a, b)", "`a` where `cond` holds, else `b`, per lane (`arith.select`); "
                               "Python numbers take the other operand's type."),
    "cast": ("(x, dtype)", "Convert `x` to `dtype` per lane (`arith` casts): floats round to "
                           "nearest even, float to int truncates toward zero."),
    "reduce": ("(v, op=\"sum\", scope=\"warp\")",
               "Reduce `v` across the lanes of a warp or of a block (`op`: \"sum\", \"prod\", "
               "\"max\", \"min\", or for ints \"and\", \"or\", \"xor\"; `scope`: \"warp\" or "
               "\"block\") in a documented fixed tree, lowered to ordinary loads, stores and "
               "barriers on a scratch buffer (pypto/frontend/collectives.py); every lane gets "
               "the result."),
    "reduce_arg": ("(v, op, scope=\"warp\")",
                   "`(value, index)` of the largest (`op=\"max\"`) or smallest (\"min\") `v` "
                   "across the lanes of a warp or block, to every lane: the index is the lane "
                   "in the warp (`scope=\"warp\"`) or the linear local id (`\"block\"`), int32; "
                   "ties go to the lowest index, a NaN wins (as np.argmax); inactive lanes never "
                   "win (docs/language.md#collectives)."),
    "alloc_tile": ("(rows, cols, dtype=float32)",
                   "Allocate a block-shared L1 tile of `rows x cols` elements, row-major: a "
                   "`pto.alloc_local` of `rows * cols` elements with `shape(rows, cols)` "
                   "(docs/isa.md), which the tile vector instructions (`pto.tadd`, "
                   "`pto.trowsum`, ...) take their shape from; copies, `mma` and lane code "
                   "use it as any L1 buffer (`t + r * cols + c`)."),
}
"""Functions of the language that lower to other ops (upstream ones, or `pto.alloc_local`
with a shape): name -> (signature, docstring)."""

_ONLY_IN_KERNELS = "Only valid inside a @pto.kernel function."

_DEFAULTS = {"float32": dtypes.float32, "None": None}
"""What the defaults written in signatures stand for."""


def _signature(text: str) -> inspect.Signature:
    """`"(count, dtype=float32)"` as an `inspect.Signature` (defaults evaluated)."""
    fn = eval(f"lambda {text[1:-1]}: None", dict(_DEFAULTS))  # noqa: S307 - dialect text
    return inspect.signature(fn)


def op_doc(op: type[IRDLOperation]) -> str:
    """An op's documentation as a function's docstring: summary, semantics, Python form, and
    the IR op it lowers to (the same text as its entry in docs/isa.md)."""
    doc = parse_docstring(op.__doc__)
    parts = [doc.summary]
    if doc.semantics:
        parts.append(f"Semantics: {doc.semantics}")
    if doc.python:
        parts.append(f"Python: {doc.python}")
    parts.append(f"Lowers to `{op.name}` (docs/isa.md).")
    return "\n\n".join(parts)


def _kernel_only(name: str, signature: str, doc: str) -> Callable[..., Any]:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise PtoError(
            f"pto.{name}() is a kernel-side instruction: it can only be used inside a "
            f"@pto.kernel function, which pto.launch() / pto.compile() lower and run")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__module__ = "pypto"
    fn.__signature__ = _signature(signature)  # type: ignore[attr-defined]
    fn.__doc__ = doc
    return fn


def declared() -> dict[str, tuple[str, str]]:
    """Every builtin: name -> (signature, docstring), the dialect's first (in `PTO_OPS`
    order), then `LANGUAGE_FUNCTIONS`. Ops sharing a name declare one signature."""
    found: dict[str, tuple[str, list[str]]] = {}
    for op in pto.PTO_OPS:
        trait = kernel_function(op)
        if trait is None:
            continue
        signature, docs = found.setdefault(trait.name, (trait.signature, []))
        if signature != trait.signature:
            raise ValueError(f"{op.name} declares pto.{trait.name}{trait.signature}, another "
                             f"op declares pto.{trait.name}{signature}: one function, one "
                             f"signature")
        docs.append(op_doc(op))
    out = {name: (signature, "\n\n".join(docs)) for name, (signature, docs) in found.items()}
    out.update(LANGUAGE_FUNCTIONS)
    return {name: (signature, f"{doc}\n\n{_ONLY_IN_KERNELS}")
            for name, (signature, doc) in out.items()}


ELEMENTWISE: dict[str, type[IRDLOperation]] = {
    trait.name: op for op in pto.PTO_OPS
    if (trait := kernel_function(op)) is not None and elementwise_reference(op) is not None}
"""Builtins that are `Elementwise` ops: lowered generically when no `call_<name>` exists."""

TILE_VECTOR: dict[str, type[IRDLOperation]] = {
    trait.name: op for op in pto.TILE_VECTOR_OPS if (trait := kernel_function(op)) is not None}
"""Builtins that are tile vector instructions: lowered generically (`call_tile_vector`)."""

BUILTINS: dict[Any, str] = {}
for _name, (_sig, _doc) in declared().items():
    _fn = _kernel_only(_name, _sig, _doc)
    BUILTINS[_fn] = _name
    globals()[_name] = _fn  # `pypto.frontend.builtins.load`, re-exported as `pto.load`
del _name, _sig, _doc, _fn


class constexpr:  # noqa: N801 - a marker used as an annotation, named like Triton's
    """Annotation forcing a kernel parameter to be a compile-time constant.

    `def k(a, n: pto.constexpr)`: every distinct launch value of `n` compiles (and caches) its
    own variant, in which `n` is a Python constant (usable as a size, folded into the IR).
    """

    def __init__(self) -> None:
        raise TypeError("pto.constexpr is an annotation: write `n: pto.constexpr` on a kernel "
                        "parameter")


def static_range(*args: int) -> range:
    """`range(a, b, s)` over compile-time integers, unrolled by the frontend.

    `for k in pto.static_range(4):` lowers the loop body once per value, with `k` a Python
    constant in each copy (docs/language.md#static-loops); `for k in (16, 8, 4, 2, 1):` does the
    same for a tuple. Outside a kernel it is `range(*args)`.
    """
    for value in args:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"pto.static_range takes compile-time integers, got {value!r}")
    return range(*args)


STATIC_LOOP_LIMIT = 4096
"""A static loop unrolls its body once per value: more than this many copies is a compile error
(a `range()` loop keeps one copy of its body and runs any number of trips)."""


__all__ = [*BUILTINS.values(), "constexpr", "static_range"]
