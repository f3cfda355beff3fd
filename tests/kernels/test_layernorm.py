"""Row layernorm, one block per row (the normalisation of a transformer layer).

Each lane walks the row in steps of the block size (a uniform-bound loop with a per-lane bounds
check) accumulating its columns; the block adds the lanes' partial sums through L1 with a
`barrier_block()` tree to get the mean; then the same for the sum of squared deviations from the
mean (the two-pass variance, which does not cancel catastrophically as `E[x²] - E[x]²` does);
`rsqrt(var + eps)` scales the deviations, and `gamma`, `beta` apply the per-column affine map.

`ncols` is an int argument and `/` on a float by an int is a compile error (docs/language.md,
*Types*), so the count is converted once with `pto.cast(ncols, pto.float32)`.

Every step rounds once in float32 in an order NumPy can reproduce: the two sums (per-lane
accumulation, then the tree) with `emulated_sum` of test_softmax.py, the divisions, and `rsqrt`
as the interpreter computes it (`1 / sqrt` in float64, rounded once to float32, docs/language.md).
So the mean, the inverse deviation and the output are compared bit-exactly with that emulation;
a float64 layernorm is checked with a tolerance on top.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.kernels.test_softmax import emulated_sum

BLOCK = 128
LOG2_BLOCK = 7
EPS = 1e-5


@pto.kernel
def layernorm_rows(x, y, gamma, beta, ncols, eps):
    row = pto.get_block_id()
    tid = pto.get_local_id()
    red = pto.alloc_local(BLOCK)
    src = x + row * ncols
    dst = y + row * ncols
    n = pto.cast(ncols, pto.float32)

    # 1. mean: per-lane partial sums, then a tree through L1
    acc = 0.0
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            acc = acc + pto.load(src + c)
    pto.store(red + tid, acc)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(red + tid, pto.load(red + tid) + pto.load(red + tid + s))
        pto.barrier_block()
        s = s // 2
    mean = pto.load(red) / n
    pto.barrier_block()     # everyone has read red[0] before it is overwritten

    # 2. variance: sum of squared deviations from the mean, same pattern
    sq = 0.0
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            d = pto.load(src + c) - mean
            sq = sq + d * d
    pto.store(red + tid, sq)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(red + tid, pto.load(red + tid) + pto.load(red + tid + s))
        pto.barrier_block()
        s = s // 2
    inv = pto.rsqrt(pto.load(red) / n + eps)

    # 3. normalise, scale and shift
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            pto.store(dst + c, (pto.load(src + c) - mean) * inv * pto.load(gamma + c)
                      + pto.load(beta + c))


def emulated_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                       eps: float) -> np.ndarray:
    """`layernorm_rows`'s output in float32, step by step in the kernel's order."""
    n = np.float32(x.shape[1])
    mean = emulated_sum(x) / n
    d = x - mean[:, None]
    var = emulated_sum(d * d) / n
    # rsqrt: 1 / sqrt in float64, rounded once (docs/language.md)
    rstd = (1.0 / np.sqrt((var + np.float32(eps)).astype(np.float64))).astype(np.float32)
    y = d * rstd[:, None] * gamma + beta
    return y


def layernorm64(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """The float64 layernorm (mathematical reference)."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    return (x64 - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta


def make_inputs(rng: np.random.Generator, rows: int, ncols: int,
                offset: float = 0.0) -> tuple[np.ndarray, ...]:
    """x (with a per-row offset, as real activations have), gamma, beta, and output buffers
    filled with NaN so that an element the kernel does not write fails the comparison."""
    x = (rng.standard_normal((rows, ncols)) * 3 + offset
         + rng.standard_normal((rows, 1)) * 2).astype(np.float32)
    gamma = (1 + 0.5 * rng.standard_normal(ncols)).astype(np.float32)
    beta = rng.standard_normal(ncols).astype(np.float32)
    return x, np.full((rows, ncols), np.nan, np.float32), gamma, beta


def check(outs: list[np.ndarray], x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
          rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Bit-exact against the emulation, and close to the float64 layernorm."""
    y = outs[1]
    np.testing.assert_array_equal(y, emulated_layernorm(x, gamma, beta, EPS))
    np.testing.assert_allclose(y, layernorm64(x, gamma, beta, EPS), rtol=rtol, atol=atol)


SHAPES = [(1, 1), (4, 100), (3, 128), (2, 300), (5, 1000), (8, 129)]


@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm_rows(run, shape):
    rows, ncols = shape
    rng = np.random.default_rng(rows * 7919 + ncols)
    args = make_inputs(rng, rows, ncols)
    outs = run(layernorm_rows, rows, BLOCK, args + (ncols, EPS))
    check(outs, args[0], args[2], args[3])
    if ncols > 1:       # normalised rows: mean 0, variance 1 before the affine map
        z = (outs[1] - args[3]) / args[2]
        np.testing.assert_allclose(z.mean(axis=1, dtype=np.float64), 0.0, atol=1e-4)
        np.testing.assert_allclose(z.var(axis=1, dtype=np.float64), 1.0, rtol=1e-3)


def test_layernorm_of_a_constant_row_is_beta(run):
    """Zero variance: rsqrt(0 + eps) is finite and the deviations are exactly 0, so y = beta
    (the kernel does not divide by the standard deviation itself)."""
    x = np.full((2, 200), 7.25, np.float32)
    gamma = np.linspace(-2, 2, 200, dtype=np.float32)
    beta = np.linspace(5, -5, 200, dtype=np.float32)
    outs = run(layernorm_rows, 2, BLOCK,
               (x, np.full_like(x, np.nan), gamma, beta, 200, EPS))
    np.testing.assert_array_equal(outs[1], np.broadcast_to(beta, (2, 200)))


def test_two_pass_variance_survives_a_large_offset(run):
    """Rows around 1e4 with unit spread: the two-pass variance stays accurate (E[x²] - E[x]²
    in float32 would lose every digit)."""
    rng = np.random.default_rng(11)
    args = make_inputs(rng, 3, 300, offset=1e4)
    outs = run(layernorm_rows, 3, BLOCK, args + (300, EPS))
    check(outs, args[0], args[2], args[3], rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("shape", [(3, 300), (2, 5)])
def test_layernorm_under_other_warp_orders(run_scheduled, shape):
    rows, ncols = shape
    args = make_inputs(np.random.default_rng(ncols), rows, ncols)
    outs = run_scheduled(layernorm_rows, rows, BLOCK, args + (ncols, EPS))
    check(outs, args[0], args[2], args[3])
