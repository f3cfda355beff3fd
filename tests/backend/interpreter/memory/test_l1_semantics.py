"""L1, tile instructions, async copies, warp schedules: interpreter semantics (docs/interpreter.md#l1-one-address-space-per-block, docs/interpreter.md#asynchronous-copies)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pypto as pto

BLOCK = 256


@pto.kernel
def pitfall(src, out):
    """The article's third pitfall: barrier() orders only the warp."""
    shared = pto.alloc_local(128)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, pto.load(src + lid))
    pto.barrier()
    pto.store(out + lid, pto.load(shared + lid % 128))


@pto.kernel
def pitfall_fixed(src, out):
    shared = pto.alloc_local(128)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, pto.load(src + lid))
    pto.barrier_block()
    pto.store(out + lid, pto.load(shared + lid % 128))


def _run(kernel, schedule, src, race_check=True):
    d_src = pto.alloc_tensor(src.nbytes)
    d_out = pto.alloc_tensor(BLOCK * 4)
    pto.memcpy_h2d(d_src, src)
    ck = pto.compile(kernel, args=(d_src, d_out), block=BLOCK, schedule=schedule,
                     race_check=race_check, pipeline="")  # dynamic checks only
    ck(grid=1, block=BLOCK, args=(d_src, d_out))
    out = np.empty(BLOCK, np.float32)
    pto.memcpy_d2h(out, d_out)
    return out


def test_lockstep_execution_hides_the_pitfall_without_the_race_detector():
    src = np.arange(128, dtype=np.float32)
    np.testing.assert_array_equal(_run(pitfall, None, src, race_check=False), np.tile(src, 2))


def test_reverse_warp_schedule_exposes_the_pitfall():
    """Warps 4-7 read the L1 buffer before warps 0-3 wrote it: they see the NaN poison."""
    src = np.arange(128, dtype=np.float32)
    out = _run(pitfall, "reverse", src, race_check=False)
    np.testing.assert_array_equal(out[:128], src)
    assert np.isnan(out[128:]).all()


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:1", "random:7"])
def test_barrier_block_fixes_it_under_every_schedule(schedule):
    src = np.arange(128, dtype=np.float32) * 0.5
    np.testing.assert_array_equal(_run(pitfall_fixed, schedule, src), np.tile(src, 2))


def test_unknown_schedule_is_rejected():
    t = pto.alloc_tensor(BLOCK * 4)
    with pytest.raises(ValueError, match="random:SEED"):
        pto.compile(pitfall_fixed, args=(t, t), block=BLOCK, schedule="backwards")


@pto.kernel
def fill_then_read(out, value):
    buf = pto.alloc_local(256)
    pto.fill(buf, value, 256)
    lid = pto.get_local_id()
    pto.store(out + pto.get_global_id(), pto.load(buf + lid) + pto.cast(lid, pto.float32))


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:3"])
def test_tile_instructions_run_once_per_block(run, schedule):
    o = np.zeros(2 * 256, np.float32)
    t = pto.alloc_tensor(o.nbytes)
    ck = pto.compile(fill_then_read, args=(t, 2.5), block=256, schedule=schedule)
    ck(grid=2, block=256, args=(t, 2.5))
    pto.memcpy_d2h(o, t)
    np.testing.assert_array_equal(o, 2.5 + np.tile(np.arange(256, dtype=np.float32), 2))


@pto.kernel
def read_before_wait(src, out):
    buf = pto.alloc_local(64)
    tok = pto.async_load(buf, src, 64 * 4)
    lid = pto.get_local_id()
    v = pto.load(buf + lid)
    pto.wait(tok)
    pto.store(out + lid, v)


def test_reading_an_async_destination_before_wait_names_both_lines():
    t = pto.alloc_tensor(64 * 4)
    pto.memcpy_h2d(t, np.ones(64, np.float32))
    with pytest.raises(pto.BarrierError, match="in flight"):
        pto.compile(read_before_wait, args=(t, t), block=64)
    ck = pto.compile(read_before_wait, args=(t, t), block=64, pipeline="")
    pto.launch(ck, grid=1, block=64, args=(t, t))
    with pytest.raises(pto.RaceError) as info:
        pto.sync()
    text = str(info.value)
    lines, start = inspect.getsourcelines(read_before_wait.fn)
    load_line, async_line = start + 5, start + 3
    assert text.startswith(f"{__file__}:{load_line}:")
    assert f"pto.async_load at {__file__}:{async_line}:" in text
    assert "pto.wait" in text


@pto.kernel
def write_source_before_wait(out):
    buf = pto.alloc_local(64)
    pto.fill(buf, 1.0, 64)
    tok = pto.async_store(out, buf, 64 * 4)
    pto.fill(buf, 2.0, 64)
    pto.wait(tok)


def test_overwriting_an_async_store_source_before_wait_is_a_hazard():
    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.BarrierError):
        pto.compile(write_source_before_wait, args=(t,), block=64)
    ck = pto.compile(write_source_before_wait, args=(t,), block=64, pipeline="")
    pto.launch(ck, grid=1, block=64, args=(t,))
    with pytest.raises(pto.RaceError, match="write of L1 buffer 'buf'"):
        pto.sync()


@pto.kernel
def copies_2d(src, out, K):
    tile = pto.alloc_local(8 * 4)
    tok = pto.async_load(tile, src + 2 * K + 3, 8 * 4 * 4, rows=8, src_stride=K)
    pto.wait(tok)
    lid = pto.get_local_id()
    pto.store(tile + lid, pto.load(tile + lid) * 10.0)
    pto.store(out + K + 1, tile, 8 * 4 * 4, rows=8, dst_stride=K)


def test_strided_2d_copies_move_sub_tiles(run):
    K = 16
    src = np.arange(16 * K, dtype=np.float32)
    out = np.zeros(16 * K, np.float32)
    _, res = run(copies_2d, 1, 32, (src, out, K))
    ref = np.zeros((16, K), np.float32)
    ref.reshape(-1)[K + 1:][: 0] = 0
    s = src.reshape(16, K)
    for r in range(8):
        res_row = res[K + 1 + r * K: K + 1 + r * K + 4]
        np.testing.assert_array_equal(res_row, s[2 + r, 3:7] * 10)
    # nothing else was written
    mask = np.ones(16 * K, bool)
    for r in range(8):
        mask[K + 1 + r * K: K + 1 + r * K + 4] = False
    assert (res[mask] == 0).all()


@pto.kernel
def reads_uninitialised(out):
    buf = pto.alloc_local(64)
    lid = pto.get_local_id()
    if lid < 32:
        pto.store(buf + lid, 1.0)
    pto.barrier_block()
    pto.store(out + lid, pto.load(buf + lid))


def test_uninitialised_l1_is_poison_and_can_be_an_error():
    t = pto.alloc_tensor(64 * 4)
    pto.launch(reads_uninitialised, grid=1, block=64, args=(t,))
    out = np.empty(64, np.float32)
    pto.memcpy_d2h(out, t)
    assert (out[:32] == 1).all() and np.isnan(out[32:]).all()
    ck = pto.compile(reads_uninitialised, args=(t,), block=64, check_uninitialized=True)
    ck(grid=1, block=64, args=(t,))
    with pytest.raises(pto.KernelError, match=r"uninitialised L1: 'buf'\[32\]"):
        pto.sync()


@pto.kernel
def l1_out_of_bounds(out):
    buf = pto.alloc_local(32)
    lid = pto.get_local_id()
    pto.store(buf + lid, 1.0)


def test_l1_out_of_bounds_names_the_buffer_and_bounds():
    t = pto.alloc_tensor(64 * 4)
    pto.launch(l1_out_of_bounds, grid=1, block=64, args=(t,))
    with pytest.raises(pto.MemoryAccessError) as info:
        pto.sync()
    err = info.value
    assert err.address == 32 and err.bounds == (0, 32) and err.lane == (32, 0, 0)
    assert "L1 buffer 'buf'" in str(err)


@pto.kernel
def too_much_l1(out):
    a = pto.alloc_local(40000)
    b = pto.alloc_local(20000)
    pto.fill(a, 0.0, 40000)
    pto.fill(b, 0.0, 20000)
    pto.store(out, a, 4)        # a stays live while b is: pto-allocate-l1 cannot share bytes


def test_exceeding_the_targets_l1_is_a_compile_error():
    t = pto.alloc_tensor(4)
    with pytest.raises(pto.L1CapacityError) as info:
        pto.launch(too_much_l1, grid=1, block=32, args=(t,))
    text = str(info.value)
    # located at the buffer that crosses the limit, names every buffer with its size
    assert text.startswith(f"{__file__}:{too_much_l1.fn.__code__.co_firstlineno + 3}:9:")
    assert "needs 240000 bytes of L1" in text and "196608" in text
    assert "'a' 160000 bytes at offset 0" in text and "'b' 80000 bytes at offset 160000" in text


@pto.kernel
def tile_under_divergence(out, n):
    buf = pto.alloc_local(64)
    if pto.get_local_id() < n:
        pto.fill(buf, 0.0, 64)


@pto.kernel
def tile_under_uniform_if(out, n):
    buf = pto.alloc_local(64)
    if pto.get_block_id() < n:
        pto.fill(buf, 3.0, 64)
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(buf + pto.get_local_id()))


def test_tile_instruction_under_lane_dependent_if_is_a_compile_error():
    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.BarrierError, match="pto.fill is a tile instruction"):
        pto.compile(tile_under_divergence, args=(t, 3), block=64)


def test_tile_instruction_under_block_uniform_if_is_fine(run):
    out = np.zeros(128, np.float32)
    (res,) = run(tile_under_uniform_if, 2, 64, (out, 1))
    assert (res[:64] == 3).all() and np.isnan(res[64:]).all()


def test_lane_dependent_bounds_make_a_simt_loop_but_no_barrier_inside():
    @pto.kernel
    def lane_loop(out):
        acc = 0.0
        for k in range(pto.get_local_id()):
            acc = acc + 1.0
        pto.store(out + pto.get_local_id(), acc)

    @pto.kernel
    def barrier_in_lane_loop(out):
        acc = 0.0
        for k in range(pto.get_local_id()):
            pto.barrier_block()
        pto.store(out + pto.get_local_id(), acc)

    t = pto.alloc_tensor(64 * 4)
    pto.launch(lane_loop, grid=1, block=64, args=(t,))
    out = np.empty(64, np.float32)
    pto.memcpy_d2h(out, t)
    assert (out == np.arange(64)).all()
    with pytest.raises(pto.BarrierError, match="trip count differs between lanes"):
        pto.compile(barrier_in_lane_loop, args=(t,), block=64)


def test_stage_dag_errors_are_compile_errors():
    @pto.kernel
    def unknown_after(out):
        with pto.pipeline() as pl:
            with pl.stage("a", after="nope"):
                pass

    @pto.kernel
    def cycle(out):
        with pto.pipeline() as pl:
            with pl.stage("a", after="a"):
                pass

    t = pto.alloc_tensor(4)
    with pytest.raises(pto.CompileError, match="unknown stage 'nope'"):
        pto.compile(unknown_after, args=(t,), block=32)
    with pytest.raises(pto.CompileError, match="cycle: a -> a"):
        pto.compile(cycle, args=(t,), block=32)


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:5"])
def test_race_detector_reports_the_pitfall_under_every_schedule(schedule):
    """Detection does not depend on the interleaving: it tracks warps and barrier epochs."""
    src = np.arange(128, dtype=np.float32)
    with pytest.raises(pto.RaceError) as info:
        _run(pitfall, schedule, src)
    text = str(info.value)
    lines, start = inspect.getsourcelines(pitfall.fn)
    store_line, load_line = start + 6, start + 8
    # lockstep / in order: the store comes first (RAW); reversed warps read first (WAR)
    kind = "WAR" if schedule == "reverse" else "RAW"
    if schedule and schedule.startswith("random"):
        assert "RAW race" in text or "WAR race" in text
    else:
        assert f"{kind} race on L1 buffer 'shared'" in text
    assert f"test_l1_semantics.py:{store_line}:" in text and "(pto.store)" in text
    assert f"test_l1_semantics.py:{load_line}:" in text and "(pto.load)" in text
    assert "use pto.barrier_block()" in text


def test_race_detector_can_be_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("PYPTO_RACE_CHECK", "0")
    src = np.arange(128, dtype=np.float32)
    d_src, d_out = pto.alloc_tensor(src.nbytes), pto.alloc_tensor(BLOCK * 4)
    pto.memcpy_h2d(d_src, src)
    ck = pto.compile(pitfall, args=(d_src, d_out), block=BLOCK, pipeline="")
    assert ck.executable.race_check is False


@pto.kernel
def war_race(out):
    buf = pto.alloc_local(64)
    lid = pto.get_local_id()
    pto.store(buf + lid, 1.0)
    pto.barrier_block()
    v = pto.load(buf + (lid + 32) % 64)
    pto.store(buf + lid, v + 1.0)
    pto.barrier_block()
    pto.store(out + lid, pto.load(buf + lid))


@pto.kernel
def waw_race(out):
    buf = pto.alloc_local(64)
    lid = pto.get_local_id()
    pto.store(buf + lid % 32, 1.0)


@pto.kernel
def same_warp_exchange(out):
    buf = pto.alloc_local(64)
    lid = pto.get_local_id()
    pto.store(buf + lid, pto.cast(lid, pto.float32))
    pto.barrier()
    pto.store(out + lid, pto.load(buf + (lid ^ 1)))


def test_war_and_waw_races_are_reported():
    t = pto.alloc_tensor(64 * 4)
    for kernel, kind in ((war_race, "WAR"), (waw_race, "WAW")):
        with pytest.raises(pto.BarrierError, match=f"{kind} hazard on L1 buffer 'buf'"):
            pto.compile(kernel, args=(t,), block=64)
        ck = pto.compile(kernel, args=(t,), block=64, pipeline="")
        pto.launch(ck, grid=1, block=64, args=(t,))
        with pytest.raises(pto.RaceError, match=f"{kind} race on L1 buffer 'buf'"):
            pto.sync()


def test_exchanges_within_a_warp_need_only_a_warp_barrier(run):
    (out,) = run(same_warp_exchange, 1, 64, (np.zeros(64, np.float32),))
    np.testing.assert_array_equal(out, (np.arange(64) ^ 1).astype(np.float32))


@pto.kernel
def l1_histogram(x, out, n):
    bins = pto.alloc_local(8, dtype=pto.int32)
    pto.fill(bins, 0, 8)
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(bins + pto.load(x + i) % 8, 1)
    pto.barrier_block()
    lid = pto.get_local_id()
    if lid < 8:
        pto.store(out + pto.get_block_id() * 8 + lid, pto.load(bins + lid))


def test_l1_atomics_stay_in_their_block_when_blocks_run_side_by_side(run):
    """Batch mode keeps one copy of L1 per block: atomics must land in their own block's."""
    n = 64 * 20
    x = np.random.default_rng(0).integers(0, 1000, n).astype(np.int32)
    t = pto.alloc_tensor(x.nbytes, dtype=np.int32)
    assert pto.compile(l1_histogram, args=(t, t, n), block=64).executable.mode == "batch"
    _, out = run(l1_histogram, 20, 64, (x, np.zeros(160, np.int32), n))
    ref = np.stack([np.bincount(x[b * 64:(b + 1) * 64] % 8, minlength=8) for b in range(20)])
    np.testing.assert_array_equal(out, ref.reshape(-1))
