"""The operations of the kernel language, each with its exact reference.

One `Op` per Python-level operation a kernel author writes (`x + y`, `x // y`, `min(x, y)`,
`pto.sqrt(x)`, `pto.cast(x, d)`, `pto.fma(...)`, ...), for every dtype it accepts. `expr` is
the kernel expression over `x`, `y` (and `c`, a third operand). `ref(values..., dtype)` is the
exact result; `ulps` is None for exact operations, else the error bound (in units in the last
place of the result type) the operation is documented to meet (docs/language.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.exactness import reference as R

DTYPE_NAMES = {R.F16: "float16", R.BF16: "bfloat16", R.F32: "float32", R.I32: "int32",
               R.I64: "int64", R.BOOL: "bool_"}


@dataclass(frozen=True)
class Op:
    name: str
    expr: str
    dtype: np.dtype  # operand dtype
    ref: Callable[..., Any]
    arity: int = 2
    out: np.dtype | None = None  # result dtype when not the operand's
    ulps: float | None = None
    domain: str = ""  # input restrictions: "nonzero_y", "shift", "pow_exp", "int_range"
    third: np.dtype | None = None  # dtype of `c` (select: bool)

    @property
    def id(self) -> str:
        return f"{self.name}-{DTYPE_NAMES[self.dtype]}" + (
            f"-to-{DTYPE_NAMES[self.out]}" if self.name == "cast" else "")

    @property
    def result_dtype(self) -> np.dtype:
        return self.out if self.out is not None else self.dtype


def _cmp(fn: Callable[[Any, Any], bool]) -> Callable[..., Any]:
    return lambda a, b, dt: np.bool_(fn(float(a), float(b)) if dt.kind == "f" or dt == R.BF16
                                     else fn(int(a), int(b)))


_CMPS = [("lt", "x < y", lambda a, b: a < b), ("le", "x <= y", lambda a, b: a <= b),
         ("gt", "x > y", lambda a, b: a > b), ("ge", "x >= y", lambda a, b: a >= b),
         ("eq", "x == y", lambda a, b: a == b), ("ne", "x != y", lambda a, b: a != b)]


def _f64(fn: Callable[[float], float]) -> Callable[..., Any]:
    """A transcendental's reference: float64 (error ~1e-16, far below the bound checked)."""
    def ref(a: Any, dt: np.dtype) -> float:
        with np.errstate(all="ignore"):
            return float(fn(np.float64(float(a))))
    return ref


def _pow_ref(a: Any, b: Any, dt: np.dtype) -> float:
    """C99 / IEEE `pow` (Python's math.pow, with its exceptions turned into NaN / ±inf)."""
    x, y = float(a), float(b)
    try:
        return math.pow(x, y)
    except ValueError:  # negative finite base, non-integer exponent; or 0 ** negative
        if x == 0:
            odd = y == math.floor(y) and int(y) % 2 == 1
            return math.copysign(math.inf, x) if odd else math.inf
        return math.nan
    except OverflowError:
        odd = y == math.floor(y) and int(y) % 2 == 1
        return -math.inf if x < 0 and odd else math.inf


def float_ops(dt: np.dtype) -> list[Op]:
    t = dt.type
    ops = [
        Op("add", "x + y", dt, R.f_add), Op("sub", "x - y", dt, R.f_sub),
        Op("mul", "x * y", dt, R.f_mul), Op("div", "x / y", dt, R.f_div),
        Op("floordiv", "x // y", dt, R.f_floordiv), Op("mod", "x % y", dt, R.f_mod),
        Op("min", "min(x, y)", dt, R.f_min), Op("max", "max(x, y)", dt, R.f_max),
        Op("neg", "-x", dt, lambda a, d: t(-float(a)), arity=1),
        Op("abs", "abs(x)", dt, lambda a, d: t(abs(float(a))), arity=1),
        Op("sqrt", "pto.sqrt(x)", dt, R.f_sqrt, arity=1),
        Op("select", "pto.select(c, x, y)", dt, lambda a, b, c, d: a if c else b, arity=3,
           third=R.BOOL),
        Op("fma", "fma", dt, R.f_fma, arity=3, third=dt),
        Op("exp", "pto.exp(x)", dt, _f64(np.exp), arity=1, ulps=1.0),
        Op("log", "pto.log(x)", dt, _f64(np.log), arity=1, ulps=1.0),
        Op("tanh", "pto.tanh(x)", dt, _f64(np.tanh), arity=1, ulps=1.0),
        Op("rsqrt", "pto.rsqrt(x)", dt, _f64(lambda v: 1.0 / np.sqrt(v)), arity=1, ulps=1.0),
        Op("sigmoid", "pto.sigmoid(x)", dt, _f64(lambda v: 1.0 / (1.0 + np.exp(-v))), arity=1,
           ulps=1.0),
        Op("pow", "x ** y", dt, _pow_ref, ulps=1.0),
    ]
    ops += [Op(n, e, dt, _cmp(f), out=R.BOOL) for n, e, f in _CMPS]
    # not one operation: a chain, each step rounded (folding must not skip the roundings)
    ops.append(Op("chain", "(x + y) * y - x", dt,
                  lambda a, b, d: R.f_sub(R.f_mul(R.f_add(a, b, d), b, d), a, d)))
    return ops


def int_ops(dt: np.dtype) -> list[Op]:
    w = R.wrap
    ops = [
        Op("add", "x + y", dt, lambda a, b, d: w(int(a) + int(b), d)),
        Op("sub", "x - y", dt, lambda a, b, d: w(int(a) - int(b), d)),
        Op("mul", "x * y", dt, lambda a, b, d: w(int(a) * int(b), d)),
        Op("floordiv", "x // y", dt, R.i_floordiv, domain="nonzero_y"),
        Op("mod", "x % y", dt, R.i_mod, domain="nonzero_y"),
        Op("and", "x & y", dt, lambda a, b, d: d.type(int(a) & int(b))),
        Op("or", "x | y", dt, lambda a, b, d: d.type(int(a) | int(b))),
        Op("xor", "x ^ y", dt, lambda a, b, d: d.type(int(a) ^ int(b))),
        Op("shl", "x << y", dt, R.i_shl, domain="shift"),
        Op("shr", "x >> y", dt, R.i_shr, domain="shift"),
        Op("pow", "x ** y", dt, R.i_pow, domain="pow_exp"),
        Op("min", "min(x, y)", dt, lambda a, b, d: d.type(min(int(a), int(b)))),
        Op("max", "max(x, y)", dt, lambda a, b, d: d.type(max(int(a), int(b)))),
        Op("neg", "-x", dt, lambda a, d: w(-int(a), d), arity=1),
        Op("abs", "abs(x)", dt, lambda a, d: w(abs(int(a)), d), arity=1),
        Op("invert", "~x", dt, lambda a, d: d.type(~int(a)), arity=1),
        Op("select", "pto.select(c, x, y)", dt, lambda a, b, c, d: a if c else b, arity=3,
           third=R.BOOL),
        Op("fma", "fma", dt, lambda a, b, c, d: w(int(a) * int(b) + int(c), d), arity=3,
           third=dt),
    ]
    ops += [Op(n, e, dt, _cmp(f), out=R.BOOL) for n, e, f in _CMPS]
    return ops


def bool_ops() -> list[Op]:
    dt = R.BOOL
    b = np.bool_
    return [
        Op("and", "x & y", dt, lambda x, y, d: b(bool(x) and bool(y))),
        Op("or", "x | y", dt, lambda x, y, d: b(bool(x) or bool(y))),
        Op("xor", "x ^ y", dt, lambda x, y, d: b(bool(x) != bool(y))),
        Op("not", "not x", dt, lambda x, d: b(not bool(x)), arity=1),
        Op("eq", "x == y", dt, lambda x, y, d: b(bool(x) == bool(y))),
        Op("ne", "x != y", dt, lambda x, y, d: b(bool(x) != bool(y))),
        Op("select", "pto.select(c, x, y)", dt, lambda x, y, c, d: x if c else y, arity=3,
           third=R.BOOL),
    ]


ALL_DTYPES = (R.F16, R.BF16, R.F32, R.I32, R.I64, R.BOOL)


def cast_ops() -> list[Op]:
    ops = []
    for src in ALL_DTYPES:
        for dst in ALL_DTYPES:
            if src == dst:
                continue
            domain = "int_range" if (src.kind == "f" or src == R.BF16) and dst.kind in "iu" \
                else ""
            ops.append(Op("cast", f"pto.cast(x, pto.{DTYPE_NAMES[dst]})", src,
                          lambda a, d, s=src, t=dst: R.cast(a, s, t), arity=1, out=dst,
                          domain=domain))
    return ops


def all_ops() -> list[Op]:
    ops: list[Op] = []
    for dt in R.FLOATS:
        ops += float_ops(dt)
    for dt in R.INTS:
        ops += int_ops(dt)
    return ops + bool_ops() + cast_ops()


# -- inputs --------------------------------------------------------------------------------


def specials(dt: np.dtype) -> list[Any]:
    """Values every operation is tried on (and every pair of them for binary operations)."""
    if dt == R.BOOL:
        return [np.bool_(False), np.bool_(True)]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = dt.itemsize * 8
        vals = [0, 1, -1, 2, -2, 3, -7, 7, 100, bits - 1, bits, bits + 1, info.min, info.max,
                info.min + 1, info.max - 1, 1 << (bits // 2), -(1 << (bits // 2))]
        return [dt.type(v) for v in vals]
    fi = _finfo(dt)
    tiny_sub = fi.smallest_subnormal
    max_sub = float(fi.smallest_normal) - float(tiny_sub)
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 3.0, -3.0, 0.1, 7.0, 37.0,
            float(fi.max), -float(fi.max), float(fi.smallest_normal), -float(fi.smallest_normal),
            float(tiny_sub), -float(tiny_sub), max_sub, 1.0 + float(fi.eps),
            1.0 - float(fi.epsneg), 65504.0, 4097.0]
    return [dt.type(v) for v in vals]


def _finfo(dt: np.dtype) -> Any:
    import ml_dtypes

    return ml_dtypes.finfo(dt) if dt == R.BF16 else np.finfo(dt)


def random_values(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` values: all bit patterns equally likely for half of them (subnormals, inf, NaN
    included), small integers and halves (ties, exact cancellations) for the rest."""
    if dt == R.BOOL:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        wide = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        small = rng.integers(-300, 300, n).astype(dt)
        return np.where(rng.random(n) < 0.5, wide, small)
    bits = rng.integers(0, 1 << (dt.itemsize * 8), n, dtype=np.uint64)
    raw = bits.astype(np.uint16 if dt.itemsize == 2 else np.uint32).view(dt)
    nice = (rng.integers(-4096, 4096, n) / rng.choice([1, 2, 4, 1024], n)).astype(dt)
    return np.where(rng.random(n) < 0.5, raw, nice).astype(dt)


def restrict(op: Op, which: int, values: np.ndarray) -> np.ndarray:
    """Keep inputs inside the operation's domain (outside it is a KernelError, tested apart)."""
    dt = values.dtype
    if op.domain == "nonzero_y" and which == 1:
        return np.where(values == 0, dt.type(1), values)
    if op.domain == "shift" and which == 1:
        bits = dt.itemsize * 8
        return (np.abs(values.astype(np.int64)) % (bits + 8) - 4).astype(dt)  # -4..bits+3
    if op.domain == "pow_exp" and which == 1:
        return (np.abs(values.astype(np.int64)) % 70).astype(dt)
    if op.domain == "int_range" and which == 0:
        with np.errstate(invalid="ignore"):
            f = values.astype(np.float64)
            bits = op.result_dtype.itemsize * 8
            t = np.trunc(f)
            ok = np.isfinite(f) & (t >= -2.0 ** (bits - 1)) & (t < 2.0 ** (bits - 1))
        return np.where(ok, values, dt.type(0))
    return values


def same(got: Any, want: Any) -> bool:
    """Bit-identical, except that any NaN matches any NaN."""
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.kind == "b" or g.dtype.kind in "iu":
        return bool(g == w)
    gf, wf = float(g), float(w)
    if math.isnan(gf) or math.isnan(wf):
        return math.isnan(gf) and math.isnan(wf)
    return gf == wf and math.copysign(1, gf) == math.copysign(1, wf)


def ulp_error(got: Any, want: float, dt: np.dtype) -> float:
    """|got - want| in units in the last place of `dt` at `want` (0 when both are the same
    special value; inf when only one is NaN / infinite and `want` does not round to it)."""
    g = float(got)
    if math.isnan(want) or math.isnan(g):
        return 0.0 if math.isnan(want) and math.isnan(g) else math.inf
    fi = _finfo(dt)
    big = float(fi.max)
    if math.isinf(want) or math.isinf(g):
        if math.isinf(g) and math.isinf(want):
            return 0.0 if g == want else math.inf
        # infinity counts as the value one ulp past the largest finite one
        edge = big + _ulp(big, dt)
        gc = math.copysign(min(abs(g), edge), g)
        wc = math.copysign(min(abs(want), edge), want)
        return abs(gc - wc) / _ulp(big, dt)
    return abs(g - want) / _ulp(want, dt)


def _ulp(v: float, dt: np.dtype) -> float:
    fi = _finfo(dt)
    mant = int(fi.nmant)
    e = max(math.frexp(abs(v))[1] - 1, int(fi.minexp)) if v != 0 else int(fi.minexp)
    return math.ldexp(1.0, e - mant)
