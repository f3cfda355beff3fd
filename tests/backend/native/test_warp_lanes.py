"""Warp by warp lane loops (warp_lanes.py, docs/native.md#warp-lanes): a phase that reads the
warp and lane ids runs, in a launch of the compiled 1-D block, as constant 32-lane loops per
warp. A permutation inside each warp (reversal, `lane ^ k`), a ragged last block, and a launch
of another block size (the ordinary loops), bit for bit against the interpreter and NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.phase_codegen import split
from pypto.backend.native.warp_lanes import MARK
from tests.backend.native.helpers import both, same_bits

BLOCK = 128


@pto.kernel
def warp_permute(x, y, n, K: pto.constexpr):
    """y[i] = the value of lane `(31 - lane) ^ K` of i's warp (0.0 past `n`), through L1."""
    buf = pto.alloc_local(BLOCK)
    i = pto.get_global_id()
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + pto.get_local_id(), v)
    pto.barrier()
    base = pto.get_warp_id() * pto.WARP_SIZE
    if i < n:
        pto.store(y + i, pto.load(buf + base + ((pto.WARP_SIZE - 1 - pto.get_lane_id()) ^ K)))


def permute_ref(x: np.ndarray, n: int, lanes: int, k: int) -> np.ndarray:
    grid = -(-n // lanes)
    v = np.zeros(grid * lanes, np.float32)
    v[:n] = x[:n]
    src = (31 - np.arange(32)) ^ k
    out = v.reshape(-1, 32)[:, src].reshape(-1)
    y = np.zeros(len(x), np.float32)
    y[:n] = out[:n]
    return y


@pytest.fixture(scope="module")
def compiled():
    x = np.zeros(1000, np.float32)
    return pto.compile(warp_permute, args=(x, x.copy(), 1000, 5), block=BLOCK)


def test_the_phase_runs_warp_by_warp(compiled):
    func = compiled.func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (BLOCK, 1, 1)])
    _, grid, _ = split(func)
    assert sum(MARK in op.attributes for op in grid.walk()) == 1  # (the second phase only)


@pytest.mark.parametrize("n, block", [(1000, BLOCK), (1024, BLOCK), (1000, 64)])
def test_bit_exact(compiled, n, block):
    """Ragged and whole blocks of the compiled shape; blocks of 64 lanes (not the compiled
    shape: the ordinary lane loops)."""
    x = np.random.default_rng(n + block).standard_normal(1024).astype(np.float32)
    x[::7] = -0.0
    grid = -(-n // block)
    interp, native = both(compiled, grid, block, [x, np.zeros(1024, np.float32)], (n, 5))
    assert same_bits(interp, native)
    assert np.array_equal(native[1].view(np.uint32), permute_ref(x, n, block, 5).view(np.uint32))


