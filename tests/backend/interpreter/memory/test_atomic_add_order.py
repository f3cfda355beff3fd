"""Float atomic adds are applied in the order each schedule runs the warps.

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
def float_atomic_order(o, old):
    t = pto.get_local_id()
    v = 0.0
    if t < 32:
        v = 1.0
    if t == 32:
        v = 16777216.0  # 2**24: adding 1.0 to it afterwards rounds back to 2**24
    acc = pto.alloc_local(1)
    pto.fill(acc, 0.0, 1)
    pto.barrier_block()
    pto.store(old + t, pto.atomic_add(acc, v))
    pto.barrier_block()
    if t == 0:
        pto.store(o, pto.load(acc))


@pytest.mark.parametrize("schedule,total,old_of_32", [
    (None, 2 ** 24 + 32, 32.0),          # lockstep: lane order across the block
    ("in_order", 2 ** 24 + 32, 32.0),    # warp 0 first: the same order
    ("reverse", 2 ** 24, 0.0),           # warp 1 first: the 32 ones are lost to rounding
])
def test_float_atomic_add_order_per_schedule(schedule, total, old_of_32):
    """Decided in docs/language.md: lanes of a warp in lane order, warps in schedule order."""
    o, old = run_kernel(float_atomic_order, 1, 64, (np.zeros(1, np.float32),
                                                    np.zeros(64, np.float32)), schedule=schedule)
    assert o[0] == total
    assert old[32] == old_of_32
    assert old[31] == (31.0 if schedule != "reverse" else 2 ** 24)
