"""Correctly rounded arithmetic the hardware formats need but NumPy does not give directly.

NumPy's own float32 / float16 arithmetic (and ml_dtypes' bfloat16 arithmetic, which computes in
float32) is already correctly rounded for `+ - * /` and `sqrt`: the wider format has at least
2p+2 bits, so rounding twice gives the same result as rounding once. What is *not* single-rounded:

- a fused multiply-add evaluated as float64 `a*b + c` (the product is exact but the sum is rounded
  to float64 first, then to the element type);
- ml_dtypes' float64 -> bfloat16 cast (it goes through float32);
- int64 -> float casts (int64 -> float64 rounds first).

Each is fixed with *round-to-odd*: round to float64 (or float32) with the sticky information kept
in the last bit (the result is the odd neighbour whenever the operation was inexact), then round
once to the target. Rounding an odd-rounded value with at least two extra bits to nearest-even
gives the correctly rounded result (Boldo & Melquiond, "Emulation of FMA and correctly rounded
sums: proved algorithms using rounding to odd", 2008). The inexactness is detected with the
error-free transformation TwoSum (Knuth), which is exact in float64 because no overflow can occur
for operands of the narrower formats. tests/exactness/ checks all of it against `Fraction`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    from fractions import Fraction  # imported where used: only rare exact paths need it

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_FLOAT_NARROW = (np.dtype(np.float16), _F32, BFLOAT16)


def _odd_sum(p: Any, c: Any) -> Any:
    """float64 `p + c` rounded to odd (p, c float64 arrays or scalars, no overflow possible)."""
    s = p + c
    # TwoSum: e = (p + c) - s exactly
    bp = s - c
    bc = s - bp
    e = (p - bp) + (c - bc)
    with np.errstate(invalid="ignore"):
        inexact = (e != 0) & np.isfinite(s)
    if isinstance(s, np.ndarray):
        if not inexact.any():
            return s
        even = (s.view(np.int64) & 1) == 0
        fix = inexact & even
        if fix.any():
            s = s.copy()
            s[fix] = np.nextafter(s[fix], np.copysign(np.inf, e[fix]))
        return s
    if inexact and (np.float64(s).view(np.int64) & 1) == 0:
        return np.nextafter(s, np.copysign(np.inf, e))
    return s


def _f64_to_bf16(x: Any) -> Any:
    """float64 -> bfloat16 rounded once: round-to-odd to float32, then nearest-even."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(x, dtype=_F64).astype(_F32)
        back = r.astype(_F64)
        inexact = (back != x) & np.isfinite(r)
        even = (r.view(np.int32) & 1) == 0
        fix = inexact & even
        if fix.any():
            r = np.array(r, copy=True)
            toward = np.where(back < x, np.float32(np.inf), np.float32(-np.inf))
            r[fix] = np.nextafter(r[fix], toward[fix])
        out = r.astype(BFLOAT16)
    return out if isinstance(x, np.ndarray) else out[()]


def from_f64(x: Any, dtype: np.dtype) -> Any:
    """Round float64 value(s) once to `dtype` (NumPy does it for float32/float16)."""
    if dtype == BFLOAT16:
        return _f64_to_bf16(x)
    with np.errstate(over="ignore"):
        return x.astype(dtype) if isinstance(x, np.ndarray) else dtype.type(x)


def fma(a: Any, b: Any, c: Any, dtype: np.dtype) -> Any:
    """`a * b + c` rounded once to `dtype` (float16, bfloat16 or float32 operands).

    The float64 product of two such values is exact (at most 2 x 24 significant bits, exponents
    far inside float64's range), so `s = p + c` in float64 is the exact result rounded once.
    Rounding `s` again to `dtype` is still correct unless `s` is exactly a midpoint between two
    `dtype` values (then the first rounding may have moved it onto the midpoint) or is tiny
    (subnormal targets have other midpoints). Only those rare lanes take the exact path:
    round-to-odd in float64, then one rounding.
    """
    if dtype == _F64:
        return _fma64(a, b, c)
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray) and \
            not isinstance(c, np.ndarray):
        return _fma_odd(a, b, c, dtype)
    n = max(np.size(a), np.size(b), np.size(c))
    if n <= _CHUNK:
        return _fma_lanes(a, b, c, dtype)
    # in cache-sized pieces: the float64 temporaries then never leave the cache
    out = np.empty(n, dtype=dtype)
    for i in range(0, n, _CHUNK):
        j = min(i + _CHUNK, n)
        out[i:j] = _fma_lanes(*(v[i:j] if isinstance(v, np.ndarray) else v for v in (a, b, c)),
                              dtype)
    return out


_CHUNK = 1 << 14


def _fma_lanes(a: Any, b: Any, c: Any, dtype: np.dtype) -> Any:
    """`fma` on lane vectors of at most `_CHUNK` lanes."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.multiply(a, b, dtype=_F64)
        s = p + c
        if dtype == BFLOAT16:
            t = s.astype(_F32)  # ml_dtypes rounds float64 -> bfloat16 through float32
            out = t.astype(BFLOAT16)
            suspect = _midpoint_or_tiny(t.view(np.int32).copy(), 23 - 7, _BF16_TINY_F32)
        else:
            out = s.astype(dtype)
            suspect = _midpoint_or_tiny(s.view(np.int64).copy(), 52 - _NMANT[dtype],
                                        _TINY_F64[dtype])
        if not suspect.any():
            return out
        # Of the suspects, only those rounded on the way (TwoSum error; for bfloat16 also the
        # float32 step) need the exact path: an exact float64 sum is rounded once.
        lanes = np.flatnonzero(suspect)
        ps, ss = p[lanes], s[lanes]
        cs = c[lanes] if isinstance(c, np.ndarray) else c
        cs = np.asarray(cs, dtype=_F64)
        bp = ss - cs
        err = (ps - bp) + (cs - (ss - bp))
        hard = err != 0
        if dtype == BFLOAT16:
            hard |= t[lanes] != ss
        hard &= np.isfinite(ss)
    if hard.any():
        lanes = lanes[hard]
        x, y, z = (v[lanes] for v in np.broadcast_arrays(a, b, c))
        out[lanes] = _fma_odd(x, y, z, dtype)
    return out


_NMANT = {np.dtype(np.float16): 10, _F32: 23}
_TINY_F64 = {np.dtype(np.float16): np.int64(1009) << 52,  # |s| < 2**-14: float16 subnormal
             _F32: np.int64(1023 - 126) << 52}  # |s| < 2**-126: float32 subnormal
_BF16_TINY_F32 = np.int32(1) << 23  # |t| < 2**-126 (bfloat16 subnormals are float32's)


def _midpoint_or_tiny(bits: np.ndarray, drop: int, tiny: Any) -> np.ndarray:
    """Lanes whose value (`bits`: its IEEE encoding) lies exactly halfway between two values of
    a format with `drop` fewer fraction bits, or whose magnitude is below `tiny` (encoded).
    Overwrites `bits` (the caller's float64 sum is no longer needed)."""
    one = bits.dtype.type(1)
    sign_off = ~(one << (bits.dtype.itemsize * 8 - 1))
    np.bitwise_and(bits, sign_off, out=bits)  # magnitude
    small = bits < tiny
    np.bitwise_and(bits, (one << drop) - one, out=bits)
    suspect = bits == (one << (drop - 1))
    return np.logical_or(suspect, small, out=suspect)


def _fma_odd(a: Any, b: Any, c: Any, dtype: np.dtype) -> Any:
    """The exact path: sum rounded to odd in float64, then rounded once to `dtype`."""
    p = np.multiply(a, b, dtype=_F64)
    c64 = np.asarray(c, dtype=_F64) if isinstance(c, np.ndarray) else np.float64(c)
    with np.errstate(invalid="ignore", over="ignore"):
        s = _odd_sum(p, c64)
    return from_f64(s, dtype)


def _fma64(a: Any, b: Any, c: Any) -> Any:
    """float64 data (not a language dtype, but tensors may hold it): Boldo & Melquiond's
    emulated FMA, `RN(th + RO(tl + ul))` with `(uh, ul) = a*b` exactly (Veltkamp/Dekker) and
    `(th, tl) = c + uh` exactly (TwoSum). Lanes where the error-free steps could underflow or
    overflow take `Fraction` (rare); zero products and non-finite operands follow IEEE."""
    a, b, c = np.broadcast_arrays(np.asarray(a, _F64), np.asarray(b, _F64), np.asarray(c, _F64))
    with np.errstate(all="ignore"):
        out = a * b + c  # IEEE: exact enough for zero products, inf and NaN
        mag_a, mag_b, mag_c = np.abs(a), np.abs(b), np.abs(c)
        prod = mag_a * mag_b
        safe = (mag_a < 2.0 ** 995) & (mag_b < 2.0 ** 995) & (prod > 2.0 ** -900) & \
            (prod < 2.0 ** 1000) & (mag_c < 2.0 ** 1000)
        if safe.any():
            x, y, z = a[safe], b[safe], c[safe]
            uh, ul = _two_product(x, y)
            th = z + uh  # TwoSum: th + tl = c + uh exactly
            bp = th - uh  # ~ z
            tl = (uh - (th - bp)) + (z - bp)
            out[safe] = th + _odd_sum(tl, ul)
        # finite operands, finite a*b and an infinite c: the exact result is c
        inf_c = np.isinf(c) & np.isfinite(a) & np.isfinite(b)
        out[inf_c] = c[inf_c]
        rest = ~safe & ~inf_c & np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & \
            (a != 0) & (b != 0)
    flat = out.reshape(-1)
    from fractions import Fraction
    for k in np.flatnonzero(rest.reshape(-1)):  # extreme exponents only
        x, y, z = a.reshape(-1)[k], b.reshape(-1)[k], c.reshape(-1)[k]
        q = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        if q != 0:
            try:
                flat[k] = float(q)  # Fraction -> float rounds to nearest even
            except OverflowError:
                flat[k] = np.inf if q > 0 else -np.inf
        # an exact zero of non-zero terms is +0 (nearest): a*b + c computed it unless it erred
        else:
            flat[k] = 0.0
    return out if out.ndim else _F64.type(out)


def _two_product(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`x * y = hi + lo` exactly (Dekker, with Veltkamp's split; no overflow in range)."""
    hi = x * y
    split = 134217729.0  # 2**27 + 1
    t = split * x
    xh = t - (t - x)
    xl = x - xh
    t = split * y
    yh = t - (t - y)
    yl = y - yh
    lo = ((xh * yh - hi) + xh * yl + xl * yh) + xl * yl
    return hi, lo


def minimum(a: Any, b: Any) -> Any:
    """IEEE 754-2019 `minimum` (`arith.minimumf`): NaN if either operand is NaN, and -0 < +0
    (NumPy's `minimum` returns either zero)."""
    r = np.minimum(a, b)
    # equal operands: only ±0 can differ; the bitwise OR of the two gives the negative zero
    if isinstance(r, np.ndarray) or np.ndim(r):
        if not (r == 0).any():
            return r  # no zero result: no ±0 pair to order
        zero = (a == b) & (np.signbit(a) != np.signbit(b))
        return np.where(zero, -np.abs(r), r) if np.any(zero) else r
    return -abs(r) if a == b and np.signbit(a) != np.signbit(b) else r


def maximum(a: Any, b: Any) -> Any:
    """IEEE 754-2019 `maximum` (`arith.maximumf`): NaN if either is NaN, and +0 > -0."""
    r = np.maximum(a, b)
    if isinstance(r, np.ndarray) or np.ndim(r):
        if not (r == 0).any():
            return r  # no zero result: no ±0 pair to order
        zero = (a == b) & (np.signbit(a) != np.signbit(b))
        return np.where(zero, np.abs(r), r) if np.any(zero) else r
    return abs(r) if a == b and np.signbit(a) != np.signbit(b) else r


_NATIVE_HALF_SINGLE = (np.dtype(np.float16), np.dtype(np.float32))


def via_f64(fn: Any) -> Any:
    """`fn` (a NumPy ufunc: exp, log, tanh, pow, ...) evaluated in float64 and rounded once to
    the operand type: within 0.5 ulp + 2**-29 ulp of the true value, and the same on every
    machine (NumPy's float32 SIMD kernels differ between CPUs and are off by up to ~2 ulp)."""
    def apply(*xs: Any) -> Any:
        dt = np.result_type(*xs)
        if dt == _F64:
            return fn(*xs)
        if dt in _NATIVE_HALF_SINGLE and any(isinstance(x, np.ndarray) for x in xs):
            # the same float64 loop, fed by casting in buffered chunks (several times faster
            # than casting whole arrays first), then one rounding
            with np.errstate(all="ignore"):
                return fn(*xs, dtype=_F64).astype(dt)
        wide = [x.astype(_F64) if isinstance(x, np.ndarray) else np.float64(x) for x in xs]
        with np.errstate(all="ignore"):
            return from_f64(fn(*wide), dt)
    apply.__name__ = f"{getattr(fn, '__name__', 'fn')}_via_f64"
    return apply


def _sigmoid(x: Any, dtype: Any = None) -> Any:
    """`1 / (1 + exp(-x))` (in `dtype` when given, as a ufunc's `dtype=`): exp(-x) overflows
    to inf for x < -709 in float64, giving the exact limit 0."""
    x = np.asarray(x, dtype=dtype) if dtype is not None else x
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def c99_power(a: Any, b: Any, **kwargs: Any) -> Any:
    """`np.power` with C99's special values also when NumPy takes its fast path.

    For a scalar exponent 0.5 NumPy computes `sqrt(a)` instead of `pow(a, 0.5)`: the same
    correctly rounded value everywhere except `pow(-0, 0.5) = +0` (sqrt: -0) and
    `pow(-inf, 0.5) = +inf` (sqrt: NaN). `sqrt(a) + 0.0` is +0 for ±0 (round to nearest) and
    -inf is mapped to +inf, so the fast path is kept where it is bit-identical to C99 `pow`.
    Its other fast paths (exponent 2: `a * a`, -1: `1 / a`, 1, 0) already agree with C99's
    special values. Every float dtype goes through this in float64 (`via_f64`), so one fix
    covers float16, bfloat16, float32 and float64."""
    r = np.power(a, b, **kwargs)
    if np.ndim(b):
        return _lane_exponent_shortcuts(a, b, r)
    if b == 0.5:
        r = r + 0.0
        if np.ndim(r):
            neg_inf = np.isneginf(a)
            if neg_inf.any():
                r = np.where(neg_inf, np.inf, r).astype(r.dtype, copy=False)
        elif np.isneginf(a):
            r = r.dtype.type(np.inf)
    return r


def _lane_exponent_shortcuts(a: Any, b: np.ndarray, r: Any) -> Any:
    """NumPy's shortcuts for a scalar exponent (2: `a * a`, -1: `1 / a`, 0.5: C99's `sqrt`)
    applied to the lanes whose exponent is 2, -1 or 0.5, so `x ** y` has one definition
    whatever the exponent's shape (NumPy's power loop differs from them in the last bit in
    ~3% of float64 results; docs/native.md#exactness). Costs three comparisons per call."""
    square, inverse, half = b == 2.0, b == -1.0, b == 0.5
    if not (square.any() or inverse.any() or half.any()):
        return r
    wide = np.broadcast_to(np.asarray(a, dtype=r.dtype), r.shape)
    with np.errstate(all="ignore"):
        if square.any():
            r = np.where(square, wide * wide, r)
        if inverse.any():
            r = np.where(inverse, 1.0 / wide, r).astype(r.dtype, copy=False)
        if half.any():
            root = np.sqrt(wide) + 0.0
            root[np.isneginf(wide)] = np.inf
            r = np.where(half, root, r)
    return r


MATH = {name: via_f64(getattr(np, name)) for name in
        ("exp", "log", "tanh", "sin", "cos", "exp2", "log2", "tan", "sinh", "cosh",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "expm1", "log10",
         "log1p", "cbrt", "arctan2")}
MATH["sigmoid"] = via_f64(_sigmoid)
MATH["power"] = via_f64(c99_power)
"""The math ops the interpreter evaluates through float64 (see `via_f64`), by the name their
`Elementwise` trait or codegen's tables use."""


def int_to_float(x: Any, dtype: np.dtype) -> Any:
    """An integer (or bool) value cast to a float dtype, rounded once to nearest-even."""
    src = x.dtype if isinstance(x, np.ndarray | np.generic) else np.dtype(type(x))
    if src.itemsize <= 4 or src == np.bool_:
        wide = np.asarray(x, dtype=_F64) if isinstance(x, np.ndarray) else np.float64(x)
    else:
        # int64: hi (top 32 bits, low ones zero) and lo are exact in float64; sum to odd
        xi = np.asarray(x, dtype=np.int64)
        lo = xi & np.int64(0xFFFFFFFF)
        hi = xi - lo
        wide = _odd_sum(hi.astype(_F64), lo.astype(_F64))
        if not isinstance(x, np.ndarray):
            wide = np.float64(wide)
    return from_f64(wide, dtype)


def cast(x: Any, dtype: np.dtype) -> Any:
    """`pto.cast` / `arith` casts between numeric types, float results correctly rounded.

    Float -> int is not here (it traps on NaN / out-of-range: `BlockMemory.float_to_int`).
    """
    src = x.dtype if isinstance(x, np.ndarray | np.generic) else None
    if dtype.kind == "f" or dtype == BFLOAT16:
        if src is not None and src.kind in "iub":
            return int_to_float(x, dtype)
        if dtype == BFLOAT16 and src == _F64:
            return _f64_to_bf16(x)
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return dtype.type(x)


def float_in_int_range(t: Any, dtype: np.dtype) -> Any:
    """Per element: the truncated float value `t` fits `dtype` (False for NaN)."""
    bits = dtype.itemsize * 8
    lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)  # both exact in float64
    with np.errstate(invalid="ignore"):
        return (t >= lo) & (t < hi)


def round_literal(value: int | float, dtype: np.dtype) -> Any:
    """A Python number literal given a float dtype (weak typing), rounded once; beyond the
    type's range it is ±inf, as in NumPy 2 / JAX."""
    if isinstance(value, float) or abs(value) < 2 ** 53:
        with np.errstate(over="ignore"):
            return from_f64(np.float64(value), dtype)
    from fractions import Fraction
    return round_fraction(Fraction(value), dtype)


def round_fraction(q: Fraction, dtype: np.dtype) -> Any:
    """The exact rational `q` rounded to nearest-even in `dtype` (any binary float format)."""
    from fractions import Fraction
    info = ml_dtypes.finfo(dtype) if dtype == BFLOAT16 else np.finfo(dtype)
    mant = int(info.nmant)  # stored fraction bits
    emin = int(info.minexp)
    emax = int(info.maxexp) - 1
    if q == 0:
        return dtype.type(0.0)
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - mant)
    n = a / quantum
    m = int(n)
    rem = n - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m % 2 == 1):
        m += 1
    result = Fraction(m) * quantum
    if result >= Fraction(2) ** (emax + 1):
        return dtype.type(sign * np.inf)
    return dtype.type(sign * float(result))


__all__ = ["BFLOAT16", "MATH", "cast", "via_f64", "float_in_int_range", "fma", "from_f64", "int_to_float", "maximum",
           "minimum",
           "round_fraction", "round_literal"]
