"""Hand-written double buffering, Ascend C style (CopyIn / Compute / CopyOut per tile).

Each block streams `ntiles` tiles of T elements: the async load of tile k+1 (into the other L1
buffer) is issued before tile k is computed, the token is carried to the next iteration, and the
result tile leaves through a synchronous tile store. Ping-pong is chosen by a uniform `if` on the
iteration's parity, so the tile instructions stay in uniform control flow. Results are exact
(`x * 3`); forgetting the wait is a RaceError.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto

T = 256


@pto.kernel
def scale_double_buffered(x, y, ntiles, WAIT: pto.constexpr):
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    ping = pto.alloc_local(T)
    pong = pto.alloc_local(T)
    out = pto.alloc_local(T)
    tok = pto.async_load(ping, x + base, T * 4)           # prologue: tile 0
    for k in range(ntiles):
        nxt = tok
        if k % 2 == 0:
            if k + 1 < ntiles:                             # prefetch tile k+1
                nxt = pto.async_load(pong, x + base + (k + 1) * T, T * 4)
            if WAIT:
                pto.wait(tok)
            pto.store(out + tid, pto.load(ping + tid) * 3.0)
        else:
            if k + 1 < ntiles:
                nxt = pto.async_load(ping, x + base + (k + 1) * T, T * 4)
            if WAIT:
                pto.wait(tok)
            pto.store(out + tid, pto.load(pong + tid) * 3.0)
        pto.barrier_block()
        pto.store(y + base + k * T, out, T * 4)           # CopyOut
        pto.barrier_block()
        tok = nxt
    pto.wait_all()


@pytest.mark.parametrize("ntiles,blocks", [(1, 1), (2, 3), (5, 2)])
def test_double_buffered_stream(run, ntiles, blocks):
    x = np.random.default_rng(ntiles).standard_normal(blocks * ntiles * T).astype(np.float32)
    _, y = run(scale_double_buffered, blocks, T, (x, np.zeros_like(x), ntiles, True))
    np.testing.assert_array_equal(y, x * np.float32(3))


def test_double_buffered_stream_under_other_warp_orders(run_scheduled):
    x = np.random.default_rng(9).standard_normal(2 * 4 * T).astype(np.float32)
    _, y = run_scheduled(scale_double_buffered, 2, T, (x, np.zeros_like(x), 4, True))
    np.testing.assert_array_equal(y, x * np.float32(3))


def test_reading_the_prefetched_tile_without_waiting_is_a_race(run_racy):
    x = np.ones(3 * T, np.float32)
    with pytest.raises(pto.RaceError, match="still in flight"):
        run_racy(scale_double_buffered, 1, T, (x, np.zeros_like(x), 3, False))
