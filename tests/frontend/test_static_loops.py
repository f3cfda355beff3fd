"""Static loops and compile-time folding (docs/language.md#static-loops): `for x in (...)` and
`pto.static_range` unroll in the frontend; `math.*` and Python builtins on compile-time values
are evaluated as Python does, then rounded to the element type. Exact against NumPy, through
both IR levels, the debugger and the cost model (tests/frontend/everywhere.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto as pto
from tests.frontend.everywhere import run_everywhere

GELU_C = math.sqrt(2.0 / math.pi)


@pto.kernel
def weighted(x, o, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        acc = v * 0.0
        for w in (0.5, 2.0, 3.0):            # a tuple of constants
            acc = acc + v * w
        for j in pto.static_range(1, 9, 3):  # 1, 4, 7
            acc = acc + j
        acc = acc * math.sqrt(2.0 / math.pi) + int(7 / 2)
        pto.store(o + i, acc)


def test_static_loops_unroll_and_fold_exactly_as_numpy():
    n = 100
    x = np.linspace(-3, 3, n).astype(np.float32)
    (o,) = run_everywhere(weighted, 128, (x, np.zeros(n, np.float32), n))[1:]
    f32 = np.float32
    acc = x * f32(0.0)
    for w in (0.5, 2.0, 3.0):
        acc = acc + x * f32(w)
    for j in (1, 4, 7):
        acc = acc + f32(j)
    ref = acc * f32(GELU_C) + f32(3)
    np.testing.assert_array_equal(o, ref)


@pto.kernel
def warp_tree(x, o):
    """The shuffle-free warp tree over L1 with a static offset list (the CUDA habit)."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64, pto.int32)
    pto.store(buf + t, pto.load(x + t))
    pto.barrier_block()
    for off in (32, 16, 8, 4, 2, 1):
        if t < off:
            pto.store(buf + t, pto.load(buf + t) + pto.load(buf + t + off))
        pto.barrier_block()
    if t == 0:
        pto.store(o, pto.load(buf))


def test_tuple_loop_over_offsets_leaves_no_loop_in_the_ir():
    x = np.arange(64, dtype=np.int32) * 3 - 50
    (o,) = run_everywhere(warp_tree, 64, (x, np.zeros(1, np.int32)))[1:]
    assert o[0] == x.sum()
    ir = pto.compile(warp_tree, args=(pto.tensor(x), pto.tensor(np.zeros(1, np.int32))),
                     block=64).mlir
    assert "scf.for" not in ir and ir.count("pto.barrier_block") >= 7


@pto.kernel
def pairs(x, o):
    i = pto.get_global_id()
    v = pto.load(x + i)
    for scale, shift in ((2, 1), (3, -4)):   # tuple targets
        v = v * scale + shift
    for k in pto.static_range(3):
        if k == 1:                           # a compile-time condition: one branch lowered
            v = v + 100
    pto.store(o + i, v)


@pto.kernel
def enumerated(x, o):
    i = pto.get_global_id()
    v = x[i]
    acc = v * 0
    for k, w in enumerate(reversed((1, 10, 100))):
        acc += v * w + k
    for a, b in zip((1, 2), (30, 40)):
        acc += a * b
    o[i] = acc


def test_enumerate_zip_reversed_of_compile_time_tuples():
    x = np.arange(16, dtype=np.int32) - 5
    (_, o) = run_everywhere(enumerated, 16, (x, np.zeros(16, np.int32)))
    np.testing.assert_array_equal(o, x * 100 + 0 + x * 10 + 1 + x * 1 + 2 + 30 + 80)


def test_tuple_targets_and_compile_time_conditions():
    x = np.arange(32, dtype=np.int32)
    (o,) = run_everywhere(pairs, 32, (x, np.zeros(32, np.int32)))[1:]
    np.testing.assert_array_equal(o, (x * 2 + 1) * 3 - 4 + 100)


@pto.kernel
def folded_half(o):
    i = pto.get_global_id()
    c = math.exp(1.0) / 3 + round(2.5) + pow(2, 10) + float(len((1, 2, 3)))
    pto.store(o + i, pto.cast(i, pto.float16) * 0.0 + c)


def test_math_folds_in_float64_then_rounds_once_to_the_element_type():
    (o,) = run_everywhere(folded_half, 4, (np.zeros(4, np.float16),))
    c = math.exp(1.0) / 3 + round(2.5) + pow(2, 10) + 3.0
    np.testing.assert_array_equal(o, np.full(4, np.float16(c)))


def _error(kernel, *args):
    with pytest.raises(pto.CompileError) as info:
        pto.compile(kernel, args=args, block=32)
    return str(info.value)


def test_errors_name_the_fix():
    @pto.kernel
    def runtime_range(o, n):
        for k in pto.static_range(n):
            pto.store(o + k, 1.0)

    msg = _error(runtime_range, pto.tensor(np.zeros(4, np.float32)), 4)
    assert "'n' is a run-time value; loop with range() instead" in msg

    @pto.kernel
    def runtime_math(x, o):
        i = pto.get_global_id()
        pto.store(o + i, math.sqrt(pto.load(x + i)))

    msg = _error(runtime_math, pto.tensor(np.ones(4, np.float32)),
                 pto.tensor(np.ones(4, np.float32)))
    assert "math.sqrt() is evaluated at compile time" in msg and "use pto.sqrt(x)" in msg

    @pto.kernel
    def with_break(o):
        for k in (1, 2, 3):
            if k == 2:
                break
            pto.store(o + k, 1.0)

    msg = _error(with_break, pto.tensor(np.zeros(4, np.float32)))
    assert "'break' in a static (unrolled) loop" in msg
    assert "break" in msg.splitlines()[1]  # the source line shown is the 'break'

    @pto.kernel
    def over_value(x):
        for v in pto.load(x):
            pto.store(x, v)

    msg = _error(over_value, pto.tensor(np.zeros(4, np.float32)))
    assert "over compile-time values" in msg

    @pto.kernel
    def folded_error(o):
        pto.store(o, math.log(0.0))

    assert "cannot evaluate constant expression 'math.log(0.0)': math domain error" in \
        _error(folded_error, pto.tensor(np.zeros(4, np.float32)))


def test_static_range_outside_a_kernel_is_range():
    assert list(pto.static_range(1, 9, 3)) == [1, 4, 7]
    with pytest.raises(TypeError):
        pto.static_range(1.5)
