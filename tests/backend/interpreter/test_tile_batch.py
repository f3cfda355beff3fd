"""Tile vector instructions in batch mode (several blocks per lane vector: one NumPy operation
over every block's tiles, results written straight into the destination tile) give the bits of
an independent NumPy emulation of the documented semantics
(docs/language.md#tile-vector-instructions: elementwise ops rounded once, `texp` through
float64, reductions folding halves), with the race detector on and off, in batch and block
mode, with destinations that alias their operands.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel

ROWS, COLS = 8, 24  # 24 columns: the fold carries an odd element (24 -> 12 -> 6 -> 3 -> 2 -> 1)


@pto.kernel
def chain(X, Y, S, rows: pto.constexpr, cols: pto.constexpr):
    b = pto.get_block_id()
    x = pto.alloc_tile(rows, cols)
    y = pto.alloc_tile(rows, cols)
    m = pto.alloc_tile(rows, 1)
    c = pto.alloc_tile(1, cols)
    pto.wait(pto.async_load(x, X + b * rows * cols, rows * cols * 4))
    pto.trowmax(m, x)
    pto.trowexpandexpdif(y, x, m)           # exp(x - max) through float64, rounded once
    pto.trowsum(m, y)                       # folding halves
    pto.trowexpanddiv(y, y, m)              # the destination is an operand
    pto.tmuls(y, y, 3.0)
    pto.tadd(y, y, x)
    pto.tsqrt(x, x)                         # NaN for negative x: compared bit for bit too
    pto.tsub(y, y, x)
    pto.tcolsum(c, y)
    pto.store(Y + b * rows * cols, y, rows * cols * 4)
    pto.store(S + b * cols, c, cols * 4)


def _fold(x: np.ndarray, axis: int) -> np.ndarray:
    """Folding halves, written independently of tile_ops.fold: a list of columns."""
    cols = [np.take(x, [j], axis=axis) for j in range(x.shape[axis])]
    while len(cols) > 1:
        h = len(cols) // 2
        folded = [(cols[j] + cols[j + h]).astype(x.dtype) for j in range(h)]
        cols = folded + cols[2 * h:]
    return cols[0]


def _reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f32 = np.float32
    with np.errstate(all="ignore"):
        m = x.max(axis=1, keepdims=True)
        y = np.exp((x - m).astype(np.float64)).astype(f32)
        s = _fold(y, 1)
        y = (y / s).astype(f32)
        y = (y * f32(3.0)).astype(f32)
        y = (y + x).astype(f32)
        y = (y - np.sqrt(x)).astype(f32)
    return y, _fold(y, 0)


@pytest.mark.parametrize("race_check", [False, True])
@pytest.mark.parametrize("grid", [1, 5])
def test_batched_tile_chain_matches_the_emulation_bit_for_bit(grid, race_check):
    rng = np.random.default_rng(grid)
    x = (rng.standard_normal((grid * ROWS, COLS)) * 4).astype(np.float32)
    x[0, :3] = [0.0, -0.0, 80.0]
    y = np.zeros_like(x)
    s = np.zeros((grid, COLS), np.float32)
    _, out_y, out_s = run_kernel(chain, grid, 32, (x, y, s, ROWS, COLS), race_check=race_check)
    for b in range(grid):
        ref_y, ref_s = _reference(x[b * ROWS:(b + 1) * ROWS])
        np.testing.assert_array_equal(out_y[b * ROWS:(b + 1) * ROWS].view(np.uint32),
                                      ref_y.view(np.uint32))
        np.testing.assert_array_equal(out_s[b].view(np.uint32), ref_s[0].view(np.uint32))
