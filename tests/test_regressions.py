"""Regression tests for defects a new user hit (issue 8), one test per defect.

Expected values are worked out by hand with exact arithmetic (see each docstring), never taken
from the implementation.
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


@pto.kernel
def stage_constants(o):
    x = 5.0
    with pto.pipeline() as pl:
        with pl.stage("a"):
            x = x + 1.0
            y = 2.0
        with pl.stage("b", after="a"):
            z = y * 3.0
    pto.store(o, x)
    pto.store(o + 1, z)


def test_constants_cross_pipeline_stages():
    """Item 5: a constant (re)assigned in a stage is visible in later stages and after."""
    out = run_kernel(stage_constants, 1, 1, (np.zeros(2, np.float32),))[-1]
    assert out.tolist() == [6.0, 6.0]


@pto.kernel
def after_list(o):
    with pto.pipeline() as pl:
        with pl.stage("a"):
            x = pto.load(o) + 1.0
        with pl.stage("b"):
            y = pto.load(o + 1) + 2.0
        with pl.stage("c", after=["a", "b"]):
            pto.store(o + 2, x + y)


def test_after_takes_a_list():
    """Item 6: after=[...] is a list of stage names, as the docs say."""
    out = run_kernel(after_list, 1, 1, (np.array([1.0, 2.0, 0.0], np.float32),))[-1]
    assert out.tolist() == [1.0, 2.0, 6.0]


SCALE = 2.0


@pto.kernel
def scaled(o):
    pto.store(o, pto.load(o) * SCALE)


def test_changed_module_constant_recompiles():
    """Item 7: a module-level constant folded into a kernel is part of its cache validity."""
    global SCALE
    try:
        SCALE = 2.0
        assert run_kernel(scaled, 1, 1, (np.array([3.0], np.float32),))[-1][0] == 6.0
        SCALE = 5.0
        assert run_kernel(scaled, 1, 1, (np.array([3.0], np.float32),))[-1][0] == 15.0
    finally:
        SCALE = 2.0


def test_changed_closure_constant_recompiles():
    factor = 3

    @pto.kernel
    def k(o):
        pto.store(o, pto.load(o) * factor)

    assert run_kernel(k, 1, 1, (np.array([2], np.int32),))[-1][0] == 6
    factor = 7  # noqa: F841 - read by the kernel through its closure
    assert run_kernel(k, 1, 1, (np.array([2], np.int32),))[-1][0] == 14


@pto.kernel
def lane_rows(o, R: pto.constexpr, W: pto.constexpr):
    t = pto.get_local_id()
    a = pto.alloc_local(64 * 64)
    for r in range(R):
        pto.store(a + r * W + t, 1.0)
    pto.barrier_block()
    c = pto.alloc_local(64 * 64)
    pto.fill(c, 0.0, 64 * 64)
    pto.mma(c, a, a, 64, 64, 64)
    pto.store(o + t, pto.load(c + t))


@pytest.mark.parametrize("rows", [16, 33, 64])
def test_disjoint_lane_rows_verify_at_any_trip_count(rows):
    """Item 8: lane t writing a[r*64 + t] for r < rows is race free at every trip count (the
    barrier analysis used to give up into a false WAW hazard past its enumeration limit)."""
    ck = pto.compile(lane_rows, args=(pto.alloc_tensor(256), rows, 64), block=64)
    assert ck.mlir


@pytest.mark.parametrize("rows", [16, 64])
def test_overlapping_lane_rows_still_rejected(rows):
    """...while rows that overlap across iterations between warps (stride 32) are a hazard."""
    with pytest.raises(pto.BarrierError, match="WAW hazard"):
        pto.compile(lane_rows, args=(pto.alloc_tensor(256), rows, 32), block=64)


@pto.kernel
def half_warp_barrier(o):
    i = pto.get_global_id()
    if pto.get_lane_id() < 16:
        pto.barrier()
    pto.store(o + i, 1.0)


@pto.kernel
def one_warp_barrier(o):
    i = pto.get_global_id()
    if pto.get_warp_id() == 0:
        pto.barrier()
    pto.store(o + i, 1.0)


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse"])
def test_warp_divergent_barrier_deadlocks(schedule):
    """Item 10: a pto.barrier() reached by only part of a warp is a DeadlockError naming a
    lane that took the other path; one reached by whole warps only is fine."""
    with pytest.raises(pto.DeadlockError, match=r"lane \((16|48), 0, 0\) of block \(0, 0, 0\)"):
        run_kernel(half_warp_barrier, 1, 64, (np.zeros(64, np.float32),), schedule=schedule)
    out = run_kernel(one_warp_barrier, 1, 64, (np.zeros(64, np.float32),), schedule=schedule)
    assert (out[-1] == 1.0).all()


@pto.kernel
def float_atomic_order(o, old):
    t = pto.get_local_id()
    v = 0.0
    if t < 32:
        v = 1.0
    if t == 32:
        v = 16777216.0  # 2**24: adding 1.0 to it afterwards rounds back to 2**24
    acc = pto.alloc_local(1)
    pto.fill(acc, 0.0, 1)
    pto.barrier_block()
    pto.store(old + t, pto.atomic_add(acc, v))
    pto.barrier_block()
    if t == 0:
        pto.store(o, pto.load(acc))


@pytest.mark.parametrize("schedule,total,old_of_32", [
    (None, 2 ** 24 + 32, 32.0),          # lockstep: lane order across the block
    ("in_order", 2 ** 24 + 32, 32.0),    # warp 0 first: the same order
    ("reverse", 2 ** 24, 0.0),           # warp 1 first: the 32 ones are lost to rounding
])
def test_float_atomic_add_order_per_schedule(schedule, total, old_of_32):
    """Decided in docs/language.md: lanes of a warp in lane order, warps in schedule order."""
    o, old = run_kernel(float_atomic_order, 1, 64, (np.zeros(1, np.float32),
                                                    np.zeros(64, np.float32)), schedule=schedule)
    assert o[0] == total
    assert old[32] == old_of_32
    assert old[31] == (31.0 if schedule != "reverse" else 2 ** 24)
