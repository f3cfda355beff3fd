"""Row softmax, one block per row (the classic "block softmax" of a fused attention kernel).

Each lane walks the row in steps of the block size (a uniform-bound loop with a per-lane bounds
check) keeping a running max; the block combines the lanes' maxima through L1 with a
`barrier_block()` tree; then the same for the sum of `exp(x - max)`; finally every lane writes
its `exp(x - max) / sum`. The kernel also writes each row's max and sum (as a flash-attention
kernel keeps them for the backward pass).

The max is exact, so it is compared for equality. The sum's order (per-lane accumulation, then
the tree) is emulated in NumPy float32, so the sum and the probabilities are compared bit-exactly
with that emulation too; the float64 softmax is checked with a tight tolerance on top.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto as pto

BLOCK = 128
LOG2_BLOCK = 7


@pto.kernel
def softmax_rows(x, y, row_max, row_sum, ncols):
    row = pto.get_block_id()
    tid = pto.get_local_id()
    red = pto.alloc_local(BLOCK)
    src = x + row * ncols
    dst = y + row * ncols

    # 1. row max: per-lane running max, then a tree through L1
    m = -math.inf
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            m = max(m, pto.load(src + c))
    pto.store(red + tid, m)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(red + tid, max(pto.load(red + tid), pto.load(red + tid + s)))
        pto.barrier_block()
        s = s // 2
    mx = pto.load(red)
    pto.barrier_block()     # everyone has read red[0] before it is overwritten

    # 2. sum of exp(x - max), same pattern
    acc = 0.0
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            acc = acc + pto.exp(pto.load(src + c) - mx)
    pto.store(red + tid, acc)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(red + tid, pto.load(red + tid) + pto.load(red + tid + s))
        pto.barrier_block()
        s = s // 2
    total = pto.load(red)

    # 3. normalise
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            pto.store(dst + c, pto.exp(pto.load(src + c) - mx) / total)
    if tid == 0:
        pto.store(row_max + row, mx)
        pto.store(row_sum + row, total)


def emulated_sum(e: np.ndarray) -> np.ndarray:
    """Row sums of `e` (float32) in the kernel's order: per lane over chunks, then the tree."""
    rows, ncols = e.shape
    chunks = (ncols + BLOCK - 1) // BLOCK
    pad = np.zeros((rows, chunks * BLOCK), np.float32)
    pad[:, :ncols] = e
    lanes = np.zeros((rows, BLOCK), np.float32)
    for k in range(chunks):
        lanes = lanes + pad[:, k * BLOCK:(k + 1) * BLOCK]
    s = BLOCK // 2
    while s >= 1:
        lanes[:, :s] = lanes[:, :s] + lanes[:, s:2 * s]
        s //= 2
    return lanes[:, 0].copy()


SHAPES = [(1, 1), (4, 100), (3, 128), (2, 300), (5, 1000), (8, 129)]


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_rows(run, shape):
    rows, ncols = shape
    rng = np.random.default_rng(rows * 7919 + ncols)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    y = np.full(shape, np.nan, np.float32)
    mx = np.full(rows, np.nan, np.float32)
    sm = np.full(rows, np.nan, np.float32)
    _, y, mx, sm = run(softmax_rows, rows, BLOCK, (x, y, mx, sm, ncols))

    ref_max = x.max(axis=1)
    np.testing.assert_array_equal(mx, ref_max)
    # exp in float64 rounded once to float32, as the interpreter computes it (docs/language.md)
    e = np.exp((x - ref_max[:, None]).astype(np.float64)).astype(np.float32)
    ref_sum = emulated_sum(e)
    np.testing.assert_array_equal(sm, ref_sum)
    np.testing.assert_array_equal(y, e / ref_sum[:, None])

    x64 = x.astype(np.float64)
    e64 = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e64 / e64.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(y.sum(axis=1, dtype=np.float64), 1.0, rtol=1e-5)


def test_softmax_is_shift_invariant_and_handles_large_values(run):
    """Subtracting the row max keeps exp() finite for inputs around 1e4."""
    x = np.random.default_rng(3).standard_normal((3, 200)).astype(np.float32) * 10
    big = x + np.float32(1e4)
    outs = []
    for inp in (x, big):
        y = np.full(inp.shape, np.nan, np.float32)
        z = np.zeros(3, np.float32)
        outs.append(run(softmax_rows, 3, BLOCK, (inp, y, z, z.copy(), 200))[1])
    assert np.isfinite(outs[1]).all()
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-2, atol=1e-6)


@pto.kernel
def row_max_then_reuse_without_barrier(x, out, ncols):
    """The max tree, then red[] reused for the next reduction without the barrier that lets
    every lane read red[0] first: a write-after-read race between warps."""
    tid = pto.get_local_id()
    red = pto.alloc_local(BLOCK)
    m = -math.inf
    for c0 in range(0, ncols, BLOCK):
        c = c0 + tid
        if c < ncols:
            m = max(m, pto.load(x + c))
    pto.store(red + tid, m)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(red + tid, max(pto.load(red + tid), pto.load(red + tid + s)))
        pto.barrier_block()
        s = s // 2
    mx = pto.load(red)
    pto.store(red + tid, mx * 2.0)         # another warp may not have read red[0] yet
    pto.barrier_block()
    if tid == 0:
        pto.store(out, pto.load(red + 1))


def test_reusing_the_reduction_buffer_without_a_barrier_is_a_war_race(run_racy):
    x = np.arange(256, dtype=np.float32)
    with pytest.raises(pto.RaceError, match=r"WAR race on L1 buffer 'red' element 0"):
        run_racy(row_max_then_reuse_without_barrier, 1, BLOCK, (x, np.zeros(1, np.float32), 256))


@pytest.mark.parametrize("shape", [(3, 300), (2, 5)])
def test_softmax_under_other_warp_orders(run_scheduled, shape):
    rows, ncols = shape
    x = np.random.default_rng(ncols).standard_normal(shape).astype(np.float32)
    z = np.zeros(rows, np.float32)
    _, y, mx, sm = run_scheduled(softmax_rows, rows, BLOCK,
                                 (x, np.zeros(shape, np.float32), z, z.copy(), ncols))
    e = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(mx, x.max(axis=1))
    np.testing.assert_array_equal(sm, emulated_sum(e))
    np.testing.assert_array_equal(y, e / emulated_sum(e)[:, None])


# -------------------------------------------------------------------------------------------
# the same kernel written with the language's forms: a SIMT column loop and pto.reduce
# -------------------------------------------------------------------------------------------

@pto.kernel
def softmax_rows_reduce(x, y, row_max, row_sum, ncols):
    """softmax_rows with `for c in range(tid, ncols, BLOCK)` and `pto.reduce(..., scope=
    "block")` instead of the hand-written chunk loops and L1 trees (the same order of
    operations, so the same bits)."""
    row = pto.get_block_id()
    tid = pto.get_local_id()
    src = x + row * ncols
    dst = y + row * ncols
    m = -math.inf
    for c in range(tid, ncols, BLOCK):
        m = max(m, pto.load(src + c))
    mx = pto.reduce(m, op="max", scope="block")
    acc = 0.0
    for c in range(tid, ncols, BLOCK):
        acc += pto.exp(pto.load(src + c) - mx)
    total = pto.reduce(acc, scope="block")
    for c in range(tid, ncols, BLOCK):
        pto.store(dst + c, pto.exp(pto.load(src + c) - mx) / total)
    if tid == 0:
        pto.store(row_max + row, mx)
        pto.store(row_sum + row, total)


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_with_reduce_is_bit_identical_to_the_hand_written_tree(run, shape):
    rows, ncols = shape
    x = (np.random.default_rng(rows + 31 * ncols).standard_normal(shape) * 4).astype(np.float32)
    results = []
    for kernel in (softmax_rows, softmax_rows_reduce):
        y = np.full(shape, np.nan, np.float32)
        mx = np.full(rows, np.nan, np.float32)
        sm = np.full(rows, np.nan, np.float32)
        results.append(run(kernel, rows, BLOCK, (x, y, mx, sm, ncols))[1:])
    for hand, new in zip(*results):
        assert hand.tobytes() == new.tobytes()
    e = np.exp((x - x.max(axis=1)[:, None]).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(results[1][2], emulated_sum(e))
