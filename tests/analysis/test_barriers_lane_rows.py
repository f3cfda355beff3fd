"""The barrier analysis on rows of lanes: disjoint rows verify at any trip count, overlapping ones
do not.

A regression test for a defect a new user hit (issue 8), kept next to its feature. Expected
values are worked out by hand with exact arithmetic (see each docstring), never taken from the
implementation.
"""

from __future__ import annotations

import pytest

import pypto as pto


@pto.kernel
def lane_rows(o, R: pto.constexpr, W: pto.constexpr):
    t = pto.get_local_id()
    a = pto.alloc_local(64 * 64)
    for r in range(R):
        pto.store(a + r * W + t, 1.0)
    pto.barrier_block()
    c = pto.alloc_local(64 * 64)
    pto.fill(c, 0.0, 64 * 64)
    pto.mma(c, a, a, 64, 64, 64)
    pto.store(o + t, pto.load(c + t))


@pytest.mark.parametrize("rows", [16, 33, 64])
def test_disjoint_lane_rows_verify_at_any_trip_count(rows):
    """Item 8: lane t writing a[r*64 + t] for r < rows is race free at every trip count (the
    barrier analysis used to give up into a false WAW hazard past its enumeration limit)."""
    ck = pto.compile(lane_rows, args=(pto.alloc_tensor(256), rows, 64), block=64)
    assert ck.mlir


@pytest.mark.parametrize("rows", [16, 64])
def test_overlapping_lane_rows_still_rejected(rows):
    """...while rows that overlap across iterations between warps (stride 32) are a hazard."""
    with pytest.raises(pto.BarrierError, match="WAW hazard"):
        pto.compile(lane_rows, args=(pto.alloc_tensor(256), rows, 32), block=64)
