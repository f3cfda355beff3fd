"""Rows of lanes as vectors (docs/native.md#transposed-rows): a full lane function with one
counted loop runs 8 lanes at a time, its row loads transposed in registers, bit for bit
against the interpreter (the oracle) and NumPy's emulation of each lane's in-order sum."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native import transposed_rows
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.jit import llvm_module
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import gemv_lane_ref, gemv_lane_row

BLOCK = 64


@pto.kernel
def row_stats(x, k, total, peak, wrapped, nrows, ncols):
    """Per lane (one row each): a float64 in-order sum, a running max (NaN-propagating `max`)
    and an int32 polynomial hash that wraps, each from loads at `r * ncols + c`."""
    r = pto.get_global_id()
    if r < nrows:
        s = pto.cast(0.0, total.dtype)
        m = -1.0e30
        w = 0
        for c in range(ncols):
            v = pto.load(x + r * ncols + c)
            s = s + pto.cast(v, total.dtype) * 3.0
            m = max(m, v)
            w = w * 31 + pto.load(k + r * ncols + c)
        pto.store(total + r, s)
        pto.store(peak + r, m)
        pto.store(wrapped + r, w)


@pto.kernel
def in_place_rows(x, nrows, ncols):
    """Each lane sums its row into the row's first element: the loaded tensor is stored, so
    the lanes' order could be seen (lane 1 reads lane 0's row only if rows overlapped; the
    rewrite does not prove they do not, and keeps the one-lane loop)."""
    r = pto.get_global_id()
    if r < nrows:
        acc = 0.0
        for c in range(ncols):
            acc = acc + pto.load(x + r * ncols + c)
        pto.store(x + r * ncols, acc)


def _rows_added(kernel, args) -> bool:
    """Did the llvmlite module of `kernel` (for block BLOCK) get `@k.full.lane.rows`?"""
    compiled = pto.compile(kernel, args=args, block=BLOCK)
    func = compiled.func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(BLOCK, i64)])
    names = [f.name for f in llvm_module(func).functions]
    return f"{compiled.name}.full.lane{transposed_rows.ROWS_SUFFIX}" in names


@pytest.fixture(scope="module")
def gemv():
    A = np.zeros((BLOCK, 8), np.float32)
    args = (A, np.zeros(8, np.float32), np.zeros(BLOCK, np.float32), BLOCK, 8)
    return pto.compile(gemv_lane_row, args=args, block=BLOCK)


@pytest.mark.parametrize("ncols", [64, 13, 5, 0])
def test_gemv_rows_bit_exact(gemv, ncols):
    """Whole chunks of 8 columns, chunks and a rest, only a rest, no trip; 3 full blocks and
    a partial one (its lanes run one by one)."""
    nrows = 3 * BLOCK + 20
    rng = np.random.default_rng(ncols)
    width = max(ncols, 1)  # (no trip: the tensors still have an element)
    A = (rng.standard_normal((nrows, width)) * 3).astype(np.float32)
    x = rng.standard_normal(width).astype(np.float32)
    grid = (nrows + BLOCK - 1) // BLOCK
    interp, native = both(gemv, grid, BLOCK, [A, x, np.full(nrows, np.nan, np.float32)],
                          (nrows, ncols))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[2], gemv_lane_ref(A[:, :ncols], x[:ncols]))


def test_gemv_is_rewritten():
    A = np.zeros((BLOCK, 8), np.float32)
    assert _rows_added(gemv_lane_row, (A, np.zeros(8, np.float32), np.zeros(BLOCK, np.float32),
                                       BLOCK, 8))


def test_float64_max_and_wrapping_int_rows():
    """Other types and an intrinsic in the vectors: NaN and -0.0 in the max, int32 sums
    that wrap, another launch block (the one-lane loops) beside the compiled one."""
    nrows, ncols = 2 * BLOCK, 11
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((nrows, ncols)) * 20).astype(np.float32)
    x[3, 4] = np.nan
    x[7, :] = -0.0
    k = rng.integers(-2**31, 2**31, (nrows, ncols), dtype=np.int32)
    args = [x, k, np.zeros(nrows), np.zeros(nrows, np.float32), np.zeros(nrows, np.int32)]
    compiled = pto.compile(row_stats, args=(*args, nrows, ncols), block=BLOCK)
    for block in (BLOCK, 32):
        interp, native = both(compiled, nrows // block, block, args, (nrows, ncols))
        assert same_bits(interp, native)
    total = np.zeros(nrows)
    for c in range(ncols):
        total = total + x[:, c].astype(np.float64) * 3.0
    np.testing.assert_array_equal(native[2], total)
    assert np.isnan(native[3][3]) and native[3][7] == 0.0
    w = np.zeros(nrows, np.int32)
    for c in range(ncols):
        w = w * np.int32(31) + k[:, c]
    np.testing.assert_array_equal(native[4], w)
    assert _rows_added(row_stats, (*args, nrows, ncols))


def test_a_tensor_loaded_and_stored_keeps_the_lanes_one_by_one():
    nrows, ncols = BLOCK, 9
    x = np.random.default_rng(2).standard_normal((nrows, ncols)).astype(np.float32)
    interp, native = both(pto.compile(in_place_rows, args=(x, nrows, ncols), block=BLOCK),
                          1, BLOCK, [x], (nrows, ncols))
    assert same_bits(interp, native)
    assert not _rows_added(in_place_rows, (x, nrows, ncols))
