"""float16 and bfloat16 elementwise kernels, checked bit-exactly in the same dtype.

Arithmetic on half-precision values is rounded to the type after every operation (as NumPy and
ml_dtypes do), so `a * b + c` computed by NumPy on float16 / bfloat16 arrays is the exact
reference; so are `exp`, `tanh`, `sqrt` (NumPy evaluates them in float32 and rounds) and the
casts. Comparisons are on the raw 16-bit patterns, so a NaN or a signed zero cannot hide.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto

HALF_TYPES = [np.float16, ml_dtypes.bfloat16]


@pto.kernel
def elementwise(a, b, c, mad, e, t, r, n):
    i = pto.get_global_id()
    if i >= n:
        return
    x = pto.load(a + i)
    pto.store(mad + i, x * pto.load(b + i) + pto.load(c + i))   # two roundings
    pto.store(e + i, pto.exp(x))
    pto.store(t + i, pto.tanh(x))
    pto.store(r + i, max(x, 0.0) + 0.5 * min(x, 0.0))            # leaky relu, literals weak


@pto.kernel
def gelu_tanh(x, y, n):
    """GELU, tanh approximation, with every intermediate in the input's dtype."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        inner = 0.7978845608 * (v + 0.044715 * v * v * v)
        pto.store(y + i, 0.5 * v * (1.0 + pto.tanh(inner)))


@pto.kernel
def casts(h, f32, back, other, n):
    """half -> float32 (exact) -> (x*3) -> half (one rounding); half -> the other half type."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(h + i)
        w = pto.cast(v, pto.float32)
        pto.store(f32 + i, w)
        pto.store(back + i, pto.cast(w * 3.0, h.dtype))
        pto.store(other + i, pto.cast(v, other.dtype))


@pto.kernel
def mixed_accumulate(x, out, n, ITEMS: pto.constexpr):
    """Accumulate ITEMS half values per lane in float32 (what a careful author does)."""
    i = pto.get_global_id()
    if i < n:
        acc = pto.cast(0.0, pto.float32)
        for k in range(ITEMS):
            acc = acc + pto.cast(pto.load(x + i * ITEMS + k), pto.float32)
        pto.store(out + i, acc)


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def launch_1d(run, kernel, n, args, block=128):
    return run(kernel, (n + block - 1) // block, block, args)


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 100, 1000])
def test_elementwise_in_the_same_dtype(run, dtype, n):
    rng = np.random.default_rng(n)
    a, b, c = (rng.standard_normal(n).astype(dtype) * dtype(3) for _ in range(3))
    outs = [np.zeros(n, dtype) for _ in range(4)]
    _, _, _, mad, e, t, r = launch_1d(run, elementwise, n, (a, b, c, *outs, n))
    np.testing.assert_array_equal(bits(mad), bits(a * b + c))
    np.testing.assert_array_equal(bits(e), bits(np.exp(a)))
    np.testing.assert_array_equal(bits(t), bits(np.tanh(a)))
    ref_r = np.maximum(a, dtype(0)) + dtype(0.5) * np.minimum(a, dtype(0))
    np.testing.assert_array_equal(bits(r), bits(ref_r))


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=["float16", "bfloat16"])
def test_overflow_and_special_values(run, dtype):
    big = float(ml_dtypes.finfo(dtype).max)
    a = np.array([big, -big, 0.0, -0.0, np.inf, -np.inf, np.nan, 12.0], dtype)
    b = np.array([2.0, 2.0, -1.0, 1.0, 0.0, 1.0, 1.0, 1.0], dtype)
    c = np.zeros(a.size, dtype)
    outs = [np.zeros(a.size, dtype) for _ in range(4)]
    with np.errstate(all="ignore"):
        _, _, _, mad, e, t, _ = run(elementwise, 1, 32, (a, b, c, *outs, a.size))
        np.testing.assert_array_equal(bits(mad), bits(a * b + c))   # +-inf, -0, nan
        np.testing.assert_array_equal(bits(e), bits(np.exp(a)))     # exp(12) overflows f16
        np.testing.assert_array_equal(bits(t), bits(np.tanh(a)))


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("n", [7, 500])
def test_gelu(run, dtype, n):
    x = np.linspace(-6, 6, n).astype(dtype)
    y = np.zeros(n, dtype)
    _, y = launch_1d(run, gelu_tanh, n, (x, y, n))
    c0, c1, half, one = dtype(0.7978845608), dtype(0.044715), dtype(0.5), dtype(1.0)
    ref = half * x * (one + np.tanh(c0 * (x + c1 * x * x * x)))
    np.testing.assert_array_equal(bits(y), bits(ref))
    # and it is GELU: close to the float64 formula at half precision
    x64 = x.astype(np.float64)
    ref64 = 0.5 * x64 * (1 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(y.astype(np.float64), ref64, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("dtype,other", [(np.float16, ml_dtypes.bfloat16),
                                         (ml_dtypes.bfloat16, np.float16)],
                         ids=["float16", "bfloat16"])
def test_casts(run, dtype, other):
    h = (np.random.default_rng(0).standard_normal(300) * 100).astype(dtype)
    f32, back, oth = np.zeros(300, np.float32), np.zeros(300, dtype), np.zeros(300, other)
    _, f32, back, oth = run(casts, 3, 128, (h, f32, back, oth, 300))
    np.testing.assert_array_equal(f32, h.astype(np.float32))
    np.testing.assert_array_equal(bits(back), bits((h.astype(np.float32) * 3).astype(dtype)))
    np.testing.assert_array_equal(bits(oth), bits(h.astype(np.float32).astype(other)))


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=["float16", "bfloat16"])
def test_float32_accumulation_of_half_inputs(run, dtype):
    n, items = 200, 16
    x = np.random.default_rng(5).random(n * items).astype(dtype)
    out = np.zeros(n, np.float32)
    _, out = launch_1d(run, mixed_accumulate, n, (x, out, n, items))
    acc = np.zeros(n, np.float32)
    for k in range(items):
        acc = acc + x.reshape(n, items)[:, k].astype(np.float32)
    np.testing.assert_array_equal(out, acc)
