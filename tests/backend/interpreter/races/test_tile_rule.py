"""The race detector's tile rule (docs/barriers.md#tile-vector-instructions): a tile vector
instruction reads and writes its tiles through the vector unit, which does not wait for the
lanes' L1 accesses, nor they for it. Lanes writing a tile that a tile instruction then reads,
a tile instruction writing a tile that lanes then read or write, with no `pto.barrier_block()`
in between, is a race at run time (named with both accesses) and a hazard for
`pto-verify-barriers` (which `pto-insert-barriers` repairs); a tile instruction is no barrier,
not even between lanes. Every kernel also runs with its barriers, its results checked against
NumPy.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel

SCHEDULES = [None, "in_order", "reverse", "random:3"]


@pto.kernel
def lane_write_then_tile_read(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8)
    u = pto.alloc_tile(8, 8)
    i = pto.get_local_id()
    pto.store(t + i, pto.cast(i, pto.float32))
    if fence:
        pto.barrier_block()
    pto.tadds(u, t, 1.0)
    pto.barrier_block()
    pto.store(Y + i, pto.load(u + i))


@pto.kernel
def tile_write_then_lane_read(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8, dtype=pto.int32)
    i = pto.get_local_id()
    pto.tci(t, 3)
    if fence:
        pto.barrier_block()
    pto.store(Y + i, pto.cast(pto.load(t + (63 - i)), pto.float32))


@pto.kernel
def tile_write_then_lane_write(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8)
    i = pto.get_local_id()
    pto.texpands(t, 2.0)
    if fence:
        pto.barrier_block()
    pto.store(t + i, 5.0)
    pto.barrier_block()
    pto.store(Y + i, pto.load(t + i))


@pto.kernel
def tile_read_then_lane_write(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8)
    u = pto.alloc_tile(8, 8)
    i = pto.get_local_id()
    pto.texpands(t, 2.0)
    pto.barrier_block()
    pto.tmuls(u, t, 3.0)
    if fence:
        pto.barrier_block()
    pto.store(t + i, 7.0)
    pto.barrier_block()
    pto.store(Y + i, pto.load(u + i) + pto.load(t + i))


@pto.kernel
def lanes_across_a_tile_instruction(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8)
    u = pto.alloc_tile(8, 8)
    i = pto.get_local_id()
    pto.store(t + i, pto.cast(i, pto.float32))
    pto.texpands(u, 2.0)                        # another tile: orders nothing
    if fence:
        pto.barrier_block()
    pto.store(Y + i, pto.load(t + (63 - i)))    # lane 0 reads what lane 63 (warp 1) wrote


@pto.kernel
def tiles_in_order(Y, fence: pto.constexpr):
    t = pto.alloc_tile(8, 8)
    u = pto.alloc_tile(8, 8)
    i = pto.get_local_id()
    pto.texpands(t, 1.5)
    pto.tadds(u, t, 1.0)                        # the vector unit runs its instructions in order
    pto.tmul(t, u, u)
    pto.barrier_block()
    pto.store(Y + i, pto.load(t + i))


CASES = [  # kernel, race kind, element, the first access's words, the second's, expected output
    (lane_write_then_tile_read, "RAW", 0, "written by lane 0 (warp 0)",
     "then read by pto.tadds (the vector unit)", np.arange(64, dtype=np.float32) + 1),
    (tile_write_then_lane_read, "RAW", 63, "written by pto.tci (the vector unit)",
     "then read by lane 0 (warp 0)", (63 - np.arange(64) + 3).astype(np.float32)),
    (tile_write_then_lane_write, "WAW", 0, "written by pto.texpands (the vector unit)",
     "then written again by lane 0 (warp 0)", np.full(64, 5.0, np.float32)),
    (tile_read_then_lane_write, "WAR", 0, "read by pto.tmuls (the vector unit)",
     "then written by lane 0 (warp 0)", np.full(64, 13.0, np.float32)),
]


def _launch_without_verifier(kernel, schedule):
    y = np.zeros(64, np.float32)
    return run_kernel(kernel, 1, 64, (y, False), pipeline="canonicalize,cse",
                      schedule=schedule, race_check=True)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__ if hasattr(c[0], "__name__")
                         else str(c[1]))
def test_runtime_reports_both_accesses_and_the_fix(case, schedule):
    kernel, kind, element, first, second, _ = case
    with pytest.raises(pto.RaceError) as info:
        _launch_without_verifier(kernel, schedule)
    msg = str(info.value)
    if schedule is None:  # lockstep: the first lanes; warp by warp, the first warp to run
        assert f"{kind} race on L1 tile 't' element {element} in block (0, 0, 0)" in msg, msg
        assert first in msg and second in msg, msg
    assert re.search(f"{kind} race on L1 tile 't' element [0-9]+ in block", msg), msg
    for words in (first, second):
        assert re.sub(r"lane [0-9]+ \(warp [0-9]\)", "LANE", words) in \
            re.sub(r"lane [0-9]+ \(warp [0-9]\)", "LANE", msg), msg
    assert "test_tile_rule.py:" in msg  # both accesses' lines, and the error's own
    assert "a tile vector instruction is not a barrier" in msg
    assert "put pto.barrier_block() between them" in msg


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[1]))
def test_the_verifier_agrees_and_the_barrier_fixes_it(case):
    kernel, kind, _, _, _, expected = case
    y = np.zeros(64, np.float32)
    with pytest.raises(pto.PtoError) as info:  # the default pipeline verifies barriers
        run_kernel(kernel, 1, 64, (y, False), pipeline="pto-verify-barriers")
    msg = str(info.value)
    assert f"{kind} hazard on L1 tile 't'" in msg and "through the vector unit" in msg, msg
    assert "put pto.barrier_block() between them" in msg
    for schedule in SCHEDULES:
        out, = run_kernel(kernel, 1, 64, (y, True), schedule=schedule, race_check=True)
        np.testing.assert_array_equal(out, expected)
        repaired, = run_kernel(kernel, 1, 64, (y, False), schedule=schedule,
                                 pipeline="pto-insert-barriers,pto-verify-barriers")
        np.testing.assert_array_equal(repaired, expected)


def test_a_tile_instruction_does_not_order_lanes():
    with pytest.raises(pto.RaceError) as info:
        _launch_without_verifier(lanes_across_a_tile_instruction, None)
    msg = str(info.value)
    assert "RAW race on L1 buffer 't' element 63" in msg
    assert "written by lane 63 (warp 1)" in msg and "read by lane 0 (warp 0)" in msg
    y = np.zeros(64, np.float32)
    with pytest.raises(pto.PtoError, match="RAW hazard on L1 buffer 't'"):
        run_kernel(lanes_across_a_tile_instruction, 1, 64, (y, False))
    out, = run_kernel(lanes_across_a_tile_instruction, 1, 64, (y, True))
    np.testing.assert_array_equal(out, (63 - np.arange(64)).astype(np.float32))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tile_instructions_never_race_with_each_other(schedule):
    y = np.zeros(64, np.float32)
    out, = run_kernel(tiles_in_order, 1, 64, (y, False), schedule=schedule, race_check=True)
    np.testing.assert_array_equal(out, np.full(64, 2.5 * 2.5, np.float32))


def test_batch_mode_names_the_block():
    """Several blocks in one lane vector: the report names the block whose copy raced."""
    y = np.zeros(64, np.float32)
    with pytest.raises(pto.RaceError) as info:
        run_kernel(tile_write_then_lane_read, 3, 64, (y, False), pipeline="canonicalize,cse",
                   race_check=True)
    assert "RAW race on L1 tile 't' element 63 in block (0, 0, 0)" in str(info.value)
