"""Language semantics (docs/language.md) checked against NumPy: loops, early return, specialisation,
promotion, casts, math."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto

RNG = np.random.default_rng(7)
SCALE = 3


@pto.kernel
def early_return(x, o, n):
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(x + i)
    if v < 0.0:
        pto.store(o + i, -1.0)
        return
    pto.store(o + i, v * 2.0)


def test_early_return_masks_the_rest_of_the_kernel(run):
    n = 300
    x = RNG.standard_normal(320).astype(np.float32)
    o = np.full(320, 9.0, np.float32)
    _, out = run(early_return, 5, 64, (x, o, n))
    ref = np.where(x < 0, np.float32(-1), x * np.float32(2))
    ref[n:] = 9.0
    np.testing.assert_array_equal(out, ref)


@pto.kernel
def loops(x, o, n, reps):
    i = pto.get_global_id()
    if i < n:
        acc = 0.0
        prod = 1
        for k in range(reps):
            acc = acc + pto.load(x + i) * pto.cast(k, pto.float32)
            prod = prod * 2
        down = 0
        for k in range(10, 0, -3):   # 10, 7, 4, 1
            down = down * 100 + k
        empty = 5
        for k in range(4, 2):       # never runs
            empty = 0
        pto.store(o + i, acc + pto.cast(prod + down + empty, pto.float32))


@pytest.mark.parametrize("reps", [0, 1, 5])
def test_for_loops_carry_values_and_count_down(run, reps):
    n = 100
    x = RNG.random(128).astype(np.float32)
    o = np.zeros(128, np.float32)
    _, out = run(loops, 1, 128, (x, o, n, reps))
    acc = np.zeros(n, np.float32)
    for k in range(reps):
        acc = acc + x[:n] * np.float32(k)
    const = 2 ** reps + 10070401 + 5
    np.testing.assert_array_equal(out[:n], acc + np.float32(const))


def test_return_inside_a_loop_ends_the_kernel_for_the_lane():
    @pto.kernel
    def first_iteration_returns(o, n):
        for k in range(n):
            return
        pto.store(o, 1.0)

    o = pto.alloc_tensor(4)
    pto.memcpy_h2d(o, np.zeros(1, np.float32))
    pto.launch(first_iteration_returns, grid=1, block=32, args=(o, 3))
    out = np.empty(1, np.float32)
    pto.memcpy_d2h(out, o)
    assert out[0] == 0.0          # no lane got past the loop


def test_return_with_a_value_inside_a_helpers_loop_is_rejected():
    def find(n):
        for k in range(n):
            if k == 2:
                return k
        return -1

    @pto.kernel
    def bad(o, n):
        pto.store(o, find(n))

    with pytest.raises(pto.CompileError, match="'return' inside a loop of a helper"):
        pto.compile(bad, args=(pto.alloc_tensor(4, dtype=np.int32), 3), block=32)


@pto.kernel
def sized(o, count: pto.constexpr):
    buf = pto.alloc_local(count)
    pto.fill(buf, 1.0, count)
    lid = pto.get_local_id()
    if lid < count:
        pto.store(o + lid, pto.load(buf + lid) * SCALE)


@pto.kernel
def auto_sized(o, count):
    buf = pto.alloc_local(count * 2)
    pto.fill(buf, 2.0, count * 2)
    lid = pto.get_local_id()
    if lid < count:
        pto.store(o + lid, pto.load(buf + lid + count))


@pytest.mark.parametrize("kernel, value", [(sized, 3.0), (auto_sized, 2.0)])
def test_sizes_from_parameters_specialise_per_value(kernel, value):
    t = pto.alloc_tensor(64 * 4)
    c16 = pto.compile(kernel, args=(t, 16), block=64)
    c32 = pto.compile(kernel, args=(t, 32), block=64)
    assert c16 is not c32
    assert pto.compile(kernel, args=(t, 16), block=64) is c16
    assert "!pto.l1buf<" in c16.mlir
    for count, ck in ((16, c16), (32, c32)):
        pto.memcpy_h2d(t, np.zeros(64, np.float32))
        ck(grid=1, block=64, args=(t, count))
        out = np.empty(64, np.float32)
        pto.memcpy_d2h(out, t)
        assert (out[:count] == value).all() and (out[count:] == 0).all()


def test_a_size_computed_per_lane_is_a_clear_error():
    @pto.kernel
    def bad(o):
        buf = pto.alloc_local(pto.get_local_id() + 1)

    with pytest.raises(pto.CompileError, match="must be a compile-time integer"):
        pto.compile(bad, args=(pto.alloc_tensor(4),), block=32)


@pto.kernel
def promote(a16, b_bf, i32, i64, out32, out64):
    i = pto.get_global_id()
    pto.store(out32 + i, pto.load(a16 + i) + pto.load(b_bf + i))   # f16 + bf16 -> f32
    pto.store(out64 + i, pto.load(i32 + i) + pto.load(i64 + i))    # i32 + i64 -> i64


def test_promotion_rules(run):
    n = 64
    a = RNG.random(n).astype(np.float16)
    b = RNG.random(n).astype(ml_dtypes.bfloat16)
    i = RNG.integers(-10**6, 10**6, n).astype(np.int32)
    j = RNG.integers(-10**12, 10**12, n).astype(np.int64)
    *_, o32, o64 = run(promote, 1, n, (a, b, i, j, np.zeros(n, np.float32),
                                        np.zeros(n, np.int64)))
    np.testing.assert_array_equal(o32, a.astype(np.float32) + b.astype(np.float32))
    np.testing.assert_array_equal(o64, i.astype(np.int64) + j)


@pto.kernel
def weak_literals(x, o):
    i = pto.get_global_id()
    pto.store(o + i, pto.load(x + i) * 3 + 0.1)   # stays float16


def test_python_literals_take_the_operand_type(run):
    x = RNG.random(32).astype(np.float16)
    _, out = run(weak_literals, 1, 32, (x, np.zeros(32, np.float16)))
    np.testing.assert_array_equal(out, x * np.float16(3) + np.float16(0.1))


@pto.kernel
def casts(x, oi, of, ob):
    i = pto.get_global_id()
    v = pto.load(x + i)
    pto.store(oi + i, pto.cast(v, pto.int32))
    pto.store(of + i, pto.cast(pto.cast(v, pto.bfloat16), pto.float32))
    pto.store(ob + i, pto.select(v > 0.0, 1, 0) + pto.cast(pto.cast(v, pto.bool_), pto.int32))


def test_casts_truncate_toward_zero_and_round_to_nearest(run):
    x = (RNG.standard_normal(64) * 100).astype(np.float32)
    x[:3] = [0.0, -2.5, 2.5]
    _, oi, of, ob = run(casts, 1, 64, (x, np.zeros(64, np.int32), np.zeros(64, np.float32),
                                       np.zeros(64, np.int32)))
    np.testing.assert_array_equal(oi, np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(of, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(ob, (x > 0).astype(np.int32) + (x != 0).astype(np.int32))


def test_casting_nan_to_int_is_an_error(run):
    x = np.array([1.0, np.nan], np.float32)
    with pytest.raises(pto.KernelError, match="out of range \\(or NaN\\)"):
        run(casts, 1, 2, (x, np.zeros(2, np.int32), np.zeros(2, np.float32),
                          np.zeros(2, np.int32)))


@pto.kernel
def math_fns(x, o):
    i = pto.get_global_id()
    v = pto.load(x + i)
    pto.store(o + i, pto.exp(v) + pto.log(v) + pto.sqrt(v) + pto.rsqrt(v) + pto.tanh(v))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_math_functions_match_numpy_in_the_same_dtype(run, dtype):
    x = (RNG.random(64) + 0.1).astype(dtype)
    _, out = run(math_fns, 1, 64, (x, np.zeros(64, dtype)))
    x64 = x.astype(np.float64)  # transcendentals: float64, rounded once (docs/language.md)
    rsqrt = (1.0 / np.sqrt(x64)).astype(dtype)
    ref = (np.exp(x64).astype(dtype) + np.log(x64).astype(dtype) + np.sqrt(x) + rsqrt
           + np.tanh(x64).astype(dtype))
    np.testing.assert_array_equal(out, ref)


def test_mixing_typed_int_and_float_needs_a_cast():
    @pto.kernel
    def bad(x, n):
        pto.store(x, pto.load(x) * n)

    with pytest.raises(pto.CompileError, match="pto.cast"):
        pto.compile(bad, args=(pto.alloc_tensor(4), 3), block=32)


def test_printf_format_arity_is_checked():
    @pto.kernel
    def bad(x):
        pto.printf("%d %d", pto.get_global_id())

    with pytest.raises(pto.CompileError, match="2 conversion"):
        pto.compile(bad, args=(pto.alloc_tensor(4),), block=32)


def test_printf_prints_per_lane_with_block_and_lane(capfd):
    @pto.kernel
    def hello(x):
        i = pto.get_global_id()
        if i % 16 == 1:
            pto.printf("i=%d v=%.1f", i, pto.load(x + i))

    t = pto.alloc_tensor(32 * 4)
    pto.memcpy_h2d(t, np.arange(32, dtype=np.float32))
    pto.launch(hello, grid=2, block=16, args=(t,))
    pto.sync()
    out = capfd.readouterr().out.splitlines()
    assert out == ["[block (0, 0, 0) lane (1, 0, 0)] i=1 v=1.0",
                   "[block (1, 0, 0) lane (1, 0, 0)] i=17 v=17.0"]


@pto.kernel
def square_root_pow(x, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(x + i) ** 0.5)


@pto.kernel
def general_pow(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(x + i) ** pto.load(y + i))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_pow_one_half_has_c99_pow_special_values(run, dtype):
    """`x ** 0.5` was computed as sqrt(x) (NumPy's fast path): -0.0 gave -0.0 and -inf NaN,
    where C99 / IEEE pow gives +0.0 and +inf. Reference: math.pow, rounded once to the dtype;
    the same values through a per-lane exponent (no fast path) agree bit for bit."""
    import math

    values = [-0.0, 0.0, -math.inf, math.inf, math.nan, -1.0, -2.5, 4.0, 2.0, 1e-4, 3.0e4,
              float(np.finfo(np.float32).tiny)]
    x = np.array(values, dtype=dtype)
    n = x.size

    def c99(v: float) -> float:
        try:
            return math.pow(v, 0.5)
        except ValueError:  # negative base: NaN
            return math.nan

    expected = np.array([c99(float(v)) for v in x], dtype=np.float64).astype(dtype)
    (_, got) = run(square_root_pow, 1, 32, (x, np.zeros(n, dtype), n))[:2]
    (_, _, per_lane) = run(general_pow, 1, 32, (x, np.full(n, 0.5, dtype), np.zeros(n, dtype),
                                                 n))[:3]
    bits = np.uint16 if x.itemsize == 2 else np.uint32 if x.itemsize == 4 else np.uint64
    for result in (got, per_lane):
        same = (result.view(bits) == expected.view(bits)) | (np.isnan(result.astype(np.float64))
                                                             & np.isnan(expected.astype(np.float64)))
        assert same.all(), (x[~same], result[~same], expected[~same])
