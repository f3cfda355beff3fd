"""Block reduction (sum), the CUDA `reduce` sample in PTO form.

Each block stages its elements in an L1 buffer and halves the active range with a
`barrier_block()` between steps (tree reduction); lane 0 writes the block's partial. Variants:
the last five steps done by warp 0 alone under the warp-only `pto.barrier()` (CUDA's
"unroll the last warp"), a grid-stride loop that accumulates several elements per lane first
(loop-carried value), and a single-pass total through `pto.atomic_add` of the block partials.

The tree's summation order is fixed, so the per-block partials are checked *bit-exactly*
against a NumPy emulation of the same tree in float32; only the atomic total (whose order of
block arrivals is unspecified on hardware) is compared to `np.sum` with a tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def block_sum(x, partial, n, BLOCK: pto.constexpr, LOG2_BLOCK: pto.constexpr):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:                        # lanes past the end contribute 0
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):      # s = BLOCK/2, BLOCK/4, ..., 1 (loop-carried)
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def block_sum_warp_tail(x, partial, n, BLOCK: pto.constexpr, CROSS_WARP_STEPS: pto.constexpr):
    """Block-wide steps while more than one warp is involved, then warp 0 alone."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(CROSS_WARP_STEPS):     # down to s == 32
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if pto.get_warp_id() == 0:            # the last 32 -> 1 inside one warp
        for _ in range(5):
            if tid < s:
                pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
            pto.barrier()
            s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def grid_stride_sum(x, partial, n, iters, BLOCK: pto.constexpr, LOG2_BLOCK: pto.constexpr):
    """Each lane first accumulates `iters` elements a whole grid apart, then the tree."""
    tid = pto.get_local_id()
    stride = pto.get_grid_dim() * BLOCK
    i = pto.get_global_id()
    acc = 0.0
    for _ in range(iters):
        if i < n:
            acc = acc + pto.load(x + i)
        i = i + stride
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, acc)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def atomic_total(x, total, n, BLOCK: pto.constexpr, LOG2_BLOCK: pto.constexpr):
    """Tree per block, then lane 0 adds the block's partial into one global accumulator."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK, dtype=x.dtype)
    v = pto.cast(0, x.dtype)
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.atomic_add(total, pto.load(buf))


# -------------------------------------------------------------------------------------------
# NumPy references
# -------------------------------------------------------------------------------------------

def tree_partials(lanes: np.ndarray, block: int) -> np.ndarray:
    """Per-block sums of `lanes` (one value per lane, whole blocks) in the kernel's tree order."""
    buf = lanes.reshape(-1, block).copy()
    s = block // 2
    while s >= 1:
        buf[:, :s] = buf[:, :s] + buf[:, s:2 * s]
        s //= 2
    return buf[:, 0].copy()


def padded(x: np.ndarray, total: int) -> np.ndarray:
    out = np.zeros(total, dtype=x.dtype)
    out[:x.size] = x
    return out


def grid_for(n: int, block: int) -> int:
    return max(1, (n + block - 1) // block)


SIZES = [1, 31, 256, 1000, 4097]
BLOCKS = [64, 256, 1024]


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("n", SIZES)
def test_block_sum_partials_are_the_tree_sums(run, n, block):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    grid = grid_for(n, block)
    partial = np.full(grid, np.nan, np.float32)
    _, out = run(block_sum, grid, block, (x, partial, n, block, block.bit_length() - 1))
    np.testing.assert_array_equal(out, tree_partials(padded(x, grid * block), block))
    np.testing.assert_allclose(out.sum(dtype=np.float64), x.sum(dtype=np.float64),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("block", [64, 256])
@pytest.mark.parametrize("n", [1, 100, 2049])
def test_warp_synchronous_tail_gives_the_same_tree(run, n, block):
    x = np.random.default_rng(7 + n).standard_normal(n).astype(np.float32)
    grid = grid_for(n, block)
    partial = np.full(grid, np.nan, np.float32)
    cross = (block // 32).bit_length() - 1          # steps until 32 values are left
    _, out = run(block_sum_warp_tail, grid, block, (x, partial, n, block, cross))
    np.testing.assert_array_equal(out, tree_partials(padded(x, grid * block), block))


@pytest.mark.parametrize("n,grid", [(1, 1), (1000, 2), (5000, 3), (65536, 4)])
def test_grid_stride_loop_then_tree(run, n, grid):
    block = 128
    x = np.random.default_rng(n).random(n).astype(np.float32)
    stride = grid * block
    iters = (n + stride - 1) // stride
    partial = np.full(grid, np.nan, np.float32)
    _, out = run(grid_stride_sum, grid, block, (x, partial, n, iters, block, 7))
    # lane k of the grid accumulates x[k], x[k + stride], ... in order, in float32
    rows = padded(x, iters * stride).reshape(iters, stride)
    acc = np.zeros(stride, np.float32)
    for r in rows:
        acc = acc + r
    np.testing.assert_array_equal(out, tree_partials(acc, block))
    np.testing.assert_allclose(out.sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 300, 4097, 20000])
def test_atomic_total_float32(run, n):
    block = 256
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    total = np.zeros(1, np.float32)
    _, out = run(atomic_total, grid_for(n, block), block, (x, total, n, block, 8))
    # block arrival order is unspecified: compare with a tolerance
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n", [1, 300, 4097])
def test_atomic_total_int32_is_exact(run, n):
    block = 256
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)
    total = np.array([5], np.int32)                 # accumulates onto the existing value
    _, out = run(atomic_total, grid_for(n, block), block, (x, total, n, block, 8))
    assert out[0] == 5 + int(x.sum())


# -------------------------------------------------------------------------------------------
# other warp orders, and the race a forgotten barrier causes
# -------------------------------------------------------------------------------------------

@pto.kernel
def block_sum_no_barrier_in_tree(x, partial, n, BLOCK: pto.constexpr,
                                 LOG2_BLOCK: pto.constexpr):
    """block_sum with the barrier of the tree loop forgotten (the first one is kept)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2_BLOCK):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pytest.mark.parametrize("kernel,extra", [
    (block_sum, lambda b: (b.bit_length() - 1,)),
    (block_sum_warp_tail, lambda b: ((b // 32).bit_length() - 1,)),
], ids=["tree", "warp_tail"])
@pytest.mark.parametrize("n", [100, 1000])
def test_same_partials_under_other_warp_orders(run_scheduled, kernel, extra, n):
    block = 128
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    grid = grid_for(n, block)
    _, out = run_scheduled(kernel, grid, block,
                           (x, np.zeros(grid, np.float32), n, block, *extra(block)))
    np.testing.assert_array_equal(out, tree_partials(padded(x, grid * block), block))


def test_forgotten_tree_barrier_is_a_race(run_racy):
    x = np.ones(256, np.float32)
    with pytest.raises(pto.RaceError, match=r"RAW race on L1 buffer 'buf'.*use pto.barrier_block"):
        run_racy(block_sum_no_barrier_in_tree, 1, 256, (x, np.zeros(1, np.float32), 256, 256, 8))


# -------------------------------------------------------------------------------------------
# twins written with the language's forms: pto.reduce and CUDA's grid-stride loop
# -------------------------------------------------------------------------------------------

@pto.kernel
def block_sum_reduce(x, partial, n):
    """block_sum with `pto.reduce(v, scope="block")`: the same tree (docs/language.md)."""
    i = pto.get_global_id()
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    s = pto.reduce(v, scope="block")
    if pto.get_local_id() == 0:
        pto.store(partial + pto.get_block_id(), s)


@pto.kernel
def grid_stride_sum_reduce(x, partial, n):
    """grid_stride_sum as a CUDA author writes it: no host-computed trip count."""
    acc = 0.0
    for i in range(pto.get_global_id(), n, pto.get_grid_dim() * pto.get_block_dim()):
        acc += pto.load(x + i)
    s = pto.reduce(acc, scope="block")
    if pto.get_local_id() == 0:
        pto.store(partial + pto.get_block_id(), s)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("n", [1, 256, 4097])
def test_block_sum_with_reduce_is_bit_identical(run, n, block):
    x = np.random.default_rng(n + block).standard_normal(n).astype(np.float32)
    grid = grid_for(n, block)
    _, hand = run(block_sum, grid, block, (x, np.full(grid, np.nan, np.float32), n, block,
                                           block.bit_length() - 1))
    _, new = run(block_sum_reduce, grid, block, (x, np.full(grid, np.nan, np.float32), n))
    assert hand.tobytes() == new.tobytes()
    np.testing.assert_array_equal(new, tree_partials(padded(x, grid * block), block))


@pytest.mark.parametrize("n,grid", [(1, 1), (1000, 2), (5000, 3), (65536, 4)])
def test_grid_stride_loop_with_reduce_is_bit_identical(run, n, grid):
    block = 128
    x = np.random.default_rng(n).random(n).astype(np.float32)
    stride = grid * block
    iters = (n + stride - 1) // stride
    _, hand = run(grid_stride_sum, grid, block, (x, np.full(grid, np.nan, np.float32), n, iters,
                                                 block, 7))
    _, new = run(grid_stride_sum_reduce, grid, block, (x, np.full(grid, np.nan, np.float32), n))
    assert hand.tobytes() == new.tobytes()


def test_reduce_twins_under_other_warp_orders(run_scheduled):
    n, block = 1000, 128
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    grid = grid_for(n, block)
    _, out = run_scheduled(grid_stride_sum_reduce, grid, block,
                           (x, np.zeros(grid, np.float32), n))
    _, hand = run_scheduled(block_sum, grid, block, (x, np.zeros(grid, np.float32), n, block, 7))
    assert out.tobytes() == hand.tobytes()
