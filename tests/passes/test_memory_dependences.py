"""Passes that move memory operations respect dependences through memory (issue 17).

`pto-double-buffer` issues a later iteration's loads before this iteration's compute;
`npu-fuse-load-mma` moves a copy down to the MMA it feeds. Both ask the one alias query of
`pypto.analysis.alias` and leave the program alone when a move may change a result. Every case
here is run with `pipeline=""` (no pass at all: the reference) and compared bit for bit at every
level (pto, npu, fused), under every warp schedule, through `pto.profile` (both models) and the
debugger; a few are also checked against NumPy directly.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg
from pypto.compiler import DEFAULT_PIPELINE
from tests.conftest import from_device, run_kernel, to_device
from tests.kernels.conftest import NPU_PIPELINE, same_bits

FUSED = f"{DEFAULT_PIPELINE},convert-pto-to-npu,npu-fuse-load-mma"
LEVELS = {"pto": None, "npu": NPU_PIPELINE, "fused": FUSED}
SCHEDULES = [None, "in_order", "reverse", "random:3"]


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


def make_chain(dist: int):
    """x[k + dist] = 2 * x[k], tile by tile: a recurrence through HBM at distance `dist` (a
    closed-over constant, folded in at compile time)."""

    @pto.kernel
    def chain(x, ntiles):
        tid = pto.get_local_id()
        for k in range(ntiles):
            with pto.pipeline() as pl:
                with pl.stage("load"):
                    tile = pto.alloc_local(64)
                    tok = pto.async_load(tile, x + k * 64, 64 * 4)
                with pl.stage("compute", after="load"):
                    pto.wait(tok)
                    pto.store(x + (k + dist) * 64 + tid, pto.load(tile + tid) * 2.0)

    return chain


CHAINS = {d: make_chain(d) for d in (1, 2, 3)}


@pto.kernel
def chain_runtime(x, ntiles, dist):
    """The same with the distance a run-time value: nothing can be proven."""
    tid = pto.get_local_id()
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                tile = pto.alloc_local(64)
                tok = pto.async_load(tile, x + k * 64, 64 * 4)
            with pl.stage("compute", after="load"):
                pto.wait(tok)
                pto.store(x + (k + dist) * 64 + tid, pto.load(tile + tid) * 2.0)


@pto.kernel
def in_place(x, ntiles):
    """x[k] = 2 * x[k] + 1, tile by tile: no dependence between iterations."""
    tid = pto.get_local_id()
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                tile = pto.alloc_local(64)
                tok = pto.async_load(tile, x + k * 64, 64 * 4)
            with pl.stage("compute", after="load"):
                pto.wait(tok)
                pto.store(x + (k * 64 + tid), pto.load(tile + tid) * 2.0 + 1.0)


@pto.kernel
def scale(x, y, ntiles):
    """y[k] = 3 * x[k]: reads one tensor, writes another (they overlap only if the same
    tensor is passed twice)."""
    tid = pto.get_local_id()
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                tile = pto.alloc_local(64)
                tok = pto.async_load(tile, x + 64 + k * 64, 64 * 4)
            with pl.stage("compute", after="load"):
                pto.wait(tok)
                pto.store(y + k * 64 + tid, pto.load(tile + tid) * 3.0)


@pto.kernel
def fuse_if(x, y, n):
    C = pto.alloc_local(16)
    pto.fill(C, 0.0, 16)
    B = pto.alloc_local(16)
    pto.fill(B, 1.0, 16)
    with pto.pipeline() as pl:
        with pl.stage("ld"):
            A = pto.alloc_local(16)
            pto.fill(A, 2.0, 16)
            if n > 5:
                tok = pto.async_load(A, x, 16 * 4)
                pto.wait(tok)
        with pl.stage("mm", after="ld"):
            pto.mma(C, A, B, 4, 4, 4)
    pto.store(y, C, 16 * 4)


@pto.kernel
def fuse_for(x, y, n):
    C = pto.alloc_local(16)
    pto.fill(C, 0.0, 16)
    B = pto.alloc_local(16)
    pto.fill(B, 1.0, 16)
    with pto.pipeline() as pl:
        with pl.stage("ld"):
            A = pto.alloc_local(16)
            pto.fill(A, 2.0, 16)
            for j in range(n):
                tok = pto.async_load(A, x + j * 16, 16 * 4)
                pto.wait(tok)
        with pl.stage("mm", after="ld"):
            pto.mma(C, A, B, 4, 4, 4)
    pto.store(y, C, 16 * 4)


def make_fuse_overlap(off: int | None):
    """Load A from x, wait, then part of A (from element `off`) from z, then C = A @ B: the
    first copy must not be moved below the second. `off=None`: a run-time offset."""

    if off is None:
        @pto.kernel
        def fuse_overlap(x, z, y, n):
            C = pto.alloc_local(16)
            pto.fill(C, 0.0, 16)
            B = pto.alloc_local(16)
            pto.fill(B, 1.0, 16)
            A = pto.alloc_local(24)
            t1 = pto.async_load(A, x, 16 * 4)
            pto.wait(t1)
            t2 = pto.async_load(A + n, z, 8 * 4)
            pto.wait(t2)
            pto.mma(C, A, B, 4, 4, 4)
            pto.store(y, C, 16 * 4)
    else:
        @pto.kernel
        def fuse_overlap(x, z, y, n):
            C = pto.alloc_local(16)
            pto.fill(C, 0.0, 16)
            B = pto.alloc_local(16)
            pto.fill(B, 1.0, 16)
            A = pto.alloc_local(24)
            t1 = pto.async_load(A, x, 16 * 4)
            pto.wait(t1)
            t2 = pto.async_load(A + off, z, 8 * 4)
            pto.wait(t2)
            pto.mma(C, A, B, 4, 4, 4)
            pto.store(y, C, 16 * 4)

    return fuse_overlap


# --------------------------------------------------------------------------------------------
# Running one case every way
# --------------------------------------------------------------------------------------------


def _run(kernel, args, *, pipeline=None, schedule=None, target=None, block=64):
    options = {"pipeline": pipeline}
    if schedule is not None:
        options["schedule"] = schedule
    if target is not None:
        options["target"] = target
    return run_kernel(kernel, 1, block, args, **options)


def _profiled(kernel, args, model, target=None, block=64):
    device_args, tensors = to_device(args)
    pto.profile(kernel, grid=1, block=block, args=device_args, model=model, target=target)
    return from_device(tensors)


def _debugged(kernel, args, target=None, block=64):
    device_args, tensors = to_device(args)
    session = dbg.debug_kernel(kernel, device_args, grid=1, block=block, target=target,
                               out=open("/dev/null", "w"))
    session.continue_()
    assert session.finished
    return from_device(tensors)


def _every_way(kernel, args, *, target=None, block=64):
    """Every level, schedule, model and the debugger give the `pipeline=""` result."""
    reference = _run(kernel, args, pipeline="", target=target, block=block)
    for level, pipeline in LEVELS.items():
        for schedule in SCHEDULES:
            got = _run(kernel, args, pipeline=pipeline, schedule=schedule, target=target,
                       block=block)
            for r, g in zip(reference, got):
                assert same_bits(r, g), (level, schedule)
    for model in ("fused", "table"):
        for r, g in zip(reference, _profiled(kernel, args, model, target, block)):
            assert same_bits(r, g), model
    for r, g in zip(reference, _debugged(kernel, args, target, block)):
        assert same_bits(r, g), "debugger"
    return reference


# --------------------------------------------------------------------------------------------
# pto-double-buffer: dependences through HBM
# --------------------------------------------------------------------------------------------


def _tiles(ntiles: int) -> np.ndarray:
    return np.array([1.0] * 64 + [0.0] * 64 * ntiles, np.float32)


@pytest.mark.parametrize("dist", [1, 2])
@pytest.mark.parametrize("ntiles", [0, 1, 2, 4])
def test_hbm_recurrence_keeps_its_results(dist, ntiles):
    x = _tiles(ntiles + dist)
    (out,) = _every_way(CHAINS[dist], (x, ntiles))[:1]
    expect = x.copy().reshape(-1, 64)
    for k in range(ntiles):
        expect[k + dist] = expect[k] * 2
    np.testing.assert_array_equal(out.reshape(-1, 64), expect)


@pytest.mark.parametrize("dist", [1, 2])
def test_run_time_distance_is_not_double_buffered(dist):
    x = _tiles(4 + dist)
    (out,) = _every_way(chain_runtime, (x, 4, dist))[:1]
    expect = x.copy().reshape(-1, 64)
    for k in range(4):
        expect[k + dist] = expect[k] * 2
    np.testing.assert_array_equal(out.reshape(-1, 64), expect)
    ck = pto.compile(chain_runtime, args=to_device((x, 4, dist))[0], block=64)
    assert any("dependence through memory" in str(r) for r in ck.remarks), ck.remarks


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("dist", [1, 2, 3])
def test_recurrence_distance_bounds_the_stages(stages, dist):
    chain = CHAINS[dist]
    x = _tiles(6 + dist)
    reference = _run(chain, (x, 6), pipeline="")
    pipeline = f"pto-double-buffer{{stages={stages}}},pto-allocate-l1"
    got = _run(chain, (x, 6), pipeline=pipeline)
    assert same_bits(reference[0], got[0])
    ck = pto.compile(chain, args=to_device((x, 6))[0], block=64, pipeline=pipeline)
    remarks = " ".join(str(r) for r in ck.remarks)
    if dist == 1:
        assert "dependence through memory" in remarks and "slots" not in remarks
    elif stages - 1 < dist:
        assert f"{stages} slots" in remarks  # prefetching less far than the recurrence: fine
    else:
        assert f"{dist} slots" in remarks and "dependence through memory" in remarks


def test_the_issue_kernel_under_the_default_pipeline():
    x = _tiles(4)
    (out,) = _run(CHAINS[1], (x, 4))[:1]
    np.testing.assert_array_equal(out.reshape(5, 64)[:, 0], [1, 2, 4, 8, 16])


@pytest.mark.parametrize("ntiles", [0, 1, 3])
def test_in_place_update_is_still_double_buffered(ntiles):
    x = np.arange(64 * (ntiles + 1), dtype=np.float32)
    (out,) = _every_way(in_place, (x, ntiles))[:1]
    expect = x.copy()
    expect[:64 * ntiles] = expect[:64 * ntiles] * 2 + 1
    np.testing.assert_array_equal(out, expect)
    d = to_device((x, ntiles))[0]
    ck = pto.compile(in_place, args=d, block=64)
    assert any("2 slots" in str(r) for r in ck.remarks), ck.remarks


def test_in_place_update_with_a_block_wider_than_a_tile_is_refused():
    # lanes 64..127 write the next tile, which the prefetch reads: a real dependence
    x = np.arange(64 * 5, dtype=np.float32)
    d = to_device((x, 4))[0]
    ck = pto.compile(in_place, args=d, block=128)
    assert any("dependence through memory" in str(r) for r in ck.remarks), ck.remarks


def test_distinct_tensors_are_double_buffered_and_the_same_tensor_twice_is_not():
    x = np.arange(64 * 5, dtype=np.float32)
    y = np.zeros(64 * 4, np.float32)
    out = _every_way(scale, (x, y, 4))
    np.testing.assert_array_equal(out[1], x[64:] * 3)
    devs = to_device((x, y, 4))[0]
    ck = pto.compile(scale, args=devs, block=64)
    assert any("2 slots" in str(r) for r in ck.remarks), ck.remarks
    # the same tensor as x and y: y[k] = 3 * x[k + 1] reads what iteration k + 1 writes? No:
    # iteration k writes tile k and reads tile k + 1, which the prefetch reads before
    # iteration k + 1 writes it... but tile k + 1 is written by iteration k + 1 *after* the
    # prefetch of k + 1 and read by iteration k's prefetch of k + 2: the pass cannot tell,
    # so it must refuse, and the result must be the sequential one.
    d = devs[0]
    same = (d, d, 4)
    ck2 = pto.compile(scale, args=same, block=64)
    assert any("dependence through memory" in str(r) for r in ck2.remarks), ck2.remarks
    expect = x.copy()
    for k in range(4):
        expect[k * 64:(k + 1) * 64] = expect[64 + k * 64: 128 + k * 64] * 3
    ck2(grid=1, block=64, args=same)
    got = np.empty_like(x)
    pto.memcpy_d2h(got, d)
    np.testing.assert_array_equal(got, expect)


# --------------------------------------------------------------------------------------------
# npu-fuse-load-mma: copies under control flow and overlapping copies
# --------------------------------------------------------------------------------------------


def _mma_reference(a: np.ndarray) -> np.ndarray:
    return (a.reshape(4, 4).astype(np.float32) @ np.ones((4, 4), np.float32)).ravel()


@pytest.mark.parametrize("n", [0, 3, 6, 10])
def test_copy_under_a_branch_is_not_fused(n):
    x = np.arange(16, dtype=np.float32) * 10
    out = _every_way(fuse_if, (x, np.zeros(16, np.float32), n))
    a = x if n > 5 else np.full(16, 2.0, np.float32)
    np.testing.assert_array_equal(out[1], _mma_reference(a))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_copy_in_a_loop_is_not_fused(n):
    x = np.arange(32, dtype=np.float32) * 10
    out = _every_way(fuse_for, (x, np.zeros(16, np.float32), n))
    a = x[(n - 1) * 16:n * 16] if n else np.full(16, 2.0, np.float32)
    np.testing.assert_array_equal(out[1], _mma_reference(a))


@pytest.fixture
def far_fusion(tmp_path):
    path = tmp_path / "far.toml"
    path.write_text('[fusion]\npairs = [["npu.copy_in", "npu.mma"]]\nmax_distance = 8\n')
    return str(path)


@pytest.mark.parametrize("runtime", [False, True])
@pytest.mark.parametrize("off", [0, 4, 8, 12, 15, 16])
def test_copy_is_not_moved_past_an_overlapping_copy(off, runtime, far_fusion):
    x = np.arange(16, dtype=np.float32) * 10
    z = np.full(8, 100.0, np.float32)
    kernel = make_fuse_overlap(None if runtime else off)
    out = _every_way(kernel, (x, z, np.zeros(16, np.float32), off), target=far_fusion)
    a = np.concatenate([x, np.full(8, np.nan, np.float32)])
    a[off:off + 8] = z
    np.testing.assert_array_equal(out[2], _mma_reference(a[:16]))


def _fused(kernel, off, target):
    from pypto.dialects import npu

    devs = to_device((np.zeros(16, np.float32), np.zeros(8, np.float32),
                      np.zeros(16, np.float32), off))[0]
    ck = pto.compile(kernel, args=devs, block=64, pipeline=FUSED, target=target)
    return [op for op in ck.func.walk() if isinstance(op, npu.LoadMmaOp)], ck.remarks


def test_disjoint_copy_still_lets_the_load_fuse(far_fusion):
    fused, _ = _fused(make_fuse_overlap(16), 16, far_fusion)
    assert len(fused) == 1
    fused, remarks = _fused(make_fuse_overlap(8), 8, far_fusion)
    assert not fused
    assert any("may touch" in str(r) for r in remarks), remarks
    fused, remarks = _fused(make_fuse_overlap(None), 16, far_fusion)  # not provable
    assert not fused
