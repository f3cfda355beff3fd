"""`pto.barrier()` reached by part of a warp is a deadlock; reached by whole warps it is fine.

Checked for blocks made of whole warps (one row per warp) and for blocks whose last warp is
partial (48 lanes: a warp of 32 and one of 16), several blocks per lane vector (batch mode).
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def warp_barrier_if(out, CUT: pto.constexpr, WARPS_ONLY: pto.constexpr):
    tid = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + tid, 1.0)
    pto.barrier_block()
    if WARPS_ONLY:
        if pto.get_warp_id() == 0:
            pto.barrier()
    else:
        if pto.get_lane_id() < CUT:
            pto.barrier()
    pto.store(out + pto.get_global_id(), pto.load(buf + tid))


def launch(block: int, cut: int, warps_only: bool) -> np.ndarray:
    grid = 4
    out = pto.alloc_tensor(grid * block * 4)
    kernel = pto.compile(warp_barrier_if, args=(out, cut, warps_only), block=block, pipeline="")
    pto.launch(kernel, grid=grid, block=block, args=(out, cut, warps_only))
    host = np.empty(grid * block, np.float32)
    pto.memcpy_d2h(host, out)
    return host


@pytest.mark.parametrize("block", [64, 48])
def test_whole_warps_at_the_barrier_run(block):
    assert np.all(launch(block, 0, True) == 1.0)


@pytest.mark.parametrize("block,cut", [(64, 16), (48, 8), (48, 20)])
def test_part_of_a_warp_at_the_barrier_is_a_deadlock(block, cut):
    with pytest.raises(pto.DeadlockError, match=r"pto\.barrier\(\)"):
        launch(block, cut, False)
