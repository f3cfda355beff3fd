"""The tile vector instructions (`pto.tadd`, `pto.trowsum`, `pto.tcvt`, ...): exact semantics,
one vectorised NumPy operation per instruction (docs/language.md#tile-vector-instructions).

Two parts:
- `compute(name, ins, scalar, props, dst_dtype)`: the semantics, a pure function of NumPy
  arrays (the operands' `rows x cols` views), shared by the interpreter and the exactness
  suite's references' checks. Elementwise results are the lane ops' (the same NumPy calls and
  `pypto.exact` helpers, rounded once); reductions fold halves (`fold`), one documented order;
  `tcvt` rounds once in each of its four modes (`convert`).
- `mma_result` / `mma_accumulate`: `C + A @ B` in the accumulator type, on one tile or a stack.
The interpreter's part that runs these instructions on a block's L1 (checks, races, batch mode)
is tile_unit.py's `TileUnit` (`ctx.tiles`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto import exact

_F64 = np.dtype(np.float64)


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt == exact.BFLOAT16


def fold(x: np.ndarray, op: Any, axis: int) -> np.ndarray:
    """Reduce `x` along `axis` (-1: along each row, -2: down each column) by folding halves: while more than one
    column (row) remains, the first half is combined elementwise with the second, an odd last
    one carried to the next step. For 8 columns: ((c0+c4)+(c2+c6)) + ((c1+c5)+(c3+c7)). One
    NumPy operation per step, log2(n) steps; every intermediate is rounded to the tile's type,
    as the vector unit's folding reduction does. The halves are slices along `axis` itself
    (contiguous runs for a row sum), no transposed copies. Each step writes a new compact
    array of the half it keeps: the later steps then read a few contiguous cache lines
    instead of the first elements of every row of the full-width scratch (measured on a
    1024 x 1024 row sum: 0.4-0.5 ms against 0.8 for folding in place in one array)."""
    axis %= x.ndim
    n = x.shape[axis]

    def part(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return a[(slice(None),) * axis + (slice(lo, hi),)]

    shape = list(x.shape)
    while n > 1:
        h = n // 2
        shape[axis] = n - h
        s = np.empty(shape, dtype=x.dtype)
        op(part(x, 0, h), part(x, h, 2 * h), out=part(s, 0, h))
        if n % 2:
            part(s, h, h + 1)[...] = part(x, 2 * h, n)
        x, n = s, n - h
    return x


def _extreme(x: np.ndarray, biggest: bool, axis: int) -> np.ndarray:
    """The maximum (minimum) along `axis` as `tmax` (`tmin`) folds it: IEEE maximum is
    associative and commutative (NaN if any is NaN, +0 above -0), so any order gives these
    bits; NumPy's reduction propagates NaN, and only the sign of a zero result needs fixing."""
    r = (np.maximum if biggest else np.minimum).reduce(x, axis=axis, keepdims=True)
    if _is_float(x.dtype):
        zero = r == 0
        if zero.any():
            wanted = (x == 0) & (np.signbit(x) != biggest)  # +0 for max, -0 for min
            has = wanted.any(axis=axis, keepdims=True)
            z = x.dtype.type(0.0) if biggest else x.dtype.type(-0.0)
            other = x.dtype.type(-0.0) if biggest else x.dtype.type(0.0)
            r = np.where(zero, np.where(has, z, other), r).astype(x.dtype)
    return r


def _min(a: Any, b: Any) -> Any:
    return exact.minimum(a, b) if _is_float(np.asarray(a).dtype) else np.minimum(a, b)


def _max(a: Any, b: Any) -> Any:
    return exact.maximum(a, b) if _is_float(np.asarray(a).dtype) else np.maximum(a, b)


def _div(a: Any, b: Any) -> Any:
    return np.divide(a, b)


def _rsqrt(a: np.ndarray) -> np.ndarray:
    return (1.0 / np.sqrt(a.astype(_F64))).astype(a.dtype)  # as the lanes' math.rsqrt


def _relu(a: np.ndarray) -> np.ndarray:
    if _is_float(a.dtype):
        zero = a.dtype.type(0)
        return np.where(a > 0, a, np.where(np.isnan(a), a, zero)).astype(a.dtype)
    return np.maximum(a, 0).astype(a.dtype)


def _shl(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """As the lanes' `<<`: counts outside 0..width-1 shift every bit out (0)."""
    bits = a.dtype.itemsize * 8
    inside = (n >= 0) & (n < bits)
    return np.where(inside, np.left_shift(a, np.where(inside, n, 0)), 0).astype(a.dtype)


def _shr(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """As the lanes' `>>` (arithmetic): counts outside 0..width-1 give the sign fill."""
    bits = a.dtype.itemsize * 8
    inside = (n >= 0) & (n < bits)
    fill = np.where(a < 0, -1, 0).astype(a.dtype)
    return np.where(inside, np.right_shift(a, np.where(inside, n, 0)), fill).astype(a.dtype)


_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div, "min": _min,
    "max": _max, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shl": _shl, "shr": _shr,
}
_UNARY = {
    "abs": np.abs, "neg": np.negative, "not": np.invert,
    "exp": lambda a: exact.MATH["exp"](a), "log": lambda a: exact.MATH["log"](a),
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "recip": lambda a: np.divide(a.dtype.type(1), a),
    "relu": _relu,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def _expdif(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    return exact.MATH["exp"](np.subtract(a, v))


_FUSED = {**_BINARY, "expdif": _expdif}


def _step(r: np.ndarray, up: np.ndarray) -> np.ndarray:
    """`r` moved one representable value up (where `up`) or down (elsewhere), in place of
    its IEEE encoding (from ±inf: to ±max finite; from ±0: to ±the smallest subnormal)."""
    bits_dt = {2: np.uint16, 4: np.uint32, 8: np.uint64}[r.dtype.itemsize]
    bits = r.view(bits_dt).copy()
    sign = (bits >> (bits.dtype.itemsize * 8 - 1)).astype(bool)
    zero = (bits << 1) == 0
    away = up != sign  # moving away from zero: magnitude grows
    out = np.where(away, bits + 1, bits - 1).astype(bits_dt)
    # from a zero, the step is away from zero whichever way: the sign is the direction's
    tiny = np.where(up, 1, (1 << (bits.dtype.itemsize * 8 - 1)) | 1).astype(bits_dt)
    out = np.where(zero, tiny, out)
    return out.view(r.dtype)


def convert(a: np.ndarray, dst: np.dtype, rounding: str) -> np.ndarray:
    """`a` converted to `dst`, rounded once with `rounding` (rne, rz, rp, rm); float to int
    saturates to the int's range (NaN gives 0); int to int wraps."""
    src = a.dtype
    if not _is_float(dst):
        if not _is_float(src):
            return a.astype(dst)  # wraps, as arith.trunci / extsi
        x = a.astype(_F64)
        r = {"rne": np.rint, "rz": np.trunc, "rp": np.ceil, "rm": np.floor}[rounding](x)
        info = np.iinfo(dst)
        r = np.where(np.isnan(r), 0, r)
        big = r >= float(info.max) + 1.0  # 2**(bits-1) is exact in float64
        r = np.clip(r, float(info.min), float(info.max))
        out = r.astype(dst)
        return np.where(big, dst.type(info.max), out).astype(dst)
    r = exact.cast(a, dst)  # round to nearest even, once
    if rounding == "rne" or a.size == 0:
        return np.asarray(r, dtype=dst)
    r = np.asarray(r, dtype=dst)
    if _is_float(src):
        if src.itemsize <= dst.itemsize and not (src == np.float16 and dst == exact.BFLOAT16) \
                and not (src == exact.BFLOAT16 and dst == np.float16):
            return r  # widening is exact
        x = a.astype(_F64)  # exact for f16 / bf16 / f32 sources
        above = r.astype(_F64) > x
        below = r.astype(_F64) < x
    else:
        xi = a.astype(object)
        ri = np.array([_int_of(v) for v in r.astype(_F64).ravel()], dtype=object
                      ).reshape(r.shape)
        finite = np.isfinite(r.astype(_F64))
        above = np.where(finite, ri > xi, r.astype(_F64) > 0).astype(bool)
        below = np.where(finite, ri < xi, r.astype(_F64) < 0).astype(bool)
    nan = np.isnan(r.astype(_F64))
    if rounding == "rz":
        negative = np.signbit(r.astype(_F64))
        down, up = above & ~negative, below & negative
    elif rounding == "rp":
        down, up = np.zeros_like(above), below
    else:  # rm
        down, up = above, np.zeros_like(below)
    fix = (down | up) & ~nan
    if fix.any():
        r = np.where(fix, _step(r, up), r).astype(dst)
    return r


def _int_of(v: float) -> Any:
    return int(v) if np.isfinite(v) else 0


def _scalar(value: Any, dtype: np.dtype) -> Any:
    """A uniform value in the tile's type: one for all blocks, or one per block (an array,
    shaped to broadcast over each block's tile)."""
    if isinstance(value, np.ndarray) and value.size > 1:
        return value.astype(dtype).reshape(-1, 1, 1)
    return dtype.type(np.asarray(value).reshape(-1)[0])


def compute(name: str, ins: list[np.ndarray], scalar: Any, props: dict[str, str],
            dst_dtype: np.dtype, dst_old: np.ndarray) -> np.ndarray:
    """The result of tile instruction `name` ("tadd", "trowsum", ...) on its input tiles
    `ins` (in operand order, the destination excluded), `scalar` (a uniform value, or one per
    block, or None), its string properties; `dst_old`: the destination's current contents
    (taxpy reads it). Tiles are (blocks, rows, cols) arrays: one instruction on every block at
    once."""
    op = name[1:]
    with np.errstate(all="ignore"):
        if op in _BINARY and len(ins) == 2:
            return _BINARY[op](ins[0], ins[1])
        if op in _UNARY:
            return _UNARY[op](ins[0])
        if op.endswith("s") and op[:-1] in _BINARY and scalar is not None:
            return _BINARY[op[:-1]](ins[0], _scalar(scalar, ins[0].dtype))
        if op == "axpy":
            a = ins[0]
            s = np.broadcast_to(_scalar(scalar, a.dtype), a.shape)
            if _is_float(a.dtype):
                flat = exact.fma(np.ascontiguousarray(s).reshape(-1), a.reshape(-1),
                                 np.ascontiguousarray(dst_old).reshape(-1), a.dtype)
                return np.asarray(flat, dtype=a.dtype).reshape(a.shape)
            return s * a + dst_old
        if op == "expands":
            return np.broadcast_to(_scalar(scalar, dst_dtype), dst_old.shape)
        if op in ("cmp", "cmps"):
            b = ins[1] if op == "cmp" else _scalar(scalar, ins[0].dtype)
            return _CMP[props["cmp"]](ins[0], b).astype(dst_dtype)
        if op == "sel":
            mask, a, b = ins
            return np.where(mask != 0, a, b)
        if op == "cvt":
            return convert(ins[0], dst_dtype, props["rounding"])
        for axis, prefix in ((-1, "row"), (-2, "col")):
            if not op.startswith(prefix):
                continue
            what = op[len(prefix):]
            if what == "sum":
                return fold(ins[0], np.add, axis)
            if what in ("max", "min"):
                return _extreme(ins[0], what == "max", axis)
            if what in ("argmax", "argmin"):
                fn = np.argmax if what == "argmax" else np.argmin
                return np.expand_dims(fn(ins[0], axis=axis), axis).astype(dst_dtype)
            if what == "expand":
                return np.broadcast_to(ins[0], dst_old.shape)
            if what.startswith("expand"):
                return _FUSED[what[len("expand"):]](ins[0], ins[1])
        if op == "ci":
            per_block = dst_old.shape[-2] * dst_old.shape[-1]
            start = np.asarray(scalar, dtype=np.int64).reshape(-1, 1)
            values = np.arange(per_block, dtype=np.int64)[None, :] + start
            return values.astype(dst_dtype).reshape(-1, *dst_old.shape[-2:])
        if op == "trans":
            return np.swapaxes(ins[0], -1, -2).copy()
    raise ValueError(f"no semantics for tile instruction pto.{name}")


_INTO_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_INTO_UNARY = {"abs": np.abs, "neg": np.negative, "not": np.invert, "sqrt": np.sqrt}
_INTO_F64 = {"exp": np.exp, "log": np.log}
_NATIVE_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))


def compute_into(name: str, ins: list[np.ndarray], scalar: Any, props: dict[str, str],
                 dst: np.ndarray) -> None:
    """`dst[...] = compute(name, ins, scalar, props, dst.dtype, dst)`, the same bits, with the
    common instructions written straight into the destination (`out=`): no temporary the
    size of a tile, no second pass to copy it (the interpreter's hot path; the exactness
    suite checks both). Operands may alias the destination: elementwise ufuncs read each
    element before they write it."""
    op = name[1:]
    dt = dst.dtype
    if dt not in _NATIVE_FLOATS and (op.endswith(("div", "divs")) or dt == exact.BFLOAT16):
        dst[...] = compute(name, ins, scalar, props, dt, dst)  # true division of integers
        return
    with np.errstate(all="ignore"):
        if op.startswith(("row", "col")) and op[3:].startswith("expand") and len(ins) == 2:
            what = op[3 + len("expand"):]
            a, v = ins
            if a.dtype == dt == v.dtype:
                if what in _INTO_BINARY:
                    _INTO_BINARY[what](a, v, out=dst)
                    return
                if what == "expdif" and dt in _NATIVE_FLOATS:
                    np.subtract(a, v, out=dst)  # rounded to the tile's type, as the lanes' sub
                    np.exp(dst, out=dst, dtype=_F64, casting="same_kind")  # as exact.MATH
                    return
        elif len(ins) == 2 and op in _INTO_BINARY and ins[0].dtype == dt == ins[1].dtype:
            _INTO_BINARY[op](ins[0], ins[1], out=dst)
            return
        elif len(ins) == 1 and ins[0].dtype == dt:
            if op in _INTO_UNARY:
                _INTO_UNARY[op](ins[0], out=dst)
                return
            if op in _INTO_F64 and dt in _NATIVE_FLOATS:
                _INTO_F64[op](ins[0], out=dst, dtype=_F64, casting="same_kind")
                return
            if op.endswith("s") and op[:-1] in _INTO_BINARY and scalar is not None:
                _INTO_BINARY[op[:-1]](ins[0], _scalar(scalar, dt), out=dst)
                return
            if op == "rowsum":
                dst[...] = fold(ins[0], np.add, -1)
                return
            if op == "colsum":
                dst[...] = fold(ins[0], np.add, -2)
                return
    dst[...] = compute(name, ins, scalar, props, dt, dst)


def mma_result(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C + A @ B in the accumulator type (f16/bf16 inputs widened exactly; f16 accumulators
    computed in f32 and rounded once). Works on single tiles and on stacks of tiles."""
    acc = c.dtype
    if acc == np.float16:
        return (c.astype(np.float32) + a.astype(np.float32) @ b.astype(np.float32)).astype(acc)
    if a.dtype != acc:
        a, b = a.astype(acc), b.astype(acc)
    return c + a @ b


def mma_accumulate(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """C += A @ B into the view `c` (one tile or a stack of tiles): the bits of
    `c[...] = mma_result(c, a, b)`, without the temporaries of `c + a @ b` and the copy back
    when A, B and C share one element type (the common float32 case)."""
    if a.dtype == b.dtype == c.dtype and c.dtype != np.float16:
        np.add(c, a @ b, out=c)
    else:
        c[...] = mma_result(c, a, b)

