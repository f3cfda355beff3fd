"""Exact references for the kernel language's operations, independent of pypto's code.

Every float value of the narrow formats is a float64 and hence a `Fraction`; results are computed
exactly and rounded to nearest-even by `round_to`. For the 16-bit formats `round_to` searches the
sorted table of all 65536 encodings (obviously correct); for float32 it uses integer arithmetic.
Non-finite operands and exact zeros follow IEEE 754 (computed in float64, where they are exact).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np

F16, BF16, F32 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
I32, I64, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)
FLOATS = (F16, BF16, F32)
INTS = (I32, I64)


@cache
def _table(dtype: np.dtype) -> tuple[np.ndarray, list[Fraction]]:
    """All finite non-negative values of a 16-bit format, sorted, with their bit patterns."""
    bits = np.arange(0, 1 << 15, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        values = bits.view(dtype).astype(np.float64)
    keep = np.isfinite(values)
    order = np.argsort(values[keep], kind="stable")
    return bits[keep][order], [Fraction(float(v)) for v in values[keep][order]]


def _round16(q: Fraction, dtype: np.dtype) -> Any:
    bits, values = _table(dtype)
    a = abs(q)
    lo, hi = 0, len(values) - 1
    top = values[hi]
    ulp_top = top - values[hi - 1]
    if a >= top + ulp_top / 2:
        r = dtype.type(np.inf)
    else:
        while hi - lo > 1:  # values[lo] <= a < values[hi]
            mid = (lo + hi) // 2
            if values[mid] <= a:
                lo = mid
            else:
                hi = mid
        if a >= values[hi]:
            lo = hi
        if values[lo] == a:
            pick = lo
        else:
            d_lo, d_hi = a - values[lo], values[hi] - a
            if d_lo < d_hi:
                pick = lo
            elif d_hi < d_lo:
                pick = hi
            else:
                pick = lo if int(bits[lo]) % 2 == 0 else hi
        r = np.array([bits[pick]], dtype=np.uint16).view(dtype)[0]
    return -r if q < 0 else r


def _round32(q: Fraction) -> Any:
    a = abs(q)
    if a == 0:
        return np.float32(0.0)
    e = math.floor(math.log2(a.numerator) - math.log2(a.denominator))
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormals share the quantum of the smallest binade
    quantum = Fraction(2) ** (e - 23)
    n, rem = divmod(a, quantum)
    n = int(n)
    half = quantum / 2
    if rem > half or (rem == half and n % 2 == 1):
        n += 1
    value = n * quantum
    if value >= Fraction(2) ** 128:
        r = np.float32(np.inf)
    else:
        r = np.float32(float(value))
        assert Fraction(float(r)) == value
    return -r if q < 0 else r


def round_to(q: Fraction, dtype: np.dtype) -> Any:
    """`q` rounded to nearest, ties to even, in `dtype` (±inf beyond its range)."""
    if dtype == F32:
        return _round32(q)
    return _round16(q, dtype)


def frac(x: Any) -> Fraction:
    return Fraction(float(x))


def finite(*xs: Any) -> bool:
    return all(math.isfinite(float(x)) for x in xs)


def ieee(fn: Any, dtype: np.dtype, *xs: Any) -> Any:
    """Non-finite / zero cases: exact in float64, then (exactly) representable in `dtype`."""
    with np.errstate(all="ignore"):
        r = fn(*(np.float64(float(x)) for x in xs))
    return dtype.type(r) if not np.isnan(r) else dtype.type(np.nan)


# -- float arithmetic ------------------------------------------------------------------------


def f_add(a: Any, b: Any, dtype: np.dtype) -> Any:
    if not finite(a, b) or (float(a) == 0 and float(b) == 0):
        return ieee(lambda x, y: x + y, dtype, a, b)
    q = frac(a) + frac(b)
    return dtype.type(0.0) if q == 0 else round_to(q, dtype)  # x + (-x) = +0 (nearest)


def f_sub(a: Any, b: Any, dtype: np.dtype) -> Any:
    return f_add(a, -b, dtype)


def f_mul(a: Any, b: Any, dtype: np.dtype) -> Any:
    if not finite(a, b) or float(a) == 0 or float(b) == 0:
        return ieee(lambda x, y: x * y, dtype, a, b)
    return round_to(frac(a) * frac(b), dtype)


def f_div(a: Any, b: Any, dtype: np.dtype) -> Any:
    if not finite(a, b) or float(a) == 0 or float(b) == 0:
        return ieee(lambda x, y: x / y, dtype, a, b)
    return round_to(frac(a) / frac(b), dtype)


def f_fma(a: Any, b: Any, c: Any, dtype: np.dtype) -> Any:
    if not finite(a, b, c):
        return ieee(lambda x, y, z: x * y + z, dtype, a, b, c)
    p = frac(a) * frac(b)
    q = p + frac(c)
    if q == 0:
        if p == 0 and float(c) == 0:  # signed zeros: exact in float64
            return ieee(lambda x, y, z: x * y + z, dtype, a, b, c)
        return dtype.type(0.0)
    return round_to(q, dtype)


def f_floordiv_mod(a: Any, b: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """Python's float `divmod` algorithm (CPython float_divmod), each step rounded in `dtype`;
    by zero: `//` is `a / b` (±inf or NaN) and `%` is NaN; NaN or infinite `a`: NaN (as NumPy;
    all documented in docs/language.md)."""
    t = dtype.type
    x, y = float(a), float(b)
    if y == 0:
        return f_div(a, b, dtype), t(np.nan)
    if math.isnan(x) or math.isnan(y) or math.isinf(x):
        return t(np.nan), t(np.nan)
    mod = t(math.fmod(x, y))  # fmod is exact (and x for an infinite y)
    div = f_div(f_sub(a, mod, dtype), b, dtype)
    if float(mod) != 0:
        if (y < 0) != (float(mod) < 0):
            mod = f_add(mod, b, dtype)
            div = f_sub(div, t(1.0), dtype)
    else:
        mod = t(math.copysign(0.0, y))
    if float(div) != 0:
        floordiv = t(np.floor(np.float64(float(div))))
        if float(f_sub(div, floordiv, dtype)) > 0.5:
            floordiv = f_add(floordiv, t(1.0), dtype)
    else:
        floordiv = t(math.copysign(0.0, float(f_div(a, b, dtype))))
    return floordiv, mod


def _narrowed(r: Any, dtype: np.dtype) -> Any:
    x = float(r)
    return dtype.type(x) if not math.isfinite(x) or x == 0 else round_to(frac(r), dtype)


def f_floordiv(a: Any, b: Any, dtype: np.dtype) -> Any:
    """float16 / bfloat16 operands run the algorithm in float32, rounded once at the end."""
    if dtype != F32:
        return _narrowed(f_floordiv_mod(F32.type(a), F32.type(b), F32)[0], dtype)
    return f_floordiv_mod(a, b, dtype)[0]


def f_mod(a: Any, b: Any, dtype: np.dtype) -> Any:
    if dtype != F32:
        return _narrowed(f_floordiv_mod(F32.type(a), F32.type(b), F32)[1], dtype)
    return f_floordiv_mod(a, b, dtype)[1]


def f_min(a: Any, b: Any, dtype: np.dtype) -> Any:
    """IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0."""
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return dtype.type(np.nan)
    if x == y == 0:
        return dtype.type(-0.0 if math.copysign(1, x) < 0 or math.copysign(1, y) < 0 else 0.0)
    return dtype.type(min(x, y))


def f_max(a: Any, b: Any, dtype: np.dtype) -> Any:
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return dtype.type(np.nan)
    if x == y == 0:
        return dtype.type(0.0 if math.copysign(1, x) > 0 or math.copysign(1, y) > 0 else -0.0)
    return dtype.type(max(x, y))


def f_sqrt(a: Any, dtype: np.dtype) -> Any:
    """Correctly rounded square root: the exact root is bracketed with integer square roots."""
    x = float(a)
    if math.isnan(x) or x < 0:
        return dtype.type(np.nan)
    if x == 0 or math.isinf(x):
        return dtype.type(x)
    q = frac(a)
    # scale so that the root has plenty of integer bits: sqrt(q) = sqrt(q * 4**k) / 2**k
    k = 200
    n = q * Fraction(4) ** k
    num, den = n.numerator, n.denominator
    r = math.isqrt(num * den)  # sqrt(num/den) = sqrt(num*den)/den
    exact = r * r == num * den
    root = Fraction(r, den * 2 ** k)
    if exact:
        return round_to(root, dtype)
    # the true root is strictly between root and root + 1/(den 2**k); nudge by a tiny sticky
    return round_to(root + Fraction(1, den * 2 ** (k + 1)), dtype)


# -- integers ------------------------------------------------------------------------------


def wrap(v: int, dtype: np.dtype) -> Any:
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return dtype.type(v)


def i_floordiv(a: Any, b: Any, dtype: np.dtype) -> Any:
    return wrap(int(a) // int(b), dtype)  # MIN // -1 wraps to MIN


def i_mod(a: Any, b: Any, dtype: np.dtype) -> Any:
    return wrap(int(a) % int(b), dtype)


def i_shl(a: Any, n: Any, dtype: np.dtype) -> Any:
    """Counts outside 0..width-1 (negative too) shift every bit out: 0 (documented)."""
    bits = dtype.itemsize * 8
    if not 0 <= int(n) < bits:
        return dtype.type(0)
    return wrap(int(a) << int(n), dtype)


def i_shr(a: Any, n: Any, dtype: np.dtype) -> Any:
    """Arithmetic shift; counts outside 0..width-1 give the sign fill, 0 or -1 (documented)."""
    bits = dtype.itemsize * 8
    if not 0 <= int(n) < bits:
        return dtype.type(-1 if int(a) < 0 else 0)
    return dtype.type(int(a) >> int(n))


def i_pow(a: Any, n: Any, dtype: np.dtype) -> Any:
    bits = dtype.itemsize * 8
    return wrap(pow(int(a), int(n), 1 << bits), dtype)


# -- casts ---------------------------------------------------------------------------------


def cast(x: Any, src: np.dtype, dst: np.dtype) -> Any:
    """`pto.cast`: float->float and int->float round to nearest even; float->int truncates
    (callers keep NaN / out-of-range values away: those are a KernelError); int->int wraps;
    anything->bool is `!= 0`; bool->number is 0 / 1."""
    if dst == BOOL:
        return np.bool_(float(x) != 0 if src.kind == "f" or src == BF16 else int(x) != 0)
    if src == BOOL:
        return dst.type(1 if bool(x) else 0)
    if dst.kind in "iu":
        if src.kind in "iu":
            return wrap(int(x), dst)
        return dst.type(math.trunc(float(x)))
    # to float
    if src.kind in "iu":
        return round_to(Fraction(int(x)), dst)
    if not math.isfinite(float(x)) or float(x) == 0:
        return dst.type(float(x))
    return round_to(frac(x), dst)


__all__ = ["BF16", "BOOL", "F16", "F32", "FLOATS", "I32", "I64", "INTS", "cast", "f_add",
           "f_div", "f_floordiv", "f_fma", "f_max", "f_min", "f_mod", "f_mul", "f_sqrt", "f_sub",
           "i_floordiv", "i_mod", "i_pow", "i_shl", "i_shr", "round_to", "wrap"]
