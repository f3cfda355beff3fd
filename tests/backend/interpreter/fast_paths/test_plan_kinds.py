"""Plan kinds added for the users' zoo (plan.py, views.py): each is chosen by the planner (the
generated code or the run time takes it, the general gather / scatter does not run) and gives
the general path's results bit for bit, equal to NumPy.

- induction forms: a value an `scf.for` carries and advances by a loop-invariant step
  (`i = i + stride`, grid-stride loops) is `init + trips * step`;
- block offsets: a bulk copy whose address varies only with the block gets one offset per
  block from its forms (`block_offset`), no per-lane address;
- warp split: forms in the warp and lane numbers that are not the linear local id
  (`red + warp * 32`, `sums + warp`) see a 1-D block's lanes as (warps, lanes in the warp);
  a mask kept to a window of both (`if lane == 0`, `if lane < s`) cuts the view to it, so a
  store whose lanes would collide is a view when the mask keeps them apart;
- row accesses while an async copy is in flight stay rows when they do not touch its bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.lane_memory import LaneMemory
from pypto.backend.interpreter.lanes import LaneContext
from tests.conftest import run_kernel


@pytest.fixture
def fast_paths():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


@pytest.fixture
def general(monkeypatch):
    """Counts the general path's gathers and scatters (LaneMemory.load / store, `ctx.lanes`)."""
    calls = {"load": 0, "store": 0}
    for name in calls:
        orig = getattr(LaneMemory, name)

        def counted(self, *a, _orig=orig, _name=name, **kw):
            calls[_name] += 1
            return _orig(self, *a, **kw)
        monkeypatch.setattr(LaneMemory, name, counted)
    return calls


def both_ways(fast_paths, kernel, grid, block, args, **options):
    outs = {}
    for on in (True, False):
        fast_paths.on = on
        outs[on] = run_kernel(kernel, grid, block, [a.copy() if isinstance(a, np.ndarray) else a
                                                    for a in args], **options)
    fast_paths.on = True
    for a, b in zip(outs[True], outs[False]):
        assert a.tobytes() == b.tobytes()
    return outs[True]


def source(kernel, args, block):
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray) else a
              for a in args]
    ck = pto.compile(kernel, args=device, block=block)
    return ck.executable.variant(isinstance(block, int)).source


# --- induction forms ----------------------------------------------------------------------------

@pto.kernel
def grid_stride(x, y, n, iters, a):
    i = pto.get_global_id()
    stride = pto.get_grid_dim() * pto.get_block_dim()
    for _ in range(iters):
        if i < n:
            pto.store(y + i, pto.load(x + i) * a)
        i = i + stride


@pto.kernel
def carried_varying_step(x, y, n, iters):
    i = pto.get_global_id()
    for k in range(iters):
        if i < n:
            pto.store(y + i, pto.load(x + i))
        i = i + k + 1          # the step changes from trip to trip: no induction form


@pytest.mark.parametrize("n", [4096, 4096 + 77, 100])
def test_grid_stride_loops_are_planned_and_exact(fast_paths, general, n):
    grid, block = 4, 128
    iters = -(-n // (grid * block))
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    src = source(grid_stride, [x, x, n, iters, 1.5], block)
    assert "load_plan(" in src and "store_plan(" in src, src
    assert "_ctx.lanes.load(" not in src and "_ctx.lanes.store(" not in src, src
    fast_paths.on = True
    run_kernel(grid_stride, grid, block, [x, np.zeros_like(x), n, iters, 1.5])
    if n % (grid * block) == 0:
        assert general == {"load": 0, "store": 0}
    _, y = both_ways(fast_paths, grid_stride, grid, block, [x, np.zeros_like(x), n, iters, 1.5])
    np.testing.assert_array_equal(y, x * np.float32(1.5))


def test_a_step_that_changes_per_trip_is_not_an_induction_form(fast_paths):
    n, iters = 3000, 4
    src = source(carried_varying_step, [np.zeros(n, np.float32)] * 2 + [n, iters], 128)
    assert "_ctx.lanes.load(" in src, src
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    _, y = both_ways(fast_paths, carried_varying_step, 2, 128, [x, np.zeros_like(x), n, iters])
    ref = np.zeros_like(x)
    for lane in range(256):
        i = lane
        for k in range(iters):
            if i < n:
                ref[i] = x[i]
            i += k + 1
    np.testing.assert_array_equal(y, ref)


# --- block offsets of bulk copies ---------------------------------------------------------------

T = 64


@pto.kernel
def staged_scale(x, y, ntiles):
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    buf = pto.alloc_local(T)
    for k in range(ntiles):
        tok = pto.async_load(buf, x + base + k * T, T * 4)
        pto.wait(tok)
        pto.store(buf + tid, pto.load(buf + tid) * 2.0)
        pto.barrier_block()
        pto.store(y + base + k * T, buf, T * 4)
        pto.barrier_block()


@pytest.mark.parametrize("schedule", [None, "reverse"])
def test_bulk_copies_take_one_offset_per_block(fast_paths, general, schedule):
    blocks, ntiles = 6, 3
    x = np.random.default_rng(7).random(blocks * ntiles * T, dtype=np.float32)
    src = source(staged_scale, [x, x, ntiles], T)
    assert src.count("_ctx.planned.forms.block_offset(") == 2, src
    options = {"schedule": schedule} if schedule else {}
    fast_paths.on = True
    run_kernel(staged_scale, blocks, T, [x, np.zeros_like(x), ntiles], **options)
    if schedule is None:
        assert general == {"load": 0, "store": 0}  # rows, not gathers, with copies in flight
    _, y = both_ways(fast_paths, staged_scale, blocks, T, [x, np.zeros_like(x), ntiles],
                     **options)
    np.testing.assert_array_equal(y, x * np.float32(2.0))


def test_per_block_copy_offsets_reuse_the_copy_plan(fast_paths, monkeypatch):
    # the copies' one-offset-per-block operands (block_offset) find their batched copy's plan
    # again on the next k step: the blocks' affine grid is not searched for each copy
    from pypto.backend.interpreter.strategies import batch_copy
    blocks, ntiles = 8, 4
    x = np.random.default_rng(8).random(blocks * ntiles * T, dtype=np.float32)
    calls = []
    orig = batch_copy.affine_grid
    monkeypatch.setattr(batch_copy, "affine_grid", lambda starts: calls.append(1) or orig(starts))
    fast_paths.on = True
    (y,) = run_kernel(staged_scale, blocks, T, [x, np.zeros_like(x), ntiles])[1:2]
    assert len(calls) == 2  # the first load and the first store; every later copy: the plan
    np.testing.assert_array_equal(y, x * np.float32(2.0))


@pto.kernel
def read_in_flight(x, y):
    tid = pto.get_local_id()
    a = pto.alloc_local(T)
    b = pto.alloc_local(T)
    pto.store(b + tid, 1.0)
    pto.barrier_block()
    tok = pto.async_load(a, x + pto.get_block_id() * T, T * 4)
    v = pto.load(a + tid)            # still in flight: a hazard
    pto.wait(tok)
    pto.store(y + pto.get_global_id(), v + pto.load(b + tid))


def test_a_row_read_of_bytes_in_flight_is_still_reported(fast_paths):
    # the static check rejects the kernel; without it (pipeline="") the run time reports it
    x = np.zeros(4 * T, np.float32)
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.RaceError) as e:
            run_kernel(read_in_flight, 4, T, [x, np.zeros_like(x)], pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "still in flight" in msgs[0]


# --- warp split and warp windows ---------------------------------------------------------------

@pto.kernel
def warp_sums(x, out, WARPS: pto.constexpr):
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    sums = pto.alloc_local(WARPS)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    pto.barrier()
    s = 16
    for _ in range(5):
        if lane < s:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + s))
        pto.barrier()
        s = s // 2
    if lane == 0:
        pto.store(sums + warp, pto.load(red + warp * 32))
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(sums + warp))


def warp_sums_ref(x: np.ndarray) -> np.ndarray:
    r = x.reshape(-1, 32).copy()
    s = 16
    while s:
        r[:, :s] = r[:, :s] + r[:, s:2 * s]
        s //= 2
    return np.repeat(r[:, 0], 32)


@pytest.mark.parametrize("schedule", [None, "in_order", "random:3"])
def test_warp_and_lane_forms_are_views(fast_paths, general, schedule):
    warps, blocks = 4, 5
    x = np.random.default_rng(11).random(blocks * warps * 32, dtype=np.float32)
    options = {"schedule": schedule} if schedule else {}
    fast_paths.on = True
    run_kernel(warp_sums, blocks, warps * 32, [x, np.zeros_like(x), warps], **options)
    if schedule is None:
        # `red + warp * 32 + lane + s` under `lane < s` and `sums + warp` under `lane == 0`:
        # the masks' warp windows keep the views in bounds and the stores apart
        assert general == {"load": 0, "store": 0}
    _, y = both_ways(fast_paths, warp_sums, blocks, warps * 32, [x, np.zeros_like(x), warps],
                     **options)
    np.testing.assert_array_equal(y, warp_sums_ref(x))


@pto.kernel
def warp_collide(x, out, WARPS: pto.constexpr):
    warp = pto.get_warp_id()
    sums = pto.alloc_local(WARPS)
    pto.store(sums + warp, pto.load(x + pto.get_global_id()))   # 32 lanes, one address
    pto.barrier_block()
    if pto.get_lane_id() == 0:
        pto.store(out + pto.get_block_id() * WARPS + warp, pto.load(sums + warp))


def test_colliding_warp_stores_keep_the_highest_lane(fast_paths):
    warps, blocks = 2, 3
    x = np.random.default_rng(12).random(blocks * warps * 32, dtype=np.float32)
    _, y = both_ways(fast_paths, warp_collide, blocks, warps * 32,
                     [x, np.zeros(blocks * warps, np.float32), warps], race_check=False)
    np.testing.assert_array_equal(y, x.reshape(-1, 32)[:, -1])


# --- an empty plan is the general path ----------------------------------------------------------

PLANNED = ("_s_", "load_rows", "store_rows", "rows_op", "load_plan",
           "store_plan", "form_cmp", "local_cmp", "_ramp_cmp", "_window(", "block_offset")


def test_an_empty_plan_generates_only_the_general_path(fast_paths):
    """With fast paths off (PYPTO_FAST_PATHS=0) no module pattern-matches: the generated code
    of every zoo kernel makes its accesses through the general gather / scatter only, and its
    strategy decisions, which the run time's data-dependent parts read (executor sets them on
    each lane vector), are empty."""
    from tests.kernels.zoo import cases
    seen = 0
    for case in cases("tiny"):
        host = case.inputs(np.random.default_rng(0))
        device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in host.values()]
        args = case.lead + tuple(device) + tuple(case.scalars(host))
        one_d = isinstance(case.grid, int) and isinstance(case.block, int)
        for on in (True, False):
            fast_paths.on = on
            ck = pto.compile(case.kernel, args=args, block=case.block)
            gen = ck.executable.variant(one_d)
            assert bool(gen.decisions) is on
            if not on:
                assert not [p for p in PLANNED if p in gen.source], (case.name, gen.source)
            elif any(p in gen.source for p in PLANNED):
                seen += 1
    assert seen > 20  # and with fast paths on, most kernels are planned


# --- masked copies of data-dependent masks ------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int8,
                                   np.uint16])
@pytest.mark.parametrize("density", [0.02, 0.5, 0.98])
def test_masked_copy_is_copyto_bit_for_bit(dtype, density):
    from pypto.backend.interpreter.structured import masked_copy
    rng = np.random.default_rng(int(density * 100))
    grid = (rng.standard_normal((200, 96)) * 100).astype(dtype)
    if np.dtype(dtype).kind == "f":
        grid[0, 10] = np.nan
        grid[1, 11] = -0.0
    mask = rng.random((200, 64)) < density
    for value in ((rng.standard_normal((200, 64)) * 50), np.float32(2.5), 3):
        want, got = grid.copy(), grid.copy()
        np.copyto(want[:, 10:74], value, casting="unsafe", where=mask)
        masked_copy(got[:, 10:74], value, mask)   # a strided destination
        assert want.tobytes() == got.tobytes()


@pto.kernel
def warp_mirror(x, out, WARPS: pto.constexpr, SYNC: pto.constexpr):
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    if SYNC:
        pto.barrier_block()
    else:
        pto.barrier()          # orders only its own warp: reading another warp's row races
    pto.store(out + pto.get_global_id(), pto.load(red + (WARPS - 1 - warp) * 32 + lane))


def test_races_through_warp_split_views_are_reported_like_the_general_path(fast_paths):
    warps, blocks = 4, 3
    x = np.random.default_rng(13).random(blocks * warps * 32, dtype=np.float32)
    _, y = both_ways(fast_paths, warp_mirror, blocks, warps * 32,
                     [x, np.zeros_like(x), warps, True])
    np.testing.assert_array_equal(y, x.reshape(blocks, warps, 32)[:, ::-1].reshape(-1))
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.RaceError) as e:
            run_kernel(warp_mirror, blocks, warps * 32, [x, np.zeros_like(x), warps, False],
                       pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "RAW race" in msgs[0]


# --- cache-sized lane vectors -------------------------------------------------------------------

@pto.kernel
def bit_count(a, out, n, BITS: pto.constexpr):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        count = 0
        for k in range(BITS):
            count = count + ((x >> k) & 1)
        pto.store(out + i, count)


@pto.kernel
def add_once(x, y, out, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(out + i, pto.load(x + i) + pto.load(y + i))


def _vectors(monkeypatch):
    """Records the length of every lane vector a launch runs."""
    counts = []
    orig = LaneContext.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        counts.append(self.count)
    monkeypatch.setattr(LaneContext, "__init__", init)
    return counts


def test_a_kernel_of_many_passes_runs_on_cache_sized_vectors(fast_paths, monkeypatch):
    from pypto.backend.interpreter.plan import CACHE_LANES
    n = 3 * CACHE_LANES + 77  # a partial last vector, and a partial last block
    rng = np.random.default_rng(3)
    a = rng.integers(-2**31, 2**31, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    grid = (n + 255) // 256
    args = [a, out, n, 32]
    device = [pto.alloc_tensor(x.nbytes, dtype=x.dtype) if isinstance(x, np.ndarray) else x
              for x in args]
    ck = pto.compile(bit_count, args=device, block=256)
    assert ck.executable.variant(True).vector_lanes == CACHE_LANES
    counts = _vectors(monkeypatch)
    got = both_ways(fast_paths, bit_count, grid, 256, args, race_check=True)[1]
    # fast paths on: vectors of CACHE_LANES lanes (whole blocks); off: one vector
    assert counts == [CACHE_LANES] * 3 + [256, grid * 256]
    assert np.array_equal(got, np.bitwise_count(a.view(np.uint32)).astype(np.int32))


def test_a_kernel_of_few_passes_keeps_one_vector(fast_paths, monkeypatch):
    n = 1 << 17
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    device = [pto.alloc_tensor(v.nbytes, dtype=v.dtype) for v in (x, y, x)] + [n]
    ck = pto.compile(add_once, args=device, block=256)
    assert ck.executable.variant(True).vector_lanes is None
    counts = _vectors(monkeypatch)
    got = both_ways(fast_paths, add_once, n // 256, 256, [x, y, np.zeros_like(x), n])[2]
    assert counts == [n, n]
    assert np.array_equal(got, x + y)
    # a grid-stride loop streams other lanes' data every trip: its body counts once
    device = [pto.alloc_tensor(v.nbytes, dtype=v.dtype) for v in (x, y)] + [n, 4, 2.0]
    ck = pto.compile(grid_stride, args=device, block=256)
    assert ck.executable.variant(True).vector_lanes is None


# --- broadcast reads whose blocks agree ----------------------------------------------------------

@pto.kernel
def scale_by_staged(x, taps, y, S):
    tid = pto.get_local_id()
    w = pto.alloc_local(1)
    if tid == 0:
        pto.store(w, pto.load(taps + pto.get_block_id() * S))
    pto.barrier_block()
    pto.store(y + pto.get_global_id(), pto.load(x + pto.get_global_id()) * pto.load(w))


@pytest.mark.parametrize("S,taps", [(0, [2.5]), (1, [2.5] * 8), (1, [0.0, -0.0] * 4),
                                    (1, [np.nan] * 8), (1, [1.0] * 7 + [3.0])])
def test_a_broadcast_read_all_blocks_agree_on_is_one_scalar(fast_paths, monkeypatch, S, taps):
    from pypto.backend.interpreter.strategies import broadcast
    blocks = 8
    x = np.random.default_rng(9).standard_normal(blocks * T).astype(np.float32)
    taps = np.array(taps, np.float32)
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in (x, taps, x)] + [S]
    ck = pto.compile(scale_by_staged, args=device, block=T)
    assert broadcast.Decision in ck.executable.variant(True).decisions
    scalars = []
    orig = broadcast.one_value
    monkeypatch.setattr(broadcast, "one_value",
                        lambda *a: (lambda r: scalars.append(r) or r)(orig(*a)))
    y = both_ways(fast_paths, scale_by_staged, blocks, T, [x, taps, np.zeros_like(x), S])[2]
    per_block = taps[np.arange(blocks) * S]
    agree = len({v.tobytes() for v in per_block}) == 1
    # the read of w (after the staging read of taps, itself a broadcast when S == 0)
    assert (scalars[-1] is not None) == agree
    np.testing.assert_array_equal(y.view(np.uint32),
                                  (x.reshape(blocks, T) * per_block[:, None]).reshape(-1)
                                  .view(np.uint32))


# --- warp windows -------------------------------------------------------------------------------

@pytest.fixture
def warp_windows(monkeypatch):
    """Counts the 2-D lane windows made (windows.WarpWindowContext)."""
    from pypto.backend.interpreter import windows
    made = []
    orig = windows.WarpWindowContext.__init__

    def counted(self, parent, *win):
        made.append(win)
        orig(self, parent, *win)
    monkeypatch.setattr(windows.WarpWindowContext, "__init__", counted)
    return made


@pto.kernel
def warp_tree_rows(x, out, WARPS: pto.constexpr):
    """`if lane < s` with a warp-split address (a view in the window), a block-local row
    address (`buf + tid`, the general path in the window) and a value flowing in and out."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    tid = pto.get_local_id()
    red = pto.alloc_local(WARPS * 32)
    buf = pto.alloc_local(WARPS * 32)
    v = pto.load(x + pto.get_global_id())
    pto.store(red + warp * 32 + lane, v)
    pto.store(buf + tid, v * 2.0)
    pto.barrier()
    s = 16
    w = 0.0
    for _ in range(5):
        if lane < s:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + s))
            pto.store(buf + tid, pto.load(buf + tid) + v)
            w = v + pto.load(buf + tid)
        pto.barrier()
        s = s // 2
    pto.store(out + pto.get_global_id(), pto.load(red + warp * 32) + w)


def warp_tree_rows_ref(x: np.ndarray) -> np.ndarray:
    r = x.reshape(-1, 32).copy()
    b = 2 * r
    w = np.zeros_like(r)
    s = 16
    while s:
        r[:, :s] = r[:, :s] + r[:, s:2 * s]
        b[:, :s] = b[:, :s] + x.reshape(-1, 32)[:, :s]
        w[:, :s] = x.reshape(-1, 32)[:, :s] + b[:, :s]
        s //= 2
    return (np.repeat(r[:, 0], 32).reshape(-1, 32) + w).reshape(-1)


@pytest.mark.parametrize("schedule", [None, "in_order", "random:3"])
def test_lane_masks_run_on_a_warp_window(fast_paths, general, warp_windows, schedule):
    """`if lane < s` keeps lanes 0..s-1 of every warp: too many columns of the block for one
    lane window, a window of warps x lanes in the warp; planned accesses in it are views
    (warps x lanes box), row accesses the general path on the window's ids."""
    warps, blocks = 4, 64
    x = np.random.default_rng(21).random(blocks * warps * 32, dtype=np.float32)
    options = {"schedule": schedule} if schedule else {}
    fast_paths.on = True
    run_kernel(warp_sums, blocks, warps * 32, [x, np.zeros_like(x), warps], **options)
    if schedule is None:
        assert {(0, warps, 0, 16), (0, warps, 0, 1)} <= set(warp_windows)
        assert general == {"load": 0, "store": 0}
    _, y = both_ways(fast_paths, warp_sums, blocks, warps * 32, [x, np.zeros_like(x), warps],
                     **options)
    np.testing.assert_array_equal(y, warp_sums_ref(x))
    _, y = both_ways(fast_paths, warp_tree_rows, blocks, warps * 32,
                     [x, np.zeros_like(x), warps], **options)
    np.testing.assert_array_equal(y, warp_tree_rows_ref(x))


@pto.kernel
def warp_window_race(x, out, WARPS: pto.constexpr):
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    dst = pto.alloc_local(WARPS * 32)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    pto.barrier()                       # orders the warp only
    if lane < 4:                        # reads another warp's row: a race
        pto.store(dst + warp * 32 + lane, pto.load(red + (WARPS - 1 - warp) * 32 + lane))
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(dst + warp * 32 + lane))


@pto.kernel
def warp_window_barrier(x, out):
    lane = pto.get_lane_id()
    if lane < 8:
        pto.barrier()                   # lanes 8..31 of the warp never reach it
    pto.store(out + pto.get_global_id(), pto.load(x + pto.get_global_id()))


@pto.kernel
def warp_window_reads(x, out, WARPS: pto.constexpr):
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    pto.barrier()
    if lane < 4:
        pto.store(red + warp * 32 + lane, pto.load(red + warp * 32 + lane + 4) * 2.0)
    pto.barrier()
    pto.store(out + pto.get_global_id(), pto.load(red + warp * 32 + lane))


def test_races_and_barriers_in_warp_windows_are_reported_like_the_general_path(
        fast_paths, warp_windows):
    warps, blocks = 4, 64
    x = np.random.default_rng(22).random(blocks * warps * 32, dtype=np.float32)
    y = x.reshape(-1, 32).copy()
    y[:, :4] = 2 * y[:, 4:8]
    _, got = both_ways(fast_paths, warp_window_reads, blocks, warps * 32,
                       [x, np.zeros_like(x), warps])
    np.testing.assert_array_equal(got, y.reshape(-1))
    assert warp_windows
    for kernel, args, error, what in (
            (warp_window_race, [x, np.zeros_like(x), warps], pto.RaceError, "RAW race"),
            (warp_window_barrier, [x, np.zeros_like(x)], pto.KernelError, "deadlock")):
        msgs = []
        for on in (True, False):
            fast_paths.on = on
            warp_windows.clear()
            with pytest.raises(error) as e:
                run_kernel(kernel, blocks, warps * 32, args, pipeline="")
            msgs.append(str(e.value).split("pypto: raised")[0])
            assert bool(warp_windows) is on
        assert msgs[0] == msgs[1]
        assert what in msgs[0]


# --- chunked staging of a tile larger than the block ------------------------------------------

@pto.kernel
def staged_tile(x, out, N: pto.constexpr, SYNC: pto.constexpr):
    """2-D blocks of 16 x 4 stage N > 64 elements in chunks of the block's lanes: the last
    chunk's box leaves the buffer, its active lanes (`t < N`) do not."""
    lin = pto.get_local_id(1) * 16 + pto.get_local_id(0)
    b = pto.get_block_id(1) * pto.get_grid_dim(0) + pto.get_block_id(0)
    tile = pto.alloc_local(N)
    pto.store(tile + (N - 1) - lin, -1.0)        # lane 35 (warp 1) writes element N - 36
    if SYNC:
        pto.barrier_block()
    for k in range(0, 2 * 64, 64):
        t = lin + k
        if t < N:                                # lane 0 (warp 0) writes element 64
            pto.store(tile + t, pto.load(x + b * N + t))
    pto.barrier_block()
    pto.store(out + b * 64 + lin, pto.load(tile + lin) + pto.load(tile + lin + (N - 64)))


@pytest.mark.parametrize("schedule", [None, "reverse"])
def test_chunked_staging_scatters_active_lanes(fast_paths, general, schedule):
    n, grid = 100, (4, 3)
    blocks = grid[0] * grid[1]
    x = np.random.default_rng(31).random(blocks * n, dtype=np.float32)
    options = {"schedule": schedule} if schedule else {}
    fast_paths.on = True
    run_kernel(staged_tile, grid, (16, 4), [x, np.zeros(blocks * 64, np.float32), n, True],
               **options)
    if schedule is None:
        assert general["store"] == 0  # the last chunk is a scatter of its active lanes
    _, y = both_ways(fast_paths, staged_tile, grid, (16, 4),
                     [x, np.zeros(blocks * 64, np.float32), n, True], **options)
    t = x.reshape(blocks, n)
    np.testing.assert_array_equal(y, (t[:, :64] + t[:, n - 64:]).reshape(-1))
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.RaceError) as e:
            run_kernel(staged_tile, grid, (16, 4),
                       [x, np.zeros(blocks * 64, np.float32), n, False], pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "WAW race on L1 buffer 'tile' element 64" in msgs[0]


# --- nested windows and barriers in windows -----------------------------------------------------

@pto.kernel
def tree_warp_tail(x, partial, BLOCK: pto.constexpr, CROSS: pto.constexpr):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(CROSS):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if pto.get_warp_id() == 0:            # a window of 32 lanes
        for _ in range(5):
            if tid < s:                   # a window of that window
                pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
            pto.barrier()
            s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


def test_windows_nest(fast_paths, monkeypatch):
    from pypto.backend.interpreter import windows
    from tests.kernels.test_reduction import tree_partials
    made = []
    orig = windows.NestedWindowContext.__init__

    def counted(self, outer, f, l_):
        made.append((outer.first, outer.width, f, l_))
        orig(self, outer, f, l_)
    monkeypatch.setattr(windows.NestedWindowContext, "__init__", counted)
    blocks, lanes = 48, 128
    x = np.random.default_rng(41).random(blocks * lanes, dtype=np.float32)
    _, p = both_ways(fast_paths, tree_warp_tail, blocks, lanes,
                     [x, np.zeros(blocks, np.float32), lanes, 2])
    assert (0, 32, 0, 16) in made and (0, 32, 0, 1) in made
    np.testing.assert_array_equal(p, tree_partials(x, lanes))


@pto.kernel
def barrier_in_window(x, out, CUT: pto.constexpr):
    tid = pto.get_local_id()
    if tid < CUT:
        pto.barrier()                     # lanes CUT..31 of warp 0 never reach it
    pto.store(out + pto.get_global_id(), pto.load(x + pto.get_global_id()))


@pytest.mark.parametrize("cut", [16, 40])
def test_a_barrier_in_a_window_that_cuts_a_warp_deadlocks_as_without_it(fast_paths, cut):
    x = np.zeros(64 * 256, np.float32)
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.KernelError) as e:
            run_kernel(barrier_in_window, 64, 256, [x, np.zeros_like(x), cut], pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert f"deadlock: pto.barrier() is not reached by every lane of the warp (lane ({cut}, 0, 0)" \
        in msgs[0]
    fast_paths.on = True
    _, y = run_kernel(barrier_in_window, 64, 256, [x + 1, np.zeros_like(x), 64])  # whole warps
    np.testing.assert_array_equal(y, x + 1)


# --- planned ufunc stores -----------------------------------------------------------------------

@pto.kernel
def mirror_add(x, out, WARPS: pto.constexpr, SYNC: pto.constexpr):
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    pto.store(red + warp * 32 + lane, pto.load(x + pto.get_global_id()))
    if SYNC:
        pto.barrier_block()
    else:
        pto.barrier()                     # the other warp's row is not ordered: a race
    if lane < 8:
        pto.store(red + warp * 32 + lane,
                  pto.load(red + warp * 32 + lane) *
                  pto.load(red + (WARPS - 1 - warp) * 32 + lane + 8))
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(red + warp * 32 + lane))


def test_planned_ufunc_stores_run_as_one_ufunc(fast_paths, monkeypatch):
    """`p[...] = q[...] op r[...]` through planned views: one ufunc into the stored view
    (views_store.PlannedStores.plan_op), bit-exact both ways, races reported as by the general
    path."""
    from pypto.backend.interpreter import views
    fused = []
    orig = views.PlannedViews.load_plan

    def counted(self, *a, **kw):
        fused.append(a[-2] if len(a) > 3 else None)
        return orig(self, *a, **kw)
    monkeypatch.setattr(views.PlannedViews, "load_plan", counted)
    warps, blocks = 4, 64
    x = np.random.default_rng(51).random(blocks * warps * 32, dtype=np.float32)
    args = [x, np.zeros_like(x), warps, True]
    assert "_ctx.planned.stores.plan_op(" in source(mirror_add, args, warps * 32)
    assert "_ctx.planned.stores.plan_op(" in source(warp_sums, [x, np.zeros_like(x), warps],
                                                   warps * 32)
    fast_paths.on = True
    run_kernel(mirror_add, blocks, warps * 32, args)
    assert len(fused) == 1  # only the last load: the product's operands are views
    _, y = both_ways(fast_paths, mirror_add, blocks, warps * 32, args)
    r = x.reshape(blocks, warps, 32).copy()
    r[:, :, :8] = r[:, :, :8] * r[:, ::-1, 8:16]
    np.testing.assert_array_equal(y, r.reshape(-1))
    _, y = both_ways(fast_paths, warp_sums, blocks, warps * 32, [x, np.zeros_like(x), warps])
    np.testing.assert_array_equal(y, warp_sums_ref(x))
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.RaceError) as e:
            run_kernel(mirror_add, blocks, warps * 32, [x, np.zeros_like(x), warps, False],
                       pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "RAW race" in msgs[0]


# --- comparisons of forms that vary along some axes of the box ---------------------------------

@pto.kernel
def edges2d(x, y, h, w):
    r = pto.get_block_id(1) * 8 + pto.get_local_id(1)
    c = pto.get_block_id(0) * 16 + pto.get_local_id(0)
    v = pto.load(x + r * w + c)
    if r == 0 or c == w - 1 or r + c == 40:   # each varies along some axes of the box only
        v = -v
    pto.store(y + r * w + c, v)


def test_form_compares_on_some_axes_spread_over_the_box(fast_paths):
    h, w = 64, 96
    a = np.random.default_rng(61).random((h, w), dtype=np.float32)
    _, y = both_ways(fast_paths, edges2d, (w // 16, h // 8), (16, 8), [a, np.zeros_like(a), h, w])
    rr, cc = np.indices((h, w))
    want = np.where((rr == 0) | (cc == w - 1) | (rr + cc == 40), -a, a)
    np.testing.assert_array_equal(y, want)
