"""int32 / int64 integer kernels: bitwise operators, shifts, floor division and modulo.

The language gives `//` and `%` Python semantics (floor division; `%` has the divisor's sign)
and wraps on overflow, so NumPy's int32 operators are the exact reference. Also: a module
constant mask, a popcount loop with a loop-carried value, and `pto.cast` between widths.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto

LOW_BYTE = 0xFF
NOPS = 9


@pto.kernel
def int_ops(a, b, out, n):
    i = pto.get_global_id()
    if i >= n:
        return
    x = pto.load(a + i)
    y = pto.load(b + i)
    s = y & 31                         # shift counts in [0, 31]
    o = out + i * NOPS
    pto.store(o + 0, x & y)
    pto.store(o + 1, x | y)
    pto.store(o + 2, x ^ y)
    pto.store(o + 3, x << s)
    pto.store(o + 4, x >> s)           # arithmetic shift (signed)
    pto.store(o + 5, ~x)
    pto.store(o + 6, x // y)
    pto.store(o + 7, x % y)
    pto.store(o + 8, (x & LOW_BYTE) * y + x)   # wraps on overflow


def int_ops_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = b & 31
    with np.errstate(all="ignore"):
        cols = [a & b, a | b, a ^ b, np.left_shift(a, s), np.right_shift(a, s), ~a,
                a // b, a % b, (a & LOW_BYTE) * b + a]
    return np.stack(cols, axis=1).astype(a.dtype)


@pto.kernel
def popcount(a, out, n, BITS: pto.constexpr):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        count = 0
        for k in range(BITS):
            count = count + ((x >> k) & 1)
        pto.store(out + i, count)


@pto.kernel
def widen_narrow(a, wide, back, n):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        w = pto.cast(x, pto.int64) * 3_000_000_000     # exact in int64
        pto.store(wide + i, w)
        pto.store(back + i, pto.cast(w, pto.int32))   # truncation keeps the low 32 bits


SIZES = [1, 64, 300, 1025]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n", SIZES)
def test_integer_operators_match_numpy(run, n, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(n)
    a = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(dtype)
    b = rng.integers(-1000, 1000, n).astype(dtype)
    b[b == 0] = 3
    signs = np.array([[7, 2], [-7, 2], [7, -2], [-7, -2], [6, 3], [-6, 3], [0, -5],
                      [info.min, -3], [info.max, 7], [-1, 1],
                      [info.min, -1]],          # INT_MIN // -1 wraps to INT_MIN
                     dtype=dtype)
    k = min(n, len(signs))
    a[:k], b[:k] = signs[:k, 0], signs[:k, 1]
    out = np.zeros(n * NOPS, dtype)
    block = 256
    _, _, out = run(int_ops, (n + block - 1) // block, block, (a, b, out, n))
    np.testing.assert_array_equal(out.reshape(n, NOPS), int_ops_ref(a, b))


def test_python_floor_division_and_modulo_signs(run):
    a = np.array([-7, 7, -7, 7, -1, 1, -9, 9], np.int32)
    b = np.array([2, -2, -2, 2, 5, -5, 3, -3], np.int32)
    out = np.zeros(a.size * NOPS, np.int32)
    _, _, out = run(int_ops, 1, 32, (a, b, out, a.size))
    out = out.reshape(-1, NOPS)
    assert out[:, 6].tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())]
    assert out[:, 7].tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())]
    assert out[:, 6].tolist() == [-4, -4, 3, 3, -1, -1, -3, -3]


@pytest.mark.parametrize("n", [1, 100, 513])
def test_popcount_loop(run, n):
    a = np.random.default_rng(n).integers(-2**31, 2**31, n).astype(np.int32)
    a[0] = -1
    out = np.zeros(n, np.int32)
    _, out = run(popcount, (n + 127) // 128, 128, (a, out, n, 32))
    ref = np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in a], np.int32)
    np.testing.assert_array_equal(out, ref)


def test_integer_casts_between_widths(run):
    a = np.array([0, 1, -1, 2**31 - 1, -2**31, 12345, -54321], np.int32)
    wide = np.zeros(a.size, np.int64)
    back = np.zeros(a.size, np.int32)
    _, wide, back = run(widen_narrow, 1, 32, (a, wide, back, a.size))
    ref = a.astype(np.int64) * 3_000_000_000
    np.testing.assert_array_equal(wide, ref)
    np.testing.assert_array_equal(back, ref.astype(np.int32))
