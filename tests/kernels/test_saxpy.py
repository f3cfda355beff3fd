"""SAXPY, `y = a * x + y`, the BLAS level-1 hello world, with the fused `pto.fma`.

`pto.fma` rounds the exact `a * x + y` once to the element type (docs/language.md), so the
reference computes exactly that with `Fraction`s. Variants: the guard written as an early
`return` (CUDA's `if (i >= n) return;`), a grid-stride loop, and float16 / bfloat16 data.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
from tests.exactness.reference import f_fma


@pto.kernel
def saxpy(a, x, y, n):
    i = pto.get_global_id()
    if i >= n:
        return
    pto.fma(y + i, a, pto.load(x + i), pto.load(y + i))


@pto.kernel
def saxpy_grid_stride(a, x, y, n, iters):
    i = pto.get_global_id()
    stride = pto.get_grid_dim() * pto.get_block_dim()
    for _ in range(iters):
        if i < n:
            pto.fma(y + i, a, pto.load(x + i), pto.load(y + i))
        i = i + stride


@pto.kernel
def axpy_typed(x, y, n, A: pto.constexpr):
    """`A` folded into the kernel; the literal takes the element type (weak typing)."""
    i = pto.get_global_id()
    if i < n:
        pto.fma(y + i, A, pto.load(x + i), pto.load(y + i))


def fused_ref(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`a * x + y` exactly (Fraction), rounded once to the element type."""
    a_elem = x.dtype.type(a)  # `a` takes the element type first (weak typing)
    return np.array([f_fma(a_elem, xi, yi, x.dtype) for xi, yi in zip(x, y)], dtype=x.dtype)


SIZES = [1, 100, 256, 1000, 5003]


@pytest.mark.parametrize("n", SIZES)
def test_saxpy(run, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = 2.5
    block = 256
    _, out = run(saxpy, (n + block - 1) // block, block, (a, x, y, n))
    np.testing.assert_array_equal(out, fused_ref(a, x, y))


def test_fma_rounds_once(run):
    """A case where a separately rounded multiply-add differs from the fused one."""
    x = np.array([1 + 2.0 ** -12] * 4, np.float32)
    y = np.array([-(1 + 2.0 ** -11)] * 4, np.float32)
    a = 1 + 2.0 ** -12
    _, out = run(saxpy, 1, 32, (a, x, y, 4))
    np.testing.assert_array_equal(out, fused_ref(a, x, y))
    assert out[0] == np.float32(2.0 ** -24)           # exact a*x + y
    assert np.float32(a) * x[0] + y[0] == 0.0         # what unfused float32 gives


@pytest.mark.parametrize("n,grid", [(10, 1), (1000, 2), (4097, 3)])
def test_saxpy_grid_stride(run, n, grid):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    block = 128
    iters = (n + grid * block - 1) // (grid * block)
    _, out = run(saxpy_grid_stride, grid, block, (-0.75, x, y, n, iters))
    np.testing.assert_array_equal(out, fused_ref(-0.75, x, y))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("n", [1, 300, 1024])
def test_axpy_half_precision(run, dtype, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    block = 256
    _, out = run(axpy_typed, (n + block - 1) // block, block, (x, y, n, 0.3))
    np.testing.assert_array_equal(out.view(np.uint16), fused_ref(0.3, x, y).view(np.uint16))


def test_saxpy_leaves_the_tail_untouched(run):
    n = 70
    x = np.ones(128, np.float32)
    y = np.full(128, 7.0, np.float32)
    _, out = run(saxpy, 1, 128, (2.0, x, y, n))
    np.testing.assert_array_equal(out[:n], 9.0)
    np.testing.assert_array_equal(out[n:], 7.0)


@pto.kernel
def saxpy_grid_stride_loop(a, x, y, n):
    """saxpy_grid_stride as written in CUDA: the loop's own bounds, no host trip count."""
    for i in range(pto.get_global_id(), n, pto.get_grid_dim() * pto.get_block_dim()):
        pto.fma(y + i, a, pto.load(x + i), pto.load(y + i))


@pytest.mark.parametrize("n,grid", [(1, 1), (1000, 3), (4099, 2)])
def test_grid_stride_loop_twin_is_bit_identical(run, n, grid):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    block = 64
    iters = (n + grid * block - 1) // (grid * block)
    _, hand = run(saxpy_grid_stride, grid, block, (-0.75, x, y, n, iters))
    _, new = run(saxpy_grid_stride_loop, grid, block, (-0.75, x, y, n))
    assert hand.tobytes() == new.tobytes()
    np.testing.assert_array_equal(new, fused_ref(-0.75, x, y))
