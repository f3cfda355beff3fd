"""A warp barrier some lanes of the warp skip is a deadlock under every warp schedule.

A regression test for a defect a new user hit (issue 8), kept next to its feature. Expected
values are worked out by hand with exact arithmetic (see each docstring), never taken from the
implementation.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel


@pto.kernel
def half_warp_barrier(o):
    i = pto.get_global_id()
    if pto.get_lane_id() < 16:
        pto.barrier()
    pto.store(o + i, 1.0)


@pto.kernel
def one_warp_barrier(o):
    i = pto.get_global_id()
    if pto.get_warp_id() == 0:
        pto.barrier()
    pto.store(o + i, 1.0)


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse"])
def test_warp_divergent_barrier_deadlocks(schedule):
    """Item 10: a pto.barrier() reached by only part of a warp is a DeadlockError naming a
    lane that took the other path; one reached by whole warps only is fine."""
    with pytest.raises(pto.DeadlockError, match=r"lane \((16|48), 0, 0\) of block \(0, 0, 0\)"):
        run_kernel(half_warp_barrier, 1, 64, (np.zeros(64, np.float32),), schedule=schedule)
    out = run_kernel(one_warp_barrier, 1, 64, (np.zeros(64, np.float32),), schedule=schedule)
    assert (out[-1] == 1.0).all()
