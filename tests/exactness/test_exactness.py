"""Differential exactness suite: every operation, every dtype, against exact arithmetic.

For each operation of the kernel language (tests/exactness/ops.py) and each dtype it accepts:

- `test_specials_and_random`: every pair of special values (±0, ±inf, NaN, subnormals, the
  extremes of each type, ties...) plus seeded random bit patterns, run by the interpreter;
- `test_property`: hypothesis-drawn operands (property-based, shrinking to a minimal failure);
- `test_folding_agrees`: the same operations on compile-time constants after
  `canonicalize,cse`: folding must give what execution gives.

Exact operations must be bit-identical to the reference (any NaN matches any NaN);
transcendentals must be within their documented ulp bound. The default (CI) profile is
fixed-seed and takes a few seconds; `PYPTO_EXACTNESS_LONG=1` runs the long profile (many more
examples, larger random batches, exhaustive 16-bit unary inputs). See docs/language.md.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.profiles import LONG as TEST_LONG
from hypothesis import strategies as st

from tests.exactness import harness
from tests.exactness import reference as R
from tests.exactness.ops import (
    Op,
    all_ops,
    random_values,
    restrict,
    same,
    specials,
    ulp_error,
)

LONG = os.environ.get("PYPTO_EXACTNESS_LONG", "").strip() not in ("", "0") or TEST_LONG
RANDOM_LANES = 1 << 14 if LONG else 256
settings.register_profile("pypto-exact-ci", max_examples=2, derandomize=True, deadline=None,
                          database=None, suppress_health_check=list(HealthCheck))
settings.register_profile("pypto-exact-long", max_examples=300, deadline=None,
                          suppress_health_check=list(HealthCheck))
PROFILE = "pypto-exact-long" if LONG else "pypto-exact-ci"
FOLD_EXAMPLES = 10 if LONG else 1

OPS = all_ops()
STATS = {"checked": 0}


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("exact_kernels")


def _inputs(op: Op, xs: np.ndarray, ys: np.ndarray, cs: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return restrict(op, 0, xs), restrict(op, 1, ys), cs


def _reference(op: Op, x, y, c):
    if op.arity == 1:
        return op.ref(x, op.dtype)
    if op.arity == 2:
        return op.ref(x, y, op.dtype)
    return op.ref(x, y, c, op.dtype)


def check(op: Op, xs: np.ndarray, ys: np.ndarray, cs: np.ndarray, got: np.ndarray,
          where: str) -> None:
    """Compare each result with the reference; report every disagreement with its inputs."""
    bad = []
    for k in range(xs.size):
        want = _reference(op, xs[k], ys[k], cs[k])
        if op.ulps is None:
            ok = same(got[k], want)
        else:
            ok = ulp_error(got[k], want, op.result_dtype) <= op.ulps
        if not ok:
            bad.append(f"  {op.expr} with x={xs[k]!r} y={ys[k]!r} c={cs[k]!r}: got "
                       f"{got[k]!r}, expected {want!r}")
    STATS["checked"] += xs.size
    assert not bad, f"{op.id} ({where}): {len(bad)} of {xs.size} disagree\n" + "\n".join(bad[:20])


def _special_grid(op: Op, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sx = np.array(specials(op.dtype), dtype=op.dtype)
    sc = np.array(specials(harness.third_dtype(op)), dtype=harness.third_dtype(op))
    if op.arity == 1:
        xs, ys = sx, sx
    else:
        xs, ys = (a.ravel() for a in np.meshgrid(sx, sx, indexing="ij"))
    cs = sc[np.arange(xs.size) % sc.size] if op.arity == 3 else np.resize(sc, xs.size)
    if op.arity == 3:  # fma / select: every special c against a random sample of (x, y) pairs
        pick = rng.integers(0, xs.size, sc.size * 16)
        xs = np.concatenate([xs, xs[pick]])
        ys = np.concatenate([ys, ys[pick]])
        cs = np.concatenate([cs, np.repeat(sc, 16)])
    return xs.astype(op.dtype), ys.astype(op.dtype), cs.astype(harness.third_dtype(op))


def _random(op: Op, n: int, rng: np.random.Generator):
    return (random_values(op.dtype, n, rng), random_values(op.dtype, n, rng),
            random_values(harness.third_dtype(op), n, rng))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.id)
def test_specials_and_random(op: Op, kernel_dir):
    rng = np.random.default_rng(abs(hash(op.id)) % (1 << 32) if LONG else 8)
    mod = harness.module_for(op, kernel_dir)
    sx, sy, sc = _special_grid(op, rng)
    rx, ry, rc = _random(op, RANDOM_LANES, rng)
    xs, ys, cs = _inputs(op, np.concatenate([sx, rx]), np.concatenate([sy, ry]),
                         np.concatenate([sc, rc]))
    if LONG and op.arity == 1 and op.dtype.itemsize == 2:  # every 16-bit input
        allx = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(op.dtype)
        xs = restrict(op, 0, np.concatenate([xs, allx]))
        ys = np.resize(ys, xs.size)
        cs = np.resize(cs, xs.size)
    got = harness.run_lanes(op, mod, xs, ys, cs)
    check(op, xs, ys, cs, got, "interpreter")


def _values(dt: np.dtype) -> st.SearchStrategy:
    if dt == R.BOOL:
        return st.booleans().map(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.one_of(st.integers(int(info.min), int(info.max)),
                         st.sampled_from([int(v) for v in specials(dt)])).map(dt.type)
    if dt == R.BF16:
        return st.integers(0, 0xFFFF).map(
            lambda b: np.array([b], np.uint16).view(ml_dtypes.bfloat16)[0])
    width = dt.itemsize * 8
    return st.floats(width=width, allow_nan=True, allow_infinity=True,
                     allow_subnormal=True).map(dt.type)


def _tuples(op: Op, max_size: int) -> st.SearchStrategy:
    third = harness.third_dtype(op)
    return st.lists(st.tuples(_values(op.dtype), _values(op.dtype), _values(third)),
                    min_size=1, max_size=max_size)


def _arrays(op: Op, tuples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs = np.array([t[0] for t in tuples], dtype=op.dtype)
    ys = np.array([t[1] for t in tuples], dtype=op.dtype)
    cs = np.array([t[2] for t in tuples], dtype=harness.third_dtype(op))
    return _inputs(op, xs, ys, cs)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.id)
def test_property(op: Op, kernel_dir):
    mod = harness.module_for(op, kernel_dir)

    @settings(settings.get_profile(PROFILE))
    @given(_tuples(op, 32))
    def prop(tuples):
        xs, ys, cs = _arrays(op, tuples)
        check(op, xs, ys, cs, harness.run_lanes(op, mod, xs, ys, cs), "hypothesis")

    prop()


FOLDABLE = [op for op in OPS if op.ulps is None]


@pytest.mark.parametrize("op", FOLDABLE, ids=lambda o: o.id)
def test_folding_agrees(op: Op, kernel_dir):
    """Constants through canonicalize,cse: the result is the exact one, as in execution."""
    mod = harness.module_for(op, kernel_dir)
    rng = np.random.default_rng(3)
    sx, sy, sc = _special_grid(op, rng)
    rx, ry, rc = _random(op, 64, rng)
    xs = np.concatenate([sx, rx])
    ys = np.concatenate([sy, ry])
    cs = np.concatenate([sc, rc])
    # first batch: the largest values (overflow when folded) and the last special pairs
    with np.errstate(invalid="ignore"):
        f = sx.astype(np.float64)
        big = f[np.isfinite(f)].max() if op.dtype != R.BOOL else 1  # the largest finite
        top = np.flatnonzero((sx.astype(np.float64) == big) & (sy.astype(np.float64) == big))
    top = top[:1]
    for batch in range(FOLD_EXAMPLES):
        pick = rng.integers(0, xs.size, harness.SLOTS)
        if batch == 0:
            pick[:top.size] = top
        x, y, c = _inputs(op, xs[pick], ys[pick], cs[pick])
        check(op, x, y, c, harness.run_folded(op, mod, x, y, c), "after canonicalize,cse")

