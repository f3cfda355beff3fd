"""Rounding: fma rounds once, int -> bfloat16 once, float -> int64 at the range's end, literals
beyond a float's range.

A regression test for a defect a new user hit (issue 8), kept next to its feature. Expected
values are worked out by hand with exact arithmetic (see each docstring), never taken from the
implementation.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel


BF16 = ml_dtypes.bfloat16


@pto.kernel
def fma_kernel(a, b, c, o):
    i = pto.get_global_id()
    pto.fma(o + i, pto.load(a + i), pto.load(b + i), pto.load(c + i))


@pytest.mark.parametrize("dtype,abc,expected", [
    # 4097 * 4097 = 16785409 = 2**24 + 2**13 + 1; + 2**-40 is just above the midpoint between
    # float32 neighbours 16785408 and 16785410 (spacing 2), so a fused result rounds up.
    (np.float32, (4097, 4097, 2.0 ** -40), 16785410.0),
    # 7 * 37 = 259 lies between bfloat16 neighbours 258 and 260 (spacing 2); 259 - 2**-50 is
    # below the midpoint, so the fused result is 258 (rounding 259 first would give 260).
    (BF16, (7, 37, -2.0 ** -50), 258.0),
    # float16: 33 * 63 = 2079 is the midpoint of 2078 and 2080; +-2**-24 decides (float16 was
    # already right: its whole exponent range fits in float64's significand)
    (np.float16, (33, 63, 2.0 ** -24), 2080.0),
    (np.float16, (33, 63, -2.0 ** -24), 2078.0),
])
def test_fma_is_single_rounded(dtype, abc, expected):
    """Item 1: pto.fma rounds once (float32 used to round through float64 first)."""
    a, b, c = (np.array([v], dtype=dtype) for v in abc)
    assert float(np.array([abc[2]], dtype=dtype)[0]) == abc[2]  # inputs are exact
    out = run_kernel(fma_kernel, 1, 1, (a, b, c, np.zeros(1, dtype)))[-1]
    assert float(out[0]) == expected


@pto.kernel
def to_bf16(a, o):
    i = pto.get_global_id()
    pto.store(o + i, pto.cast(pto.load(a + i), pto.bfloat16))


@pytest.mark.parametrize("dtype,value,expected", [
    # 2**24 + 2**16 + 1: bfloat16 spacing at 2**24 is 2**17; 2**16 + 1 is above half of it
    (np.int32, 2 ** 24 + 2 ** 16 + 1, 2 ** 24 + 2 ** 17),
    # 2**40 + 2**32 + 1: spacing 2**33 -> rounds up to 2**40 + 2**33
    (np.int64, 2 ** 40 + 2 ** 32 + 1, 2 ** 40 + 2 ** 33),
    # int64 -> float64 alone would already round 2**62 + 2**54 + 1 to 2**62 + 2**54 (a tie)
    (np.int64, 2 ** 62 + 2 ** 54 + 1, 2 ** 62 + 2 ** 55),
])
def test_int_to_bfloat16_rounds_once(dtype, value, expected):
    """Item 2: int -> bfloat16 casts round once (they used to go through float32)."""
    out = run_kernel(to_bf16, 1, 1, (np.array([value], dtype), np.zeros(1, BF16)))[-1]
    assert float(out[0]) == expected


@pto.kernel
def to_i64(a, o):
    i = pto.get_global_id()
    pto.store(o + i, pto.cast(pto.load(a + i), pto.int64))


def test_float_to_int64_min_is_in_range():
    """Item 3: -2**63 is exactly INT64_MIN; 2**63 is out of range."""
    out = run_kernel(to_i64, 1, 2, (np.array([-2.0 ** 63, 2.0 ** 62], np.float32),
                                    np.zeros(2, np.int64)))[-1]
    assert out.tolist() == [-2 ** 63, 2 ** 62]
    with pytest.raises(pto.KernelError, match="out of range"):
        run_kernel(to_i64, 1, 1, (np.array([2.0 ** 63], np.float32), np.zeros(1, np.int64)))


@pto.kernel
def big_literals(x, o):
    v = pto.load(x)
    pto.store(o, v * 1e6)
    pto.store(o + 1, v + 100000)
    pto.store(o + 2, v - 1e39)


@pto.kernel
def big_fill(o):
    buf = pto.alloc_local(4, dtype=pto.float16)
    pto.fill(buf, 1e6, 4)
    pto.barrier_block()
    pto.store(o, pto.load(buf))


@pto.kernel
def big_int_literal(x, o):
    pto.store(o, pto.load(x) + 2 ** 40)


def test_literal_beyond_float_range_is_inf():
    """Item 4: weak typing turns a float literal too large for float16 into inf (it crashed
    with a bare OverflowError); an int literal beyond an int type stays a CompileError."""
    out = run_kernel(big_literals, 1, 1, (np.array([1.0], np.float16), np.zeros(3, np.float16)))
    assert out[-1].tolist() == [np.inf, np.inf, -np.inf]
    assert run_kernel(big_fill, 1, 1, (np.zeros(1, np.float16),))[-1][0] == np.inf
    assert run_kernel(big_literals, 1, 1, (np.array([1.0], np.float32),
                                           np.zeros(3, np.float32)))[-1][2] == -np.inf
    with pytest.raises(pto.CompileError, match="does not fit"):
        run_kernel(big_int_literal, 1, 1, (np.array([1], np.int32), np.zeros(1, np.int32)))
