"""Sorting-network steps `j <= 16` run in registers, 16 pairs per vector operation
(pair_registers.py, docs/native.md#merged-tree-steps): the interpreter's bits (NaN payloads,
infinities, -0, ties) and a NumPy model of the lockstep network, for every fused run of steps
(`j = 16..1`, `8..1`, `4..1`, `2, 1`), several block sizes, and the passes for a body it does
not take."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native import pair_registers
from pypto.backend.native.exchange_selects import select_exchanges
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.jit import llvm_ir
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import bitonic_ref, bitonic_sort_block


@pto.kernel
def steps(x, y, k, BLOCK: pto.constexpr, TOP: pto.constexpr, ROUNDS: pto.constexpr):
    """ROUNDS times the steps `j = 2^TOP, ..., 2, 1` (one block-level loop each round), the
    direction from `tid & k`, flipped on every third step (each trip's own value)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(BLOCK)
    pto.store(s + tid, pto.load(x + pto.get_block_id() * BLOCK + tid))
    pto.barrier_block()
    for r in range(ROUNDS):
        for step in range(TOP, -1, -1):
            j = 1 << step
            flip = (step + r) % 3 == 0
            ixj = tid ^ j
            if ixj > tid:
                a = pto.load(s + tid)
                b = pto.load(s + ixj)
                if ((tid & k) == 0) != flip:
                    if a > b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
                else:
                    if a < b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
            pto.barrier_block()
    pto.store(y + pto.get_block_id() * BLOCK + tid, pto.load(s + tid))


@pto.kernel
def sort_f64(x, y, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """The bitonic sort on the keys' dtype (float64: groups of 64 lanes, 512 bytes), descending."""
    tid = pto.get_local_id()
    s = pto.alloc_local(BLOCK, dtype=x.dtype)
    pto.store(s + tid, pto.load(x + pto.get_block_id() * BLOCK + tid))
    pto.barrier_block()
    for stage in range(LOG2):
        k = 2 << stage
        for step in range(stage, -1, -1):
            j = 1 << step
            ixj = tid ^ j
            if ixj > tid:
                a = pto.load(s + tid)
                b = pto.load(s + ixj)
                if (tid & k) != 0:
                    if a > b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
                else:
                    if a < b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
            pto.barrier_block()
    pto.store(y + pto.get_block_id() * BLOCK + tid, pto.load(s + tid))


@pto.kernel
def mix_steps(x, y, BLOCK: pto.constexpr, TOP: pto.constexpr):
    """int32 steps that are no exchange: the lane's element rewritten, then read back (a load
    after a store in the body), the partner's from it; wrapping arithmetic."""
    tid = pto.get_local_id()
    s = pto.alloc_local(BLOCK, dtype=x.dtype)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    for step in range(TOP, -1, -1):
        j = 1 << step
        ixj = tid ^ j
        if ixj > tid:
            a = pto.load(s + tid)
            b = pto.load(s + ixj)
            pto.store(s + tid, (a ^ b) - tid)
            c = pto.load(s + tid)
            pto.store(s + ixj, c * 1000003 + b)
        pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


@pto.kernel
def minmax_steps(x, y, BLOCK: pto.constexpr, TOP: pto.constexpr):
    """Steps written with `min` / `max` (arith.minimumf: not a body run in registers)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(BLOCK)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    for step in range(TOP, -1, -1):
        j = 1 << step
        ixj = tid ^ j
        if ixj > tid:
            a = pto.load(s + tid)
            b = pto.load(s + ixj)
            pto.store(s + tid, min(a, b))
            pto.store(s + ixj, max(a, b))
        pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


def _keys(n: int, seed: int) -> np.ndarray:
    """Keys with NaNs (payloads, both signs), infinities, signed zeros and ties in every block
    of 32."""
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x[::7] = 0.0
    x[3::7] = -0.0
    x[5::11] = 1.5
    x[2::13] = np.inf
    x[4::17] = -np.inf
    bits = x.view(np.uint32)
    bits[6::19] = 0x7FC00123
    bits[9::23] = 0xFFA00001  # (a signalling NaN's bits with the sign set: moved, not made)
    return x


def _steps_ref(x: np.ndarray, block: int, k: int, top: int, rounds: int) -> np.ndarray:
    s = x.reshape(-1, block).copy()
    tid = np.arange(block)
    for r in range(rounds):
        for step in range(top, -1, -1):
            j = 1 << step
            up = ((tid & k) == 0) != ((step + r) % 3 == 0)
            for t in range(block):
                p = t ^ j
                if p > t:
                    a, b = s[:, t].copy(), s[:, p].copy()
                    swap = np.where(up[t], a > b, a < b)
                    s[:, t] = np.where(swap, b, a)
                    s[:, p] = np.where(swap, a, b)
    return s.reshape(-1)


def _ir(kernel, args, block: int) -> str:
    func = pto.compile(kernel, args=args, block=block).func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (block, 1, 1)])
    return llvm_ir(select_exchanges(func))


@pytest.mark.parametrize("block", [32, 64, 256, 1024])
def test_bitonic_sort_bit_exact(block):
    log2 = block.bit_length() - 1
    x = _keys(2 * block, block)
    interp, native = both(bitonic_sort_block, 2, block, [x, np.zeros_like(x)], (block, log2))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1].view(np.uint32),
                                  bitonic_ref(x, block).view(np.uint32))
    clean = np.random.default_rng(1).standard_normal(2 * block).astype(np.float32)
    clean[::3] = -0.0
    clean[1::3] = 0.0
    interp, native = both(bitonic_sort_block, 2, block, [clean, np.zeros_like(clean)],
                          (block, log2))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], np.sort(clean.reshape(2, block), axis=1).ravel())


@pytest.mark.parametrize("top", [0, 1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("k", [4, 64])
def test_every_fused_run_bit_exact(top, k):
    """Blocks of 128 lanes, groups of 128 (`pair_registers.GROUP_BYTES`): `top` 6, 5, 4:
    `j = 64..1`, `32..1`, `16..1` in registers (whole vectors for `j >= 16`); 3, 2, 1: `8..1`,
    `4..1`, `2, 1` (shuffles within 32 lanes); 0: `j = 1` alone (a pass). `k` 4: the
    direction changes inside a vector; 64: per 64 lanes."""
    block, rounds = 128, 2
    x = _keys(2 * block, top)
    interp, native = both(steps, 2, block, [x, np.zeros_like(x)], (k, block, top, rounds))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1].view(np.uint32),
                                  _steps_ref(x, block, k, top, rounds).view(np.uint32))


def test_float64_sort_bit_exact():
    x = np.random.default_rng(7).standard_normal(512)
    x[::7], x[3::7], x[5::11], x[2::13], x[4::17] = 0.0, -0.0, 1.5, np.inf, -np.inf
    x.view(np.uint64)[6::19] = 0x7FF8000000000ABC  # (float64 NaN payloads, both signs)
    x.view(np.uint64)[9::23] = 0xFFF4000000000001
    interp, native = both(sort_f64, 2, 256, [x, np.zeros_like(x)], (256, 8))
    assert same_bits(interp, native)
    clean = np.random.default_rng(2).standard_normal(512)
    interp, native = both(sort_f64, 2, 256, [clean, np.zeros_like(clean)], (256, 8))
    np.testing.assert_array_equal(native[1], -np.sort(-clean.reshape(2, 256), axis=1).ravel())
    assert "shufflevector <16 x double>" in _ir(
        sort_f64, (np.zeros(256), np.zeros(256), 256, 8), 256)


def test_int32_load_after_store_bit_exact():
    block, top = 128, 6
    x = np.random.default_rng(5).integers(-2**31, 2**31, block, dtype=np.int64).astype(np.int32)
    assert "load <16 x i32>" in _ir(mix_steps, (x, x.copy(), block, top), block)
    interp, native = both(mix_steps, 1, block, [x, np.zeros_like(x)], (block, top))
    assert same_bits(interp, native)
    ref, tid = x.astype(np.int64), np.arange(block)
    for step in range(top, -1, -1):
        j = 1 << step
        low = tid[(tid ^ j) > tid]
        a, b = ref[low], ref[low ^ j]
        ref[low] = (((a ^ b) - low) + 2**31) % 2**32 - 2**31
        ref[low ^ j] = ((ref[low] * 1000003 + b) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(native[1], ref.astype(np.int32))


def test_registers_are_taken():
    args = (np.zeros(256, np.float32), np.zeros(256, np.float32), 4, 256, 4, 1)
    assert "shufflevector <16 x float>" in _ir(steps, args, 256)
    old = pair_registers.ENABLED
    pair_registers.ENABLED = False
    try:
        assert "shufflevector <16 x float>" not in _ir(steps, args, 256)
    finally:
        pair_registers.ENABLED = old


def test_small_block_and_min_max_keep_the_passes():
    """Fewer than 32 lanes, or a body with `min` / `max` (no exact vector counterpart taken
    here): the passes, with the interpreter's bits."""
    assert "shufflevector <16" not in _ir(
        steps, (np.zeros(16, np.float32), np.zeros(16, np.float32), 4, 16, 3, 1), 16)
    args = (np.zeros(64, np.float32), np.zeros(64, np.float32), 64, 4)
    assert "shufflevector <16" not in _ir(minmax_steps, args, 64)
    x = _keys(64, 3)
    x[np.isnan(x)] = np.float32(np.nan)  # (one NaN's bits: which of two NaNs `min` returns
    # differs between the backends, lane loops included, a separate matter)
    interp, native = both(minmax_steps, 1, 64, [x, np.zeros_like(x)], (64, 4))
    assert same_bits(interp, native)
