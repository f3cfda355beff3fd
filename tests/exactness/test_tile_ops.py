"""The tile vector instructions against exact references, bit for bit (docs/language.md#tile-vector-instructions).

Every elementwise instruction on every dtype it accepts gets every pair of the special values
of tests/exactness/ops.py (±0, ±inf, NaN, subnormals, extremes, ties) plus random bit
patterns, laid out as a tile; each element is compared with the lane operation's exact
reference (tests/exactness/reference.py: Fractions rounded once), bit for bit (any NaN matches
any NaN), transcendentals within their documented 1 ulp. Reductions are compared with the
documented fold-halves order evaluated element by element with the same exact references;
`tcvt` with each rounding mode against the Fraction of the source rounded in that direction.
"""

from __future__ import annotations

import bisect
import itertools
import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest

from tests.exactness import reference as R
from tests.exactness.ops import random_values, same, specials, ulp_error
from tests.exactness.tile_harness import run_tile

COLS = 32


@pytest.fixture(scope="module")
def kdir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("tile_kernels")


def _pairs(dt: np.dtype, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of specials plus random values, padded to whole rows of COLS."""
    sp = specials(dt)
    a = [x for x, _ in itertools.product(sp, sp)]
    b = [y for _, y in itertools.product(sp, sp)]
    xs = np.concatenate([np.array(a, dtype=dt), random_values(dt, 256, rng)])
    ys = np.concatenate([np.array(b, dtype=dt), random_values(dt, 256, rng)])
    pad = -xs.size % COLS
    xs = np.concatenate([xs, np.ones(pad, dtype=dt)])
    ys = np.concatenate([ys, np.ones(pad, dtype=dt)])
    return xs.reshape(-1, COLS), ys.reshape(-1, COLS)


def _i_min(a: Any, b: Any, d: np.dtype) -> Any:
    return d.type(min(int(a), int(b)))


def _i_max(a: Any, b: Any, d: np.dtype) -> Any:
    return d.type(max(int(a), int(b)))


def _f64(fn: Callable[[float], float]) -> Callable[..., float]:
    def ref(a: Any, d: np.dtype) -> float:
        with np.errstate(all="ignore"):
            return float(fn(np.float64(float(a))))
    return ref


FLOAT_BINARY = {"tadd": R.f_add, "tsub": R.f_sub, "tmul": R.f_mul, "tdiv": R.f_div,
                "tmin": R.f_min, "tmax": R.f_max}
INT_BINARY = {"tadd": lambda a, b, d: R.wrap(int(a) + int(b), d),
              "tsub": lambda a, b, d: R.wrap(int(a) - int(b), d),
              "tmul": lambda a, b, d: R.wrap(int(a) * int(b), d),
              "tmin": _i_min, "tmax": _i_max,
              "tand": lambda a, b, d: d.type(int(a) & int(b)),
              "tor": lambda a, b, d: d.type(int(a) | int(b)),
              "txor": lambda a, b, d: d.type(int(a) ^ int(b)),
              "tshl": R.i_shl, "tshr": R.i_shr}
FLOAT_UNARY_EXACT = {"tabs": lambda a, d: d.type(abs(float(a))),
                     "tneg": lambda a, d: d.type(-float(a)), "tsqrt": R.f_sqrt,
                     "trecip": lambda a, d: R.f_div(d.type(1), a, d),
                     "trelu": lambda a, d: a if math.isnan(float(a)) else
                     d.type(max(float(a), 0.0) if float(a) > 0 else 0.0)}
FLOAT_UNARY_ULP = {"texp": _f64(np.exp), "tlog": _f64(np.log),
                   "trsqrt": _f64(lambda v: 1.0 / np.sqrt(v))}
INT_UNARY = {"tabs": lambda a, d: R.wrap(abs(int(a)), d), "tneg": lambda a, d: R.wrap(-int(a), d),
             "tnot": lambda a, d: d.type(~int(a)),
             "trelu": lambda a, d: d.type(max(int(a), 0))}


def _check(got: np.ndarray, want: list[Any], what: str, ulps: float | None = None,
           dt: np.dtype | None = None) -> None:
    flat = got.reshape(-1)
    for i, w in enumerate(want):
        if ulps is None:
            ok = same(flat[i], w)
        else:
            ok = ulp_error(flat[i], float(w), dt) <= ulps
        assert ok, f"{what}: element {i}: got {flat[i]!r}, want {w!r}"


@pytest.mark.parametrize("dt", R.FLOATS + R.INTS, ids=str)
def test_elementwise_binary(dt: np.dtype, kdir) -> None:
    table = FLOAT_BINARY if dt in R.FLOATS else INT_BINARY
    xs, ys = _pairs(dt, np.random.default_rng(1))
    if dt in R.INTS:  # shift counts in and around 0..width-1
        bits = dt.itemsize * 8
        counts = (np.abs(ys.astype(np.int64)) % (bits + 8) - 4).astype(dt)
    for name, ref in table.items():
        b = counts if name in ("tshl", "tshr") else ys
        got = run_tile(name, kdir, np.zeros_like(xs), [xs, b])
        want = [ref(x, y, dt) for x, y in zip(xs.reshape(-1), b.reshape(-1))]
        _check(got, want, f"{name} {dt}")


@pytest.mark.parametrize("dt", R.FLOATS + R.INTS, ids=str)
def test_elementwise_unary(dt: np.dtype, kdir) -> None:
    xs, _ = _pairs(dt, np.random.default_rng(2))
    if dt in R.FLOATS:
        tables = [(FLOAT_UNARY_EXACT, None), (FLOAT_UNARY_ULP, 1.0)]
    else:
        tables = [(INT_UNARY, None)]
    for table, ulps in tables:
        for name, ref in table.items():
            got = run_tile(name, kdir, np.zeros_like(xs), [xs])
            want = [ref(x, dt) for x in xs.reshape(-1)]
            _check(got, want, f"{name} {dt}", ulps, dt)


@pytest.mark.parametrize("dt", R.FLOATS + R.INTS, ids=str)
def test_tile_scalar(dt: np.dtype, kdir) -> None:
    xs, _ = _pairs(dt, np.random.default_rng(3))
    table = FLOAT_BINARY if dt in R.FLOATS else INT_BINARY
    for s in (dt.type(3), dt.type(-2)) if dt in R.INTS else (dt.type(0.1), dt.type(-0.0),
                                                             dt.type(np.inf)):
        for name in ("tadds", "tsubs", "tmuls", "tdivs", "tmins", "tmaxs"):
            if name[:-1] not in table:
                continue
            got = run_tile(name, kdir, np.zeros_like(xs), [xs], scalar=s)
            want = [table[name[:-1]](x, s, dt) for x in xs.reshape(-1)]
            _check(got, want, f"{name} {dt} s={s}")
        acc = np.roll(xs, 1)
        got = run_tile("taxpy", kdir, acc, [xs], scalar=s)
        if dt in R.FLOATS:
            want = [R.f_fma(s, x, c, dt) for x, c in zip(xs.reshape(-1), acc.reshape(-1))]
        else:
            want = [R.wrap(int(s) * int(x) + int(c), dt)
                    for x, c in zip(xs.reshape(-1), acc.reshape(-1))]
        _check(got, want, f"taxpy {dt} s={s}")
        got = run_tile("texpands", kdir, np.zeros_like(xs), [], scalar=s)
        _check(got, [s] * xs.size, f"texpands {dt}")


_OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@pytest.mark.parametrize("dt", R.FLOATS + R.INTS, ids=str)
def test_compare_and_select(dt: np.dtype, kdir) -> None:
    xs, ys = _pairs(dt, np.random.default_rng(4))
    conv = float if dt in R.FLOATS else int
    for op, fn in _OPS.items():
        mask = run_tile("tcmp", kdir, np.zeros(xs.shape, np.int32), [xs, ys], props=f'"{op}"')
        want = [np.int32(fn(conv(x), conv(y))) for x, y in zip(xs.reshape(-1), ys.reshape(-1))]
        _check(mask, want, f"tcmp {op} {dt}")
        s = dt.type(1)
        got = run_tile("tcmps", kdir, np.zeros(xs.shape, np.int32), [xs], scalar=s,
                       props=f'"{op}"')
        _check(got, [np.int32(fn(conv(x), conv(s))) for x in xs.reshape(-1)], f"tcmps {op}")
    sel = run_tile("tsel", kdir, np.zeros_like(xs), [mask, xs, ys])
    want = [x if m else y for m, x, y in zip(mask.reshape(-1), xs.reshape(-1), ys.reshape(-1))]
    _check(sel, want, f"tsel {dt}")


def _fold_ref(row: list[Any], op: Callable[[Any, Any], Any]) -> Any:
    """The documented order: fold halves, an odd last element carried."""
    while len(row) > 1:
        h = len(row) // 2
        row = [op(row[i], row[h + i]) for i in range(h)] + row[2 * h:]
    return row[0]


@pytest.mark.parametrize("dt", R.FLOATS + R.INTS, ids=str)
@pytest.mark.parametrize("cols", [32, 7])
def test_reductions_in_the_documented_order(dt: np.dtype, cols: int, kdir) -> None:
    rng = np.random.default_rng(5)
    xs = random_values(dt, 12 * cols, rng).reshape(12, cols)
    if dt in R.FLOATS:
        xs[0, 0] = np.nan
        xs[1] = dt.type(-0.0)
        add, mx, mn = (lambda a, b: R.f_add(a, b, dt)), (lambda a, b: R.f_max(a, b, dt)), \
            (lambda a, b: R.f_min(a, b, dt))
    else:
        add = lambda a, b: R.wrap(int(a) + int(b), dt)  # noqa: E731
        mx, mn = (lambda a, b: _i_max(a, b, dt)), (lambda a, b: _i_min(a, b, dt))
    rows = xs.shape[0]
    for what, op in (("sum", add), ("max", mx), ("min", mn)):
        got = run_tile(f"trow{what}", kdir, np.zeros((rows, 1), dt), [xs])
        _check(got, [_fold_ref(list(r), op) for r in xs], f"trow{what} {dt}")
        got = run_tile(f"tcol{what}", kdir, np.zeros((1, cols), dt), [xs])
        _check(got, [_fold_ref(list(c), op) for c in xs.T], f"tcol{what} {dt}")
    key = (lambda v: (math.isnan(float(v)), float(v))) if dt in R.FLOATS else int
    for what, pick in (("argmax", max), ("argmin", min)):
        got = run_tile(f"trow{what}", kdir, np.zeros((rows, 1), np.int32), [xs])
        want = []
        for r in xs:
            if dt in R.FLOATS and np.isnan(r.astype(np.float64)).any():
                want.append(int(np.flatnonzero(np.isnan(r.astype(np.float64)))[0]))
                continue
            best = pick(float(v) if dt in R.FLOATS else int(v) for v in r)
            want.append(next(i for i, v in enumerate(r)
                             if (float(v) if dt in R.FLOATS else int(v)) == best))
        _check(got, [np.int32(w) for w in want], f"trow{what} {dt}")
    del key


@pytest.mark.parametrize("dt", R.FLOATS, ids=str)
def test_expands_fused_and_expdif(dt: np.dtype, kdir) -> None:
    rng = np.random.default_rng(6)
    xs = random_values(dt, 8 * COLS, rng).reshape(8, COLS)
    v = random_values(dt, 8, rng).reshape(8, 1)
    w = random_values(dt, COLS, rng).reshape(1, COLS)
    got = run_tile("trowexpand", kdir, np.zeros_like(xs), [v])
    _check(got, [v[r, 0] for r in range(8) for _ in range(COLS)], "trowexpand")
    got = run_tile("tcolexpand", kdir, np.zeros_like(xs), [w])
    _check(got, [w[0, c] for _ in range(8) for c in range(COLS)], "tcolexpand")
    for what, ref in FLOAT_BINARY.items():
        name = what[1:]
        got = run_tile(f"trowexpand{name}", kdir, np.zeros_like(xs), [xs, v])
        _check(got, [ref(xs[r, c], v[r, 0], dt) for r in range(8) for c in range(COLS)],
               f"trowexpand{name} {dt}")
        got = run_tile(f"tcolexpand{name}", kdir, np.zeros_like(xs), [xs, w])
        _check(got, [ref(xs[r, c], w[0, c], dt) for r in range(8) for c in range(COLS)],
               f"tcolexpand{name} {dt}")
    got = run_tile("trowexpandexpdif", kdir, np.zeros_like(xs), [xs, v])
    with np.errstate(all="ignore"):  # exp of the difference rounded to the tile's type
        want = [float(np.exp(np.float64(float(R.f_sub(xs[r, c], v[r, 0], dt)))))
                for r in range(8) for c in range(COLS)]
    flat = got.reshape(-1)
    for i, want_i in enumerate(want):
        if math.isnan(want_i):
            assert math.isnan(float(flat[i]))
            continue
        with np.errstate(all="ignore"):
            assert ulp_error(flat[i], want_i, dt) <= 1.0, (i, flat[i], want_i)


def _neighbours(q: Fraction, dt: np.dtype) -> tuple[Fraction | None, Fraction | None]:
    """The largest finite value of `dt` <= |q| and the smallest >= |q| (None: beyond max)."""
    if dt == R.F32:
        r = R.round_to(q if q >= 0 else -q, dt)
        vals = [np.nextafter(r, np.float32(-np.inf)), r, np.nextafter(r, np.float32(np.inf))]
        fr = sorted(Fraction(float(v)) for v in vals if math.isfinite(float(v)) and v >= 0)
    else:
        _, fr = R._table(dt)
    a = abs(q)
    i = bisect.bisect_left(fr, a)  # fr[i - 1] < a <= fr[i]
    hi = fr[i] if i < len(fr) else None
    lo = hi if hi == a else (fr[i - 1] if i > 0 else None)
    return lo, hi


def _directed(q: Fraction, dt: np.dtype, mode: str) -> Any:
    """`q` (non-zero) rounded in `mode` in float `dt`, from the two neighbours of |q| among
    the values of `dt` (exact Fractions)."""
    if mode == "rne":
        return R.round_to(q, dt)
    lo, hi = _neighbours(q, dt)
    negative = q < 0
    toward_zero = mode == "rz" or (mode == "rp" and negative) or (mode == "rm" and not negative)
    mag = lo if toward_zero else hi
    if mag is None:
        return dt.type(-np.inf if negative else np.inf)
    value = -float(mag) if negative else float(mag)
    return dt.type(-0.0) if negative and mag == 0 else dt.type(value)


def _sat(x: Any, mode: str, dst: np.dtype) -> Any:
    f = float(x)
    if math.isnan(f):
        return dst.type(0)
    info = np.iinfo(dst)
    if math.isinf(f):
        return dst.type(info.max if f > 0 else info.min)
    q = Fraction(f)
    n = {"rz": math.trunc, "rp": math.ceil, "rm": math.floor}.get(mode)
    v = n(q) if n else round(q)  # Python's round of a Fraction: ties to even
    return dst.type(min(max(v, info.min), info.max))


@pytest.mark.parametrize("mode", ["rne", "rz", "rp", "rm"])
@pytest.mark.parametrize("src,dst", [(R.F32, R.F16), (R.F32, R.BF16), (R.F16, R.F32),
                                     (R.BF16, R.F16), (R.F32, R.I32), (R.F16, R.I32),
                                     (R.F32, R.I64), (R.I32, R.F32), (R.I64, R.F32),
                                     (R.I32, R.F16), (R.I64, R.I32)], ids=str)
def test_tcvt_every_rounding_mode_against_fractions(src: np.dtype, dst: np.dtype, mode: str,
                                                    kdir) -> None:
    rng = np.random.default_rng(7)
    xs, _ = _pairs(src, rng)
    if src in R.FLOATS and dst in R.FLOATS:
        xs = np.concatenate([xs.reshape(-1), (random_values(R.F64 if False else src, 256, rng))])
        xs = xs[: xs.size - xs.size % COLS].reshape(-1, COLS)
    got = run_tile("tcvt", kdir, np.zeros(xs.shape, dst), [xs], props=f'rounding="{mode}"')
    want = []
    for x in xs.reshape(-1):
        if dst in R.INTS:
            want.append(_sat(x, mode, dst) if src in R.FLOATS else R.wrap(int(x), dst))
        elif src in R.INTS:
            want.append(_directed(Fraction(int(x)), dst, mode))
        elif not math.isfinite(float(x)):
            want.append(dst.type(float(x)))
        elif float(x) == 0:
            want.append(dst.type(float(x)))
        else:
            want.append(_directed(Fraction(float(x)), dst, mode))
    _check(got, want, f"tcvt {src}->{dst} {mode}")


def test_tci_and_ttrans(kdir) -> None:
    got = run_tile("tci", kdir, np.zeros((4, 8), np.int32), [], scalar=np.int32(2**31 - 5))
    want = [R.wrap(2**31 - 5 + i, R.I32) for i in range(32)]
    _check(got, want, "tci")
    xs = np.arange(6 * 10, dtype=np.float32).reshape(6, 10) * np.float32(0.5)
    got = run_tile("ttrans", kdir, np.zeros((10, 6), np.float32), [xs])
    assert np.array_equal(got, xs.T)
