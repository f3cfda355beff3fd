"""pypto/exact.py on inputs the language dtypes cannot reach: float64 `fma` (tensors of
np.float64), checked against `Fraction` on random, near-tie and extreme operands."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pypto import exact


def _reference(x: float, y: float, z: float) -> float:
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        with np.errstate(all="ignore"):
            return float(np.float64(x) * np.float64(y) + np.float64(z)) if not (
                math.isinf(z) and math.isfinite(x) and math.isfinite(y)) else z
    q = Fraction(x) * Fraction(y) + Fraction(z)
    if q == 0:
        return float(np.float64(x) * np.float64(y) + np.float64(z)) if x * y == 0 else 0.0
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _same(g: float, w: float) -> bool:
    if math.isnan(g) or math.isnan(w):
        return math.isnan(g) and math.isnan(w)
    return g == w and math.copysign(1, g) == math.copysign(1, w)


def test_float64_fma_is_single_rounded():
    rng = np.random.default_rng(5)
    n = 4000
    a = rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)
    c = rng.standard_normal(n) * 2.0 ** rng.integers(-120, 120, n)
    # near ties: c cancels most of a*b, or sits just off a midpoint of it
    c[:1000] = -(a[:1000] * b[:1000]) * (1 + 2.0 ** -53 * rng.integers(-4, 5, 1000))
    c[1000:1500] = 2.0 ** -80 * np.sign(rng.standard_normal(500))
    a[1500:1500 + 8] = [3.0, 1 + 2.0 ** -52, 2.0 ** 1000, 2.0 ** -1000, 1e308, 0.0, -0.0, np.inf]
    b[1500:1500 + 8] = [1 / 3, 1 - 2.0 ** -52, 2.0 ** 30, 2.0 ** -60, 10.0, -5.0, 5.0, 2.0]
    c[1500:1500 + 8] = [-1.0, -1.0, -1.0, 2.0 ** -1074, -1e308, 0.0, -0.0, -np.inf]
    got = exact.fma(a, b, c, np.dtype(np.float64))
    bad = [(a[k], b[k], c[k], got[k]) for k in range(n)
           if not _same(float(got[k]), _reference(float(a[k]), float(b[k]), float(c[k])))]
    assert not bad, bad[:5]
