"""Float `min` / `max` (and `atomic_max`) of NaNs natively: the interpreter's choice, NumPy's,
bits unchanged — the first operand if it is a NaN, else the second (quick_ops.extreme_ops,
docs/native.md#exactness). LLVM's `llvm.maximum` / `llvm.minimum` return *a* NaN: before, max
of two NaNs gave the second's payload and min of -NaN and NaN the positive one."""

from __future__ import annotations

import numpy as np

import pypto as pto
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def extremes(a, b, lo, hi):
    i = pto.get_global_id()
    x = pto.load(a + i)
    y = pto.load(b + i)
    pto.store(lo + i, min(x, y))
    pto.store(hi + i, max(x, y))


@pto.kernel
def running_max(x, out):
    i = pto.get_global_id()
    pto.atomic_max(out + i % 2, pto.load(x + i))


def _bits(*words: int) -> np.ndarray:
    return np.array(words, np.uint32).view(np.float32)


def test_min_max_of_nans_keep_numpys_choice():
    a = _bits(0x7FC00001, 0xFFC00003, 0x7FC00001, 0x3F800000, 0x7F800001, 0x80000000,
              0x00000000, 0x7FC00001) .copy()
    b = _bits(0x7FC00002, 0x7FC00002, 0x3F800000, 0x7FC00002, 0x3F800000, 0x00000000,
              0x80000000, 0xFFC00004).copy()
    n = a.size
    interp, native = both(extremes, 1, n, [a, b, np.zeros(n, np.float32),
                                           np.zeros(n, np.float32)])
    assert same_bits(interp, native)
    lo, hi = native[2], native[3]
    np.testing.assert_array_equal(lo.view(np.uint32)[:5], np.minimum(a, b).view(np.uint32)[:5])
    np.testing.assert_array_equal(hi.view(np.uint32)[:5], np.maximum(a, b).view(np.uint32)[:5])
    assert lo.view(np.uint32)[5] == hi.view(np.uint32)[6] ^ 0x80000000  # -0 < +0 both ways


def test_atomic_max_of_nans_agrees():
    x = _bits(0x7FC00001, 0x3F800000, 0xFFC00003, 0x7FC00002, 0x7FC00005, 0x40000000,
              0x3F800000, 0x7FC00009)
    out = _bits(0x00000000, 0x7FC00007)
    interp, native = both(running_max, 1, x.size, [x.copy(), out.copy()])
    assert same_bits(interp, native)
    assert native[1].view(np.uint32)[1] == 0x7FC00007  # (the NaN held first stays)
