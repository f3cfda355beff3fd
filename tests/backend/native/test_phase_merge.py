"""Merged tree steps (docs/native.md#merged-tree-steps): a tree step's L1 write joins the phase
of its reads only when no lane reads what another lane of the phase writes; bit for bit against
the interpreter and NumPy, and the cases the proof must refuse (they would differ if merged)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.jit import NativeUnsupported
from pypto.backend.native.phases import merged_phases
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def tree(x, out, n, BLOCK: pto.constexpr, START: pto.constexpr, STEPS: pto.constexpr):
    """A block tree over a (possibly non-power-of-two) block: `tid < s and tid + s < BLOCK`."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK, dtype=pto.float16)
    v = pto.load(x)  # (x[0] for lanes past n)
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = START
    for _ in range(STEPS):
        if tid < s and tid + s < BLOCK:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(out + pto.get_block_id(), pto.load(buf))


def tree_ref(x: np.ndarray, n: int, block: int, start: int, steps: int) -> np.ndarray:
    grid = -(-n // block)
    v = np.full(grid * block, x[0], x.dtype)
    v[:n] = x
    v = v.reshape(grid, block).copy()
    s = start
    for _ in range(steps):
        k = max(min(s, block - s), 0)
        v[:, :k] = v[:, :k] + v[:, s:s + k]
        s //= 2
    return v[:, 0].copy()


@pto.kernel
def warp_tree(x, out, START: pto.constexpr):
    """Warp trees in int32 with warp barriers (`red + warp * 32 + lane`, `lane < s`)."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(256, dtype=pto.int32)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    pto.barrier()
    s = START
    for _ in range(6):
        if lane < s:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + s))
        pto.barrier()
        s = s // 2
    pto.store(out + pto.get_global_id(), pto.load(red + warp * 32 + lane))


def warp_tree_ref(x: np.ndarray, block: int, start: int) -> np.ndarray:
    """The lockstep result: every step reads all lanes' old values, then writes."""
    red = x.reshape(-1, block).copy()
    out = []
    for row in red:
        r = row.copy()
        s = start
        for _ in range(6):
            old = r.copy()
            for t in range(block):
                lane, warp = t % 32, t // 32
                if lane < s:
                    r[t] = old[t] + old[warp * 32 + lane + s]
            s //= 2
        out.append(r)
    return np.concatenate(out)


@pto.kernel
def shift(x, y, n):
    """`buf[tid] = buf[tid - 1]` under `tid >= 1`: lane t reads what lane t - 1 writes, so the
    write must stay a phase of its own (lockstep: every lane reads the old value). One warp a
    block: lanes of a warp never race (docs/native.md#phases)."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(32)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    if tid >= 1:
        pto.store(buf + tid, pto.load(buf + tid - 1) * 2.0)
    pto.barrier_block()
    pto.store(y + pto.get_global_id(), pto.load(buf + tid))


def _merged(kernel, args, block) -> bool:
    func = pto.compile(kernel, args=args, block=block).func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (*block, 1, 1)[:3]])
    return merged_phases(func)


@pytest.mark.parametrize("n, block, start, steps", [
    (1000, 96, 64, 7),    # non-power-of-two block, ragged tail
    (512, 128, 64, 7),    # a full tree
    (300, 64, 40, 6),     # a start that is no power of two
])
def test_block_trees_merge_and_agree(n, block, start, steps):
    x = (np.random.default_rng(n).standard_normal(n) * 4).astype(np.float16)
    grid = -(-n // block)
    out = np.zeros(grid, np.float16)
    interp, native = both(tree, grid, block, [x, out], (n, block, start, steps))
    assert same_bits(interp, native)
    assert np.array_equal(native[1].view(np.uint16),
                          tree_ref(x, n, block, start, steps).view(np.uint16))
    assert _merged(tree, (x, out, n, block, start, steps), (block,))


def test_warp_trees_merge():
    """`lane < s` with `lane + s` read: merged while s <= 16 (the loop's value range)."""
    x = np.random.default_rng(1).integers(-1000, 1000, 512).astype(np.int32)
    out = np.zeros(512, np.int32)
    interp, native = both(warp_tree, 2, 256, [x, out], (16,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], warp_tree_ref(x, 256, 16))
    assert _merged(warp_tree, (x, out, 16), (256,))


def test_a_lane_reading_its_neighbours_write_stays_split():
    x = np.arange(128, dtype=np.float32)
    interp, native = both(shift, 4, 32, [x, np.zeros(128, np.float32)], (128,))
    assert same_bits(interp, native)
    expect = x.copy().reshape(4, 32)
    expect[:, 1:] = expect[:, :-1] * 2
    assert np.array_equal(native[1], expect.ravel())
    assert not _merged(shift, (x, np.zeros(128, np.float32), 128), (32,))


def test_a_merged_kernel_refuses_a_two_dimensional_launch():
    n, block = 512, 128
    x = np.ones(n, np.float16)
    out = np.zeros(4, np.float16)
    compiled = pto.compile(tree, args=(x, out, n, block, 64, 7), block=(block,))
    with pytest.raises(NativeUnsupported, match="1-D block"):
        pto.launch(compiled, 4, (64, 2), (x, out, n, block, 64, 7), backend="native")


def test_argmin_tree_with_ties_runs_its_branch_inside_the_step():
    """argmin block's `if b < a or (b == a and ids[t + s] < ids[t]): store, store` joins the
    step's reads (two buffers, a lane-dependent `if` inside the phase); many ties, ragged."""
    from tests.kernels.test_users_zoo import argmin_block

    n, block = 1000, 128
    x = np.random.default_rng(3).integers(0, 4, n).astype(np.float32)
    grid = -(-n // block)
    idx, val = np.zeros(grid, np.int32), np.zeros(grid, np.float32)
    interp, native = both(argmin_block, grid, block, [x, idx, val], (n, block, 7))
    assert same_bits(interp, native)
    pad = np.full(grid * block, 3.0e38, np.float32)
    pad[:n] = x
    rows = pad.reshape(grid, block)
    assert np.array_equal(native[1], (rows.argmin(axis=1) + np.arange(grid) * block))
    assert np.array_equal(native[2], rows.min(axis=1))
    assert _merged(argmin_block, (x, idx, val, n, block, 7), (block,))


@pto.kernel
def corner(x, y, z, w):
    """`if tid == 0 / else` and `if lane < 3` with no L1 write in them, after a barrier: each
    branch a phase under its guard (its lane loop runs only the lanes the guard admits)."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    if tid == 0:
        pto.store(y + pto.get_block_id(), pto.load(buf + 63))
    else:
        pto.store(z + pto.get_global_id(), pto.load(buf + tid - 1) + 1.0)
    if pto.get_lane_id() < 3:
        pto.store(w + pto.get_global_id(), pto.load(buf + tid) * 2.0)


def test_lane_guarded_branches_as_phases():
    x = np.random.default_rng(5).standard_normal(256).astype(np.float32)
    interp, native = both(corner, 4, 64, [x, np.zeros(4, np.float32), np.zeros(256, np.float32),
                                          np.zeros(256, np.float32)])
    assert same_bits(interp, native)
    rows = x.reshape(4, 64)
    assert np.array_equal(native[1], rows[:, 63])
    z = np.concatenate([np.zeros((4, 1), np.float32), rows[:, :-1] + np.float32(1)], axis=1)
    assert np.array_equal(native[2], z.ravel())
    lanes = np.arange(256) % 32 < 3
    assert np.array_equal(native[3], np.where(lanes, x * np.float32(2), np.float32(0)))


@pto.kernel
def strided(x, out, BLOCK: pto.constexpr, LOG2: pto.constexpr, FAR: pto.constexpr):
    """CUDA's interleaved tree, `index = 2 * s * tid`, reading `index + s` (between two lanes'
    writes: merged) or, with FAR, `index - 2 * s` (the previous lane's write, which merged in
    lane order it would read already updated: must stay split)."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = 1
    for _ in range(LOG2):
        index = 2 * s * tid
        d = s
        if FAR:
            d = -2 * s
        if index < BLOCK and index + d < BLOCK and index + d >= 0:
            pto.store(buf + index, pto.load(buf + index) + pto.load(buf + index + d))
        pto.barrier_block()
        s = s * 2
    pto.store(out + pto.get_global_id(), pto.load(buf + tid))


def strided_ref(x: np.ndarray, block: int, log2: int, far: bool) -> np.ndarray:
    """Lockstep: every step reads the old values of all lanes, then writes."""
    rows = x.reshape(-1, block).copy()
    s = 1
    for _ in range(log2):
        d = -2 * s if far else s
        old = rows.copy()
        for t in range(block):
            if 2 * s * t < block and 0 <= 2 * s * t + d < block:
                rows[:, 2 * s * t] = old[:, 2 * s * t] + old[:, 2 * s * t + d]
        s *= 2
    return rows.ravel()


@pytest.mark.parametrize("far", [False, True])
def test_interleaved_tree_merges_only_when_reads_fall_between_writes(far):
    """`2 * s * tid` (uniform times x) with `s = s * 2` in [1, 2^LOG2]: reads at `+ s` merge,
    reads at `- 2 * s` (lane t reads lane t - 1's write) keep their own write phase."""
    block, log2 = 32, 5  # (one warp: lanes of a warp never race, docs/native.md#phases)
    x = (np.random.default_rng(7).standard_normal(4 * block) * 8).astype(np.float32)
    out = np.zeros_like(x)
    interp, native = both(strided, 4, block, [x, out], (block, log2, far))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], strided_ref(x, block, log2, far))
    assert _merged(strided, (x, out, block, log2, far), (block,)) is not far
