"""Batch mode's block-local fast paths: row accesses and windowed branches.

In batch mode a lane vector holds several whole blocks. An L1 address `buf + tid + s` (block-local
id plus a uniform offset) is accessed as a 2-D slice, one row per block (`load_rows` /
`store_rows`), and a branch such as `if tid < s` runs on the window of lanes it keeps active
(`windows.WindowContext`). These tests check results against NumPy, and that every error — out of
bounds, division by zero, races — is reported exactly as the general path reports it
(`FAST_PATHS.on = False`), naming the same block and lane.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.errors import KernelError, MemoryAccessError, RaceError

BLOCK = 64


@pto.kernel
def windows(x, out, n):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    v = 0.0
    if i < n:                       # cuts a block: the inner windows are not dense
        if tid < 8:                 # a prefix window, with a global (ramp) id used inside
            v = pto.load(buf + tid + 8) * 2.0 + pto.load(x + i)
        else:                       # the wide rest: runs on the whole vector
            v = pto.load(buf + tid) - 1.0
        if tid >= BLOCK - 4:        # a suffix window: a value flows in and out
            v = v + pto.load(buf + tid - (BLOCK - 4))
    pto.store(out + i, v)


def windows_ref(x: np.ndarray, n: int) -> np.ndarray:
    blocks = x.reshape(-1, BLOCK)
    tid = np.arange(BLOCK)
    v = np.where(tid < 8, np.roll(blocks, -8, axis=1) * np.float32(2.0) + blocks,
                 blocks - np.float32(1.0)).astype(np.float32)
    tail = tid >= BLOCK - 4
    v[:, tail] = v[:, tail] + blocks[:, :4]
    v = v.reshape(-1)
    v[n:] = 0.0
    return v


@pto.kernel
def tree_sum(x, partial, STEPS: pto.constexpr, BARRIER: pto.constexpr):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    if BARRIER:
        pto.barrier_block()
    s = BLOCK // 2
    for _ in range(STEPS):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        if BARRIER:
            pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def window_overrun(x, out):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    if tid < 4:
        pto.store(out + pto.get_block_id() * 4 + tid, pto.load(buf + tid + (BLOCK - 2)))


@pto.kernel
def window_div(out, k):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK, dtype=pto.int32)
    pto.store(buf + tid, tid)
    pto.barrier_block()
    if tid < 8:
        pto.store(buf + tid, 100 // (pto.load(buf + tid) - k))
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(buf + tid))


def dev(a: np.ndarray):
    t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
    pto.memcpy_h2d(t, a)
    return t


def host(t, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    pto.memcpy_d2h(out, t)
    return out


@pytest.fixture
def switch():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


def _run(kernel, grid, args, **options):
    ck = pto.compile(kernel, args=args, block=(BLOCK, 1, 1), **options)
    source = ck.executable.variant(True).source
    if FAST_PATHS.on:  # the fast paths under test are used
        assert "_rows(" in source or "_window(" in source
    else:  # an empty plan: the generated code is the general path
        assert "_rows(" not in source and "_window(" not in source
    pto.launch(ck, grid=grid, block=BLOCK, args=args)
    pto.sync()


def _both(switch, kernel, grid, args, **options):
    """Run with the fast paths on and off; return the error each raised (or None)."""
    errors = []
    for on in (True, False):
        switch.on = on
        try:
            _run(kernel, grid, args, **options)
            errors.append(None)
        except KernelError as exc:
            errors.append(exc)
    return errors


def test_windows_match_numpy(switch):
    blocks = 32
    x = np.random.default_rng(1).random(blocks * BLOCK, dtype=np.float32)
    n = blocks * BLOCK - BLOCK // 2 - 3
    for on in (True, False):
        switch.on = on
        dx, dout = dev(x), dev(np.zeros_like(x))
        _run(windows, blocks, (dx, dout, n))
        assert np.array_equal(host(dout, x), windows_ref(x, n)), f"fast paths {on}"


@pytest.mark.parametrize("race_check", [True, False])
def test_tree_matches_numpy(switch, race_check):
    blocks = 40
    x = np.random.default_rng(2).random(blocks * BLOCK, dtype=np.float32)
    expect = x.reshape(-1, BLOCK).copy()
    s = BLOCK // 2
    while s:
        expect[:, :s] = expect[:, :s] + expect[:, s:2 * s]
        s //= 2
    for on in (True, False):
        switch.on = on
        dx, dp = dev(x), dev(np.zeros(blocks, np.float32))
        _run(tree_sum, blocks, (dx, dp, 6, True), race_check=race_check)
        assert np.array_equal(host(dp, np.zeros(blocks, np.float32)), expect[:, 0]), f"fast paths {on}"


def test_race_in_rows_reported_as_general_path(switch):
    x = dev(np.ones(8 * BLOCK, np.float32))
    p = dev(np.zeros(8, np.float32))
    fast, general = _both(switch, tree_sum, 8, (x, p, 6, False), race_check=True,
                          pipeline="")  # no static barrier check: the detector finds it
    assert isinstance(fast, RaceError) and isinstance(general, RaceError)
    assert str(fast) == str(general)
    assert "RAW race on L1 buffer" in str(fast)


def test_overrun_in_window_reported_as_general_path(switch):
    x = dev(np.ones(4 * BLOCK, np.float32))
    out = dev(np.zeros(16, np.float32))
    fast, general = _both(switch, window_overrun, 4, (x, out))
    assert isinstance(fast, MemoryAccessError) and str(fast) == str(general)
    assert "block (0, 0, 0), lane (2, 0, 0)" in str(fast)


def test_division_by_zero_in_window_reported_as_general_path(switch):
    out = dev(np.zeros(4 * BLOCK, np.int32))
    fast, general = _both(switch, window_div, 4, (out, 5))
    assert fast is not None and str(fast) == str(general)
    assert "lane (5, 0, 0)" in str(fast)
    fast, general = _both(switch, window_div, 4, (out, 9))  # no lane divides by zero
    assert fast is None and general is None
    expect = np.tile(np.concatenate([100 // (np.arange(8) - 9), np.arange(8, BLOCK)]), 4)
    assert np.array_equal(host(out, np.zeros(4 * BLOCK, np.int32)), expect.astype(np.int32))


@pto.kernel
def row_copy(x, y, ncols, spacing, shift):
    """Block b copies x[b*spacing + shift + tid] to y[b*ncols + tid] (HBM rows per block)."""
    row = pto.get_block_id()
    tid = pto.get_local_id()
    src = x + row * spacing
    dst = y + row * ncols
    buf = pto.alloc_local(BLOCK)     # L1 and a barrier: batch mode, several blocks a vector
    pto.store(buf + tid, pto.load(src + tid + shift))
    pto.barrier_block()
    pto.store(dst + tid, pto.load(buf + tid) * 2.0)


@pto.kernel
def row_square(x, y):
    """Unevenly spaced rows (b*b*8): one gather of whole rows."""
    row = pto.get_block_id()
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + row * row * 8 + tid))
    pto.barrier_block()
    pto.store(y + row * BLOCK + tid, pto.load(buf + tid))


@pytest.mark.parametrize("spacing", [BLOCK, 3 * BLOCK, 5])
def test_hbm_rows_match_numpy(switch, spacing):
    blocks = 12
    x = np.random.default_rng(3).random(blocks * 3 * BLOCK + 8, dtype=np.float32)
    starts = np.arange(blocks) * spacing + 1
    expect = (x[starts[:, None] + np.arange(BLOCK)] * np.float32(2.0)).reshape(-1)
    for on in (True, False):
        switch.on = on
        dy = dev(np.zeros(blocks * BLOCK, np.float32))
        _run(row_copy, blocks, (dev(x), dy, BLOCK, spacing, 1))
        assert np.array_equal(host(dy, expect), expect), f"fast paths {on}"


def test_uneven_hbm_rows_match_numpy(switch):
    blocks = 9
    x = np.random.default_rng(4).random(8 * 64 + BLOCK, dtype=np.float32)
    expect = x[(np.arange(blocks) ** 2 * 8)[:, None] + np.arange(BLOCK)].reshape(-1)
    for on in (True, False):
        switch.on = on
        dy = dev(np.zeros(blocks * BLOCK, np.float32))
        _run(row_square, blocks, (dev(x), dy))
        assert np.array_equal(host(dy, expect), expect), f"fast paths {on}"


def test_overlapping_hbm_rows_store_like_general_path(switch):
    """Rows 5 elements apart overlap: where two lanes store to one element, the later lane
    (higher block) wins, as in the general path."""
    blocks = 6
    x = np.random.default_rng(5).random(blocks * BLOCK, dtype=np.float32)
    expect = np.zeros(5 * blocks + BLOCK, np.float32)
    for b in range(blocks):
        expect[b * 5:b * 5 + BLOCK] = x[b * BLOCK:(b + 1) * BLOCK] * np.float32(2.0)
    for on in (True, False):
        switch.on = on
        dy = dev(np.zeros_like(expect))
        _run(row_copy, blocks, (dev(x), dy, 5, BLOCK, 0))
        assert np.array_equal(host(dy, expect), expect), f"fast paths {on}"


def test_hbm_row_overrun_reported_as_general_path(switch):
    x = dev(np.ones(4 * BLOCK, np.float32))
    y = dev(np.zeros(4 * BLOCK, np.float32))
    fast, general = _both(switch, row_copy, 4, (x, y, BLOCK, BLOCK, 3))
    assert isinstance(fast, MemoryAccessError) and str(fast) == str(general)
    assert "block (3, 0, 0), lane (61, 0, 0)" in str(fast)


# --- grid mode, 2-D launches: row-major addresses gy * w + gx -------------------------------

@pto.kernel
def shift_2d(u, out, w, h, dx):
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    if x < w and y < h:
        i = y * w + x
        pto.store(out + i, pto.load(u + i + dx) + 1.0)


def _run_2d(kernel, grid, block, args):
    ck = pto.compile(kernel, args=args, block=block)
    # the access planner takes these addresses (as a 4-D view of the plane) with fast paths on
    assert ("load_plan(" in ck.executable.variant(False).source) is FAST_PATHS.on
    pto.launch(ck, grid=grid, block=block, args=args)
    pto.sync()


@pytest.mark.parametrize("w,dx", [(32, 0), (32, 5), (35, 0)])  # 35: the pitch is not the grid's
def test_plane_accesses_match_numpy(switch, w, dx):
    h, block, grid = 24, (8, 4), (4, 6)  # grid covers 32 x 24
    u = np.random.default_rng(6).random(w * h + 8, dtype=np.float32)
    expect = np.zeros(w * h, np.float32)
    idx = np.arange(h)[:, None] * w + np.arange(min(w, 32))[None, :]
    expect[idx] = u[idx + dx] + np.float32(1.0)
    for on in (True, False):
        switch.on = on
        out = dev(np.zeros(w * h, np.float32))
        _run_2d(shift_2d, grid, block, (dev(u), out, w, h, dx))
        assert np.array_equal(host(out, expect), expect), f"fast paths {on}"


def test_plane_overrun_reported_as_general_path(switch):
    u = dev(np.ones(32 * 24, np.float32))
    out = dev(np.zeros(32 * 24, np.float32))
    errors = []
    for on in (True, False):
        switch.on = on
        with pytest.raises(MemoryAccessError) as info:
            _run_2d(shift_2d, (4, 6), (8, 4), (u, out, 32, 24, -1))
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "block (0, 0, 0), lane (0, 0, 0)" in errors[0]


@pto.kernel
def scale_by_shared(x, g, out):
    """Every block reads the same HBM row g[tid] (a block-local address into HBM)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + i) * pto.load(g + tid))
    pto.barrier_block()
    pto.store(out + i, pto.load(buf + tid))


def test_shared_hbm_row_matches_numpy(switch):
    blocks = 7
    x = np.random.default_rng(8).random(blocks * BLOCK, dtype=np.float32)
    g = np.random.default_rng(9).random(BLOCK, dtype=np.float32)
    expect = (x.reshape(blocks, BLOCK) * g).reshape(-1)
    for on in (True, False):
        switch.on = on
        out = dev(np.zeros_like(x))
        _run(scale_by_shared, blocks, (dev(x), dev(g), out))
        assert np.array_equal(host(out, x), expect), f"fast paths {on}"
    short = dev(g[:BLOCK - 1].copy())  # lane BLOCK-1 reads past the end: the general path says so
    fast, general = _both(switch, scale_by_shared, blocks, (dev(x), short, dev(x)))
    assert isinstance(fast, MemoryAccessError) and str(fast) == str(general)


@pto.kernel
def warp_window(x, out, CUT: pto.constexpr):
    """Warp 1 alone (a window of 32 lanes per block) sums pairs under a warp barrier; with
    CUT < 32 only part of the warp reaches the barrier: a deadlock."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    if pto.get_warp_id() == 1:
        if tid < 32 + CUT:
            pto.barrier()
        pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid - 32))
    pto.barrier_block()
    pto.store(out + i, pto.load(buf + tid))


def test_warp_window_matches_numpy_and_reports_divergence(switch):
    blocks = 5
    x = np.random.default_rng(10).random(blocks * BLOCK, dtype=np.float32)
    expect = x.reshape(blocks, BLOCK).copy()
    expect[:, 32:64] = expect[:, 32:64] + expect[:, 0:32]
    for on in (True, False):
        switch.on = on
        out = dev(np.zeros_like(x))
        _run(warp_window, blocks, (dev(x), out, 32))
        assert np.array_equal(host(out, x), expect.reshape(-1)), f"fast paths {on}"
    fast, general = _both(switch, warp_window, blocks, (dev(x), dev(x), 7))
    assert fast is not None and str(fast) == str(general)
    # the lane named is one of warp 1 that missed the barrier, not an inactive lane elsewhere
    assert "deadlock" in str(fast) and "lane (39, 0, 0) of block (0, 0, 0)" in str(fast)


@pto.kernel
def carried_load(x, y, n):
    """A value loaded at the end of a loop body and used in the next iteration after a store
    to the same address: it must be the value loaded, not a view of the memory since written."""
    i = pto.get_global_id()
    if i < n:
        prev = pto.load(x + i)
        for _ in range(3):
            pto.store(x + i, prev + 1.0)
            pto.store(y + i, prev)
            prev = pto.load(x + i)


def test_loop_carried_load_is_not_a_view_of_memory(switch):
    x = np.arange(8, dtype=np.float32)
    for on in (True, False):
        switch.on = on
        dx, dy = dev(x), dev(np.zeros_like(x))
        pto.launch(carried_load, grid=1, block=8, args=(dx, dy, 8))
        assert np.array_equal(host(dy, x), x + np.float32(2.0)), f"fast paths {on}"
        assert np.array_equal(host(dx, x), x + np.float32(3.0))


@pto.kernel
def invariant_in_loop(x, out, n, trips):
    """`i < n` and `i * 3` do not change inside the loop: computed once before it."""
    i = pto.get_global_id()
    acc = 0.0
    for k in range(trips):
        if i * 3 < n:
            acc = acc + pto.load(x + i) * pto.cast(k + 1, pto.float32)
    pto.store(out + i, acc)


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_loop_invariants_hoisted_match_numpy(trips):
    n, x = 100, np.random.default_rng(11).random(64, dtype=np.float32)
    ck = pto.compile(invariant_in_loop, args=(dev(x), dev(x), n, trips), block=(64, 1, 1))
    source = ck.executable.variant(True).source
    # `i * 3 < n` before the loop (with the planner, evaluated on the lanes' box: form_cmp)
    test = "form_cmp(" if FAST_PATHS.on else " * "
    assert source.index(test) < source.index("for ")
    out = dev(np.zeros_like(x))
    pto.launch(ck, grid=1, block=64, args=(dev(x), out, n, trips))
    expect = np.zeros_like(x)
    for k in range(trips):
        expect = np.where(np.arange(64) * 3 < n, expect + x * np.float32(k + 1), expect)
    assert np.array_equal(host(out, x), expect.astype(np.float32))


@pto.kernel
def pair_sum(x, out, SHIFT: pto.constexpr, SWAP: pto.constexpr):
    """buf[tid] = buf[tid] - buf[tid + SHIFT] for tid < 8, operands in either order: one ufunc
    over rows (rows_op) when every row is in bounds."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    if tid < 8:
        if SWAP:
            pto.store(buf + tid, pto.load(buf + tid + SHIFT) - pto.load(buf + tid))
        else:
            pto.store(buf + tid, pto.load(buf + tid) - pto.load(buf + tid + SHIFT))
    pto.barrier_block()
    pto.store(out + i, pto.load(buf + tid))


@pytest.mark.parametrize("swap", [False, True])
def test_row_ufunc_matches_numpy_and_reports_overruns(switch, swap):
    blocks = 6
    x = np.random.default_rng(12).random(blocks * BLOCK, dtype=np.float32)
    ck = pto.compile(pair_sum, args=(dev(x), dev(x), 8, swap), block=(BLOCK, 1, 1))
    assert "rows_op" in ck.executable.variant(True).source
    expect = x.reshape(blocks, BLOCK).copy()
    lo, hi = expect[:, :8].copy(), expect[:, 8:16].copy()
    expect[:, :8] = hi - lo if swap else lo - hi
    for on in (True, False):
        switch.on = on
        out = dev(np.zeros_like(x))
        _run(pair_sum, blocks, (dev(x), out, 8, swap))
        assert np.array_equal(host(out, x), expect.reshape(-1)), f"fast paths {on}"
    fast, general = _both(switch, pair_sum, blocks, (dev(x), dev(x), BLOCK - 4, swap))
    assert isinstance(fast, MemoryAccessError) and str(fast) == str(general)
