"""Weak typing of Python literals (docs/language.md#types-literals-and-promotion, NumPy 2 / JAX) where it is easy to get wrong:
a literal given an explicit dtype with `pto.cast` is typed, and a loop-carried variable
initialised with a literal takes the type the loop body gives it, as in straight-line code."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import pypto as pto


@pto.kernel
def cast_literal_promotes_half(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.cast(1.0, pto.float32) + pto.load(x + i))   # float32 + half


@pto.kernel
def cast_literal_sizes_a_buffer(x, y):
    buf = pto.alloc_local(pto.cast(64, pto.int32))
    t = pto.get_local_id()
    pto.store(buf + t, pto.load(x + t))
    pto.store(y + t, pto.load(buf + t))


@pto.kernel
def half_sum_straight(x, y, n):
    i = pto.get_global_id()
    if i < n:
        acc = 0.0
        acc = acc + pto.load(x + 4 * i)
        acc = acc + pto.load(x + 4 * i + 1)
        acc = acc + pto.load(x + 4 * i + 2)
        acc = acc + pto.load(x + 4 * i + 3)
        pto.store(y + i, acc)


@pto.kernel
def half_sum_loop(x, y, n):
    i = pto.get_global_id()
    if i < n:
        acc = 0.0
        for k in range(4):
            acc = acc + pto.load(x + 4 * i + k)
        pto.store(y + i, acc)


@pto.kernel
def half_max_loop(x, y, n):
    i = pto.get_global_id()
    if i < n:
        m = -math.inf
        for k in range(4):
            m = max(m, pto.load(x + 4 * i + k))
        pto.store(y + i, m)


@pto.kernel
def int_literal_with_float_body(x, y, n):
    i = pto.get_global_id()
    if i < n:
        acc = 0                                     # as `0 + x` outside a loop: float32
        for k in range(4):
            acc = acc + pto.load(x + 4 * i + k)
        pto.store(y + i, acc)


@pto.kernel
def float32_accumulator_for_half(x, y, n):
    i = pto.get_global_id()
    if i < n:
        acc = pto.cast(0.0, pto.float32)            # the way to ask for a wide accumulator
        for k in range(4):
            acc = acc + pto.cast(pto.load(x + 4 * i + k), pto.float32)
        pto.store(y + i, acc)


HALF = [np.float16, ml_dtypes.bfloat16]


def test_cast_of_a_literal_is_typed(run):
    x = np.arange(8, dtype=np.float16) + np.float16(0.25)
    _, y = run(cast_literal_promotes_half, 1, 32, (x, np.zeros(8, np.float32), 8))
    np.testing.assert_array_equal(y, np.float32(1.0) + x.astype(np.float32))
    with pytest.raises(pto.CompileError, match="stored value is pto.float32"):
        run(cast_literal_promotes_half, 1, 32, (x, np.zeros(8, np.float16), 8))


def test_cast_of_a_literal_is_still_a_compile_time_size(run):
    x = np.arange(64, dtype=np.float32)
    _, y = run(cast_literal_sizes_a_buffer, 1, 64, (x, np.zeros(64, np.float32)))
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("dtype", HALF, ids=["float16", "bfloat16"])
def test_loop_carried_literal_takes_the_body_type_like_straight_line_code(run, dtype):
    n = 50
    x = (np.random.default_rng(0).standard_normal(4 * n) * 100).astype(dtype)
    _, y_straight = run(half_sum_straight, 1, 64, (x, np.zeros(n, dtype), n))
    _, y_loop = run(half_sum_loop, 1, 64, (x, np.zeros(n, dtype), n))
    ref = np.zeros(n, dtype)
    for k in range(4):
        ref = ref + x[k::4]
    np.testing.assert_array_equal(y_straight.view(np.uint16), ref.view(np.uint16))
    np.testing.assert_array_equal(y_loop.view(np.uint16), ref.view(np.uint16))
    _, m = run(half_max_loop, 1, 64, (x, np.zeros(n, dtype), n))
    np.testing.assert_array_equal(m, x.reshape(n, 4).max(axis=1))


def test_int_literal_initial_value_with_a_float_body(run):
    x = np.random.default_rng(1).standard_normal(40).astype(np.float32)
    _, y = run(int_literal_with_float_body, 1, 32, (x, np.zeros(10, np.float32), 10))
    ref = np.zeros(10, np.float32)
    for k in range(4):
        ref = ref + x[k::4]
    np.testing.assert_array_equal(y, ref)


def test_explicit_float32_accumulator_stays_float32(run):
    x = np.random.default_rng(2).random(400).astype(np.float16)
    _, y = run(float32_accumulator_for_half, 1, 128, (x, np.zeros(100, np.float32), 100))
    ref = np.zeros(100, np.float32)
    for k in range(4):
        ref = ref + x[k::4].astype(np.float32)
    np.testing.assert_array_equal(y, ref)
