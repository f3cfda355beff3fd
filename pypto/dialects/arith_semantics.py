"""What the integer `arith` ops compute, on NumPy values: written once, used by the interpreter
and by the analyses (`pypto.analysis.lane_values` evaluates known lane values with them).

Every function takes two NumPy integer values (scalars or arrays) of one dtype (`int32` or
`int64`: the storage of `i32` / `i64`) and returns a value of that dtype. The semantics are
C's and LLVM's on two's-complement integers:

- arithmetic wraps; `divsi` truncates toward zero and `remsi` takes the sign of the dividend
  (C's `/` and `%`); `floordivsi` / `ceildivsi` round toward minus / plus infinity; the `...ui`
  ops read both operands as unsigned;
- the divisions require a non-zero divisor: `DIVISIONS` lists them, and the caller decides what
  a zero means (the interpreter: a `KernelError` naming the lane; the analysis: an unknown
  value). `INT_MIN / -1`, undefined in C, wraps to `INT_MIN` (and its remainder is 0);
- a shift by a negative amount or by at least the bit width (poison in LLVM) gives 0, or for
  `shrsi` the sign (0 or -1): what shifting one bit at a time would give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

IntFn = Callable[[Any, Any], Any]


def _unsigned_dtype(a: Any) -> np.dtype:
    return np.dtype(f"uint{np.asarray(a).dtype.itemsize * 8}")


def _u(a: Any) -> Any:
    return a.astype(_unsigned_dtype(a))


def _back(r: Any, like: Any) -> Any:
    return r.astype(np.asarray(like).dtype)


def _where(cond: Any, x: Any, y: Any, like: Any) -> Any:
    """np.where that keeps a NumPy scalar a scalar of `like`'s dtype."""
    r = np.where(cond, x, y)
    dtype = np.asarray(like).dtype
    return r.astype(dtype) if r.ndim else dtype.type(r)


def floordivsi(a: Any, b: Any) -> Any:
    return np.floor_divide(a, b)


def divsi(a: Any, b: Any) -> Any:
    """C's `/`: the floor quotient, plus one when the signs differ and it is inexact."""
    q = np.floor_divide(a, b)
    return _where((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q, a)


def remsi(a: Any, b: Any) -> Any:
    """C's `%`: `a - divsi(a, b) * b`, with the sign of `a`."""
    return np.fmod(a, b)


def ceildivsi(a: Any, b: Any) -> Any:
    """The floor quotient, plus one when inexact (no negation: `-INT_MIN` would overflow)."""
    q = np.floor_divide(a, b)
    return _where(np.remainder(a, b) != 0, q + 1, q, a)


def divui(a: Any, b: Any) -> Any:
    return _back(np.floor_divide(_u(a), _u(b)), a)


def remui(a: Any, b: Any) -> Any:
    return _back(np.remainder(_u(a), _u(b)), a)


def ceildivui(a: Any, b: Any) -> Any:
    ua, ub = _u(a), _u(b)
    q = np.floor_divide(ua, ub)
    return _back(_where(np.remainder(ua, ub) != 0, q + 1, q, q), a)


def minui(a: Any, b: Any) -> Any:
    return _where(_u(a) <= _u(b), a, b, a)


def maxui(a: Any, b: Any) -> Any:
    return _where(_u(a) >= _u(b), a, b, a)


def shrui(a: Any, b: Any) -> Any:
    """Logical shift right: `a` read as unsigned. (NumPy's shifts already give 0, or the sign
    for `right_shift` of a signed value, for amounts outside [0, width): `shli` and `shrsi` are
    `np.left_shift` and `np.right_shift`.)"""
    return _back(np.right_shift(_u(a), _u(b)), a)


INT_BINARY: dict[str, IntFn] = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.minsi": np.minimum,
    "arith.maxsi": np.maximum,
    "arith.minui": minui,
    "arith.maxui": maxui,
    "arith.divsi": divsi,
    "arith.divui": divui,
    "arith.floordivsi": floordivsi,
    "arith.ceildivsi": ceildivsi,
    "arith.ceildivui": ceildivui,
    "arith.remsi": remsi,
    "arith.remui": remui,
    "arith.shli": np.left_shift,
    "arith.shrsi": np.right_shift,
    "arith.shrui": shrui,
}
"""Integer binary `arith` ops by name: NumPy value, NumPy value -> NumPy value of that dtype."""

DIVISIONS: frozenset[str] = frozenset({
    "arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui",
    "arith.remsi", "arith.remui",
})
"""The ops of `INT_BINARY` whose divisor (second operand) must not be zero."""
