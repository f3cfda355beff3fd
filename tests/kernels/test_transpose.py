"""Matrix transpose through an L1 tile, the CUDA `transposeCoalesced` sample in PTO form.

A 2-D grid of 32x8 blocks; each block moves one 32x32 tile: every lane reads 4 elements of a
column strip (coalesced reads along rows of `src`), the block meets at `barrier_block()`, then
every lane writes 4 elements of the transposed tile (coalesced writes along rows of `dst`).
The tile is padded to 33 columns (the bank-conflict padding a GPU author writes by habit; on
the interpreter it only checks that padded strides work). Out-of-range lanes of edge tiles are
masked by the bounds checks, so any matrix shape works. Transposition is exact: results are
compared with `a.T` for equality.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto

TILE = 32
ROWS = 8          # block = (TILE, ROWS): each lane handles TILE // ROWS elements
PITCH = TILE + 1  # padded row length of the L1 tile


@pto.kernel
def transpose(src, dst, rows, cols):
    tile = pto.alloc_local(TILE * PITCH, dtype=src.dtype)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    col0 = pto.get_block_id(0) * TILE
    row0 = pto.get_block_id(1) * TILE

    x = col0 + tx
    for j in range(0, TILE, ROWS):
        y = row0 + ty + j
        if x < cols and y < rows:
            pto.store(tile + (ty + j) * PITCH + tx, pto.load(src + y * cols + x))

    pto.barrier_block()   # every lane reads elements other warps wrote

    x = row0 + tx          # column of dst = row of src
    for j in range(0, TILE, ROWS):
        y = col0 + ty + j  # row of dst = column of src
        if x < rows and y < cols:
            pto.store(dst + y * rows + x, pto.load(tile + tx * PITCH + ty + j))


@pto.kernel
def transpose_missing_barrier(src, dst, rows, cols):
    """The same kernel with the barrier forgotten: warps read tile rows other warps write."""
    tile = pto.alloc_local(TILE * PITCH, dtype=src.dtype)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    col0 = pto.get_block_id(0) * TILE
    row0 = pto.get_block_id(1) * TILE
    x = col0 + tx
    for j in range(0, TILE, ROWS):
        y = row0 + ty + j
        if x < cols and y < rows:
            pto.store(tile + (ty + j) * PITCH + tx, pto.load(src + y * cols + x))
    x = row0 + tx
    for j in range(0, TILE, ROWS):
        y = col0 + ty + j
        if x < rows and y < cols:
            pto.store(dst + y * rows + x, pto.load(tile + tx * PITCH + ty + j))


def launch_transpose(run, kernel, a: np.ndarray) -> np.ndarray:
    rows, cols = a.shape
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    out = np.zeros((cols, rows), dtype=a.dtype)
    _, out = run(kernel, grid, (TILE, ROWS), (a, out, rows, cols))
    return out


SHAPES = [(32, 32), (64, 96), (37, 71), (1, 5), (100, 33), (3, 200)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_transpose_matches_numpy(run, shape, dtype):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    a = (rng.standard_normal(shape) * 1000).astype(dtype)
    np.testing.assert_array_equal(launch_transpose(run, transpose, a), a.T)


def test_transpose_twice_is_the_identity(run):
    a = np.random.default_rng(1).standard_normal((45, 70)).astype(np.float32)
    np.testing.assert_array_equal(
        launch_transpose(run, transpose, launch_transpose(run, transpose, a)), a)


def test_transpose_without_barrier_block_is_a_race(run_racy):
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    with pytest.raises(pto.RaceError) as info:
        launch_transpose(run_racy, transpose_missing_barrier, a)
    message = str(info.value)
    assert "race on L1 buffer 'tile'" in message
    assert message.count("test_transpose.py:") >= 2          # both accesses are located
    assert "use pto.barrier_block()" in message


@pytest.mark.parametrize("shape", [(64, 96), (37, 71)])
def test_transpose_under_other_warp_orders(run_scheduled, shape):
    a = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(launch_transpose(run_scheduled, transpose, a), a.T)
