"""Machine facts come from the target file, end to end: a target with 16-lane warps, 512-lane
blocks and 4 KiB of L1 changes warp ids, what counts as a cross-warp exchange (statically and
dynamically), the L1 capacity and the block limit."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.targets import load_target

SMALL = """
name = "small-test"
description = "a test target: 16-lane warps, 4 KiB of L1"
warp_size = 16
max_block_lanes = 512
l1_bytes = 4096
hbm_bytes = 1048576
ai_cores = 2
clock_ghz = 1.0
hbm_bytes_per_cycle = 64
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


@pto.kernel
def ids(w, ln):
    t = pto.get_local_id()
    pto.store(w + t, pto.get_warp_id())
    pto.store(ln + t, pto.get_lane_id())


@pto.kernel
def neighbour_exchange(o):
    """Lane t reads what lane t ^ 16 wrote, ordered only by a warp barrier: inside one warp of
    32, across two warps of 16."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, pto.cast(t, pto.float32))
    pto.barrier()
    pto.store(o + t, pto.load(buf + (t ^ 16)))


@pto.kernel
def big_l1(o):
    buf = pto.alloc_local(2048)  # 8 KiB
    pto.fill(buf, 1.0, 2048)
    pto.store(o, buf, 4)


def _host(t, dtype):
    out = np.empty(t.size, dtype=dtype)
    pto.memcpy_d2h(out, t)
    return out


def test_warp_and_lane_ids_follow_the_targets_warp_size(small):
    w = pto.alloc_tensor(64 * 4, dtype=np.int32)
    ln = pto.alloc_tensor(64 * 4, dtype=np.int32)
    ck = pto.compile(ids, args=(w, ln), block=64, target=small)
    ck(grid=1, block=64, args=(w, ln))
    lanes = np.arange(64)
    np.testing.assert_array_equal(_host(w, np.int32), lanes // 16)
    np.testing.assert_array_equal(_host(ln, np.int32), lanes % 16)
    ck32 = pto.compile(ids, args=(w, ln), block=64)
    ck32(grid=1, block=64, args=(w, ln))
    np.testing.assert_array_equal(_host(w, np.int32), lanes // 32)


def test_a_warp_exchange_becomes_cross_warp_with_16_lane_warps(small):
    o = pto.alloc_tensor(64 * 4)
    # default target: lanes t and t ^ 16 share a warp of 32, the warp barrier orders them
    pto.compile(neighbour_exchange, args=(o,), block=64)(grid=1, block=64, args=(o,))
    np.testing.assert_array_equal(_host(o, np.float32), (np.arange(64) ^ 16).astype(np.float32))
    # 16-lane warps: the static check and the race detector both see a cross-warp exchange
    with pytest.raises(pto.BarrierError, match="warp"):
        pto.compile(neighbour_exchange, args=(o,), block=64, target=small)
    ck = pto.compile(neighbour_exchange, args=(o,), block=64, target=small, pipeline="")
    with pytest.raises(pto.RaceError) as info:
        ck(grid=1, block=64, args=(o,))
        pto.sync()
    assert "(warp 1)" in str(info.value) and "(warp 0)" in str(info.value)
    # ... and under a warp schedule the warps of 16 really run apart
    ck = pto.compile(neighbour_exchange, args=(o,), block=64, target=small, pipeline="",
                     schedule="in_order", race_check=False)
    ck(grid=1, block=64, args=(o,))
    out = _host(o, np.float32)
    assert np.isnan(out[:16]).all()  # warp 0 ran first and read warp 1's slots unwritten
    np.testing.assert_array_equal(out[16:32], np.arange(16, dtype=np.float32))


def test_l1_capacity_and_block_limit_come_from_the_target(small):
    o = pto.alloc_tensor(16)
    pto.compile(big_l1, args=(o,), block=32)  # 8 KiB fit the default 192 KiB
    with pytest.raises(pto.L1CapacityError,
                       match="needs 8192 bytes of L1 .* but the target has 4096"):
        pto.compile(big_l1, args=(o,), block=32, target=small)
    with pytest.raises(pto.LaunchError, match="more than the 512 lanes per block"):
        pto.compile(ids, args=(o, o), block=1024, target=small)
    assert load_target(small).warp_size == 16
