"""The planner is the only decider (planning.py): per op, the access kind the generated code
takes, read by codegen; the run-time steps of tile instructions and atomics it selects; and the
tail split of a launch whose last block is partial (strategies/tail1d.py `cut`). Every result is
compared with NumPy and with the general path (`FAST_PATHS.on = False`: the empty plan)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import executor as executor_mod
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.strategies import (alias, atomics, base, hoist, lazy_l1,
                                                  merge_sides, planned_view, ramp, rows,
                                                  tail1d, whole_blocks, window)
from pypto.dialects import pto as pto_ops
from tests.conftest import run_kernel
from tests.kernels.test_users_zoo import axpy_tail, gather_idx

BLOCK = 64


@pytest.fixture
def fast_paths():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


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


def variant(kernel, args, block, **options):
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray) else a
              for a in args]
    ck = pto.compile(kernel, args=device, block=block, **options)
    return ck.executable.variant(isinstance(block, int))


def ops_of(plan_part, kind):
    return [op for op in plan_part if isinstance(op, kind)]


# --- the plan: what it decides, and nothing when the fast paths are off -------------------------

@pto.kernel
def saxpy_fma(x, y, a):
    i = pto.get_global_id()
    pto.store(y + i, a * pto.load(x + i) + pto.load(y + i))
    pto.fma(y + i, pto.load(x + i), 1.0, pto.load(y + i))


@pto.kernel
def tree_sum(x, partial):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(6):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def strided_count(x, out, hist, ncols):
    r = pto.get_global_id(1)
    c = pto.get_global_id(0)
    pto.store(out + c * ncols + r, pto.load(x + r * ncols + c))
    pto.atomic_add(hist + (c & 3), 1)


def test_plan_decides_every_path():
    n = 4 * BLOCK
    x = np.arange(n, dtype=np.float32)
    plan = variant(saxpy_fma, (x, x.copy(), 2.0), BLOCK).plan
    # the global id and `x + i`, `y + i` are lane-affine; the store of `a*x + y` computes the
    # addition into the slice; fma(x, 1.0, y) through an affine dst is a slice addition
    assert len(plan.affine) >= 3 and len(plan.ops_with(base.Fused)) == 1
    assert len(plan.ops_with(ramp.StoreOp)) == 1
    assert ops_of(plan.ops_with(ramp.FmaAdd), pto_ops.FmaOp)
    loads = plan.ops_with(ramp.Load)  # loads whose values may be views of memory
    assert loads and all(plan.decision(op, ramp.Load).view for op in loads)
    plan = variant(tree_sum, (x, np.zeros(4, np.float32)), BLOCK).plan
    # rows of L1, windowed `tid < s`
    assert plan.ops_with(rows.RowOp) and plan.ops_with(window.Decision) and plan.local
    assert all(plan.decides(s.Decision) for s in (merge_sides, whole_blocks, lazy_l1))
    side = 8
    xs = np.arange(side * side, dtype=np.float32)
    plan = variant(strided_count, (xs, xs.copy(), np.zeros(4, np.int32), side), (4, 4)).plan
    planned = list(plan.planned)
    assert len(ops_of(planned, pto_ops.LoadOp)) == 1 and len(ops_of(planned, pto_ops.StoreOp)) == 1
    atomic, = ops_of(plan.decisions, pto_ops.AtomicAddOp)  # int32, `old` unused: totals only
    assert plan.decision(atomic, atomics.Decision).totals_only
    assert [op for op, ds in plan.decisions.items()
            if any(isinstance(d, atomics.Decision) for d in ds)] == \
        ops_of(plan.decisions, pto_ops.AtomicAddOp)  # the atomic, and nothing else


def test_empty_plan_is_the_general_path(fast_paths):
    fast_paths.on = False
    n = 4 * BLOCK
    x = np.arange(n, dtype=np.float32)
    for kernel, args, block in ((saxpy_fma, (x, x.copy(), 2.0), BLOCK),
                                (tree_sum, (x, np.zeros(4, np.float32)), BLOCK),
                                (strided_count, (x[:64], x[:64].copy(), np.zeros(4, np.int32),
                                                 8), (4, 4))):
        gen = variant(kernel, args, block)
        plan = gen.plan
        assert not (plan.affine or plan.planned or plan.decisions or plan.tail_bounds)
        assert plan.decisions == {} and gen.decisions == {} and plan.vector_lanes is None
        assert not any(plan.decides(kind) for kind in (
            ramp.Decision, rows.Decision, window.Decision, planned_view.Decision,
            tail1d.Decision, hoist.Decision, alias.Decision, base.Fused))
        for call in ("_s_ramp.", "load_rows", "rows_op", "load_plan",
                     "store_plan", "form_cmp", "_ramp_cmp"):
            assert call not in gen.source


def test_steps_select_run_time_paths(fast_paths):
    """The plan's steps gate the run-time shortcuts: integer atomics give the same totals and
    `old` values with the steps (fast paths on) and without (off)."""
    @pto.kernel
    def bins(keys, hist, olds):
        i = pto.get_global_id()
        old = pto.atomic_add(hist + pto.load(keys + i), 1)
        pto.store(olds + i, old)

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 16, 4 * BLOCK).astype(np.int32)
    hist, olds = both_ways(fast_paths, bins, 4, BLOCK,
                           [keys, np.zeros(16, np.int32), np.zeros(4 * BLOCK, np.int32)])[1:]
    np.testing.assert_array_equal(hist, np.bincount(keys, minlength=16))
    # lane order: each lane sees how many lower lanes hit its key before it
    expect = np.array([(keys[:k] == keys[k]).sum() for k in range(keys.size)], np.int32)
    np.testing.assert_array_equal(olds, expect)


# --- tails: the whole blocks on the fast plan, the partial block apart -------------------------

@pytest.fixture
def vectors(monkeypatch):
    """Records the lane vectors (first lane, count) the tail split gives, and for each vector
    ran whether its planned slices ran without a mask."""
    seen = {"split": [], "masked": []}
    monkeypatch.setattr(tail1d, "TAIL_SPLIT_MIN_LANES", 0)  # small launches cut too
    orig = tail1d.cut

    def split(*a, **kw):
        out = orig(*a, **kw)
        seen["split"].append(out)
        return out
    monkeypatch.setattr(tail1d, "cut", split)
    orig_load = ramp.load_ramp

    def load_ramp(ctx, buf, base, mask, *a, **kw):
        seen["masked"].append((ctx.first_lane, ctx.count, mask is not None))
        return orig_load(ctx, buf, base, mask, *a, **kw)
    monkeypatch.setattr(ramp, "load_ramp", load_ramp)
    return seen


@pytest.mark.parametrize("n", [2**12 + 77, 2**12 + 256, 2**12 + 1, 77])
def test_axpy_tail_splits_at_the_partial_block(fast_paths, vectors, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    grid = (n + 255) // 256
    gen = variant(axpy_tail, (x, y, n, 0.75), 256)
    assert gen.tail_bounds == (tail1d.Decision(2, 0),)  # `i < n`, n the third argument
    out = both_ways(fast_paths, axpy_tail, grid, 256, [x, y, n, 0.75])[1]
    assert out.tobytes() == (np.float32(0.75) * x + y).tobytes()
    full = n - n % 256
    split = vectors["split"][0]
    assert split == ([(0, full)] if n % 256 == 0 else
                     [(0, full), (full, 256)] if full else [(0, 256)])
    # the whole blocks ran unmasked (slices), the partial block masked
    for first, count, masked in vectors["masked"][:4]:
        assert masked == (first >= full)


def test_gather_tail_and_varying_n_on_a_cached_shape(fast_paths, vectors):
    rng = np.random.default_rng(5)
    size = 2**12 + 77
    x = rng.standard_normal(size).astype(np.float32)
    idx = rng.integers(0, size, size).astype(np.int32)
    grid = (size + 255) // 256
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in (x, idx, x)]
    ck = pto.compile(gather_idx, args=(*device, size), block=256)
    pto.memcpy_h2d(device[0], x)
    pto.memcpy_h2d(device[1], idx)
    for n in (size, size - 100, size - 77, 300):  # one launch shape, n varies
        y = np.zeros(size, np.float32)
        pto.memcpy_h2d(device[2], y)
        pto.launch(ck, grid=grid, block=256, args=(*device, n))
        got = np.empty_like(y)
        pto.memcpy_d2h(got, device[2])
        expect = np.zeros(size, np.float32)
        expect[:n] = x[idx[:n]]
        assert got.tobytes() == expect.tobytes()
    assert len(vectors["split"]) == 4
    for t in device:
        t.free()
    assert vectors["split"][-1] == [(0, 256), (256, 256), (512, grid * 256 - 512)]
    out = both_ways(fast_paths, gather_idx, grid, 256, [x, idx, np.zeros(size, np.float32),
                                                        size - 100])[2]
    expect = np.zeros(size, np.float32)
    expect[:size - 100] = x[idx[:size - 100]]
    assert out.tobytes() == expect.tobytes()


@pto.kernel
def guarded_forms(x, y, n, last):
    i = pto.get_block_id() * pto.get_block_dim() + pto.get_local_id()
    if n > i:                       # the flipped test
        pto.store(y + i, pto.load(x + i) * 2.0)
    if i <= last:                   # `<=`: the bound is last + 1
        pto.store(y + i, pto.load(y + i) + 1.0)


def test_flipped_and_inclusive_guards(fast_paths, vectors):
    n = 1000
    x = np.arange(1024, dtype=np.float32)
    gen = variant(guarded_forms, (x, x.copy(), n, n - 1), 128)
    assert gen.tail_bounds == (tail1d.Decision(2, 0), tail1d.Decision(3, 1))
    out = both_ways(fast_paths, guarded_forms, 8, 128, [x, np.zeros(1024, np.float32), n,
                                                         n - 1])[1]
    expect = np.zeros(1024, np.float32)
    expect[:n] = x[:n] * np.float32(2.0) + np.float32(1.0)
    assert out.tobytes() == expect.tobytes()
    assert vectors["split"][0] == [(0, 896), (896, 128)]


@pto.kernel
def tree_sum_tail(x, partial, n):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(6):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


def tree_ref(x: np.ndarray, blocks: int) -> np.ndarray:
    v = np.zeros(blocks * BLOCK, np.float32)
    v[:x.size] = x
    v = v.reshape(blocks, BLOCK)
    s = BLOCK // 2
    while s:
        v[:, :s] = v[:, :s] + v[:, s:2 * s]
        s //= 2
    return v[:, 0].copy()


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:7"])
def test_batch_mode_tail_with_l1(fast_paths, schedule):
    n = 40 * BLOCK + 13
    blocks = 41
    x = np.random.default_rng(9).standard_normal(n).astype(np.float32)
    options = {"schedule": schedule} if schedule else {}
    out = both_ways(fast_paths, tree_sum_tail, blocks, BLOCK,
                    [x, np.zeros(blocks, np.float32), n], **options)[1]
    assert out.tobytes() == tree_ref(x, blocks).tobytes()


def test_tail_split_across_chunks(fast_paths, vectors, monkeypatch):
    """A launch of several chunks (GRID_CHUNK_LANES): only the chunk holding the bound is cut."""
    monkeypatch.setattr(executor_mod, "GRID_CHUNK_LANES", 1024)
    n = 3000
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = both_ways(fast_paths, axpy_tail, 12, 256, [x, y, n, 0.75])[1]
    assert out.tobytes() == (np.float32(0.75) * x + y).tobytes()
    assert vectors["split"][0] == [(0, 1024), (1024, 1024), (2048, 768), (2816, 256)]


@pto.kernel
def unguarded(x, y):
    i = pto.get_global_id()
    pto.store(y + i, pto.load(x + i) + 1.0)


def test_no_guard_no_split(fast_paths, vectors):
    x = np.arange(7 * 256, dtype=np.float32)
    assert variant(unguarded, (x, x.copy()), 256).tail_bounds == ()
    out = both_ways(fast_paths, unguarded, 7, 256, [x, np.zeros_like(x)])[1]
    assert out.tobytes() == (x + np.float32(1.0)).tobytes()
    assert vectors["split"] == []


@pto.kernel
def early_return(data, bins, olds, n, nbins):
    i = pto.get_global_id()
    if i >= n:
        return
    old = pto.atomic_add(bins + pto.load(data + i) % nbins, 1)
    pto.store(olds + i, old)


def test_early_return_guard_is_a_tail_bound(fast_paths, vectors):
    """`if i >= n: return` (no `if i < n` around the work) marks the tail the same way."""
    n, nbins = 5 * 256 + 77, 16
    data = np.random.default_rng(2).integers(-1000, 1000, n).astype(np.int32)
    assert variant(early_return, (data, np.zeros(nbins, np.int32), np.zeros(n, np.int32), n,
                                  nbins), 256).tail_bounds == (tail1d.Decision(3, 0),)
    bins, olds = both_ways(fast_paths, early_return, 6, 256,
                           [data, np.zeros(nbins, np.int32), np.zeros(n, np.int32), n,
                            nbins])[1:]
    keys = data % nbins
    np.testing.assert_array_equal(bins, np.bincount(keys, minlength=nbins))
    expect = np.array([(keys[:k] == keys[k]).sum() for k in range(n)], np.int32)
    np.testing.assert_array_equal(olds, expect)
    assert vectors["split"][0] == [(0, 5 * 256), (5 * 256, 256)]


def test_small_launches_are_not_cut(fast_paths, monkeypatch):
    """Below TAIL_SPLIT_MIN_LANES whole-block lanes one more vector costs more than the mask."""
    seen = []
    orig = tail1d.cut

    def split(*a, **kw):
        seen.append(orig(*a, **kw))
        return seen[-1]
    monkeypatch.setattr(tail1d, "cut", split)
    for n, expect in ((2**12 + 77, [(0, 2**12 + 256)]),
                      (2**14 + 77, [(0, 2**14), (2**14, 256)])):
        rng = np.random.default_rng(n)
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        out = both_ways(fast_paths, axpy_tail, (n + 255) // 256, 256, [x, y, n, 0.75])[1]
        assert out.tobytes() == (np.float32(0.75) * x + y).tobytes()
        assert seen[-1] == expect
