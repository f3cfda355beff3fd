"""The race detector's bookkeeping cases, each with the report it must give.

Reads update the per-element "last reading warp" and "read by a second warp" state only when a
write of the same epoch needs it (races.py defers them), and a write whose element indices are
strictly increasing skips the test for two warps writing one element in the same instruction.
These kernels pin down that the reports are unchanged: a write after two warps' reads (in two
instructions or in one), reads whose epoch ends before the write, two warps writing one element
in one instruction, and lane-ordered writes that must not be flagged.
"""

from __future__ import annotations

import pytest

import pypto as pto

SCHEDULES = [None, "in_order", "reverse", "random:5"]


def race_text(kernel, schedule=None, block=64) -> str | None:
    o = pto.alloc_tensor(64 * 4)
    ck = pto.compile(kernel, args=(o,), block=block, pipeline="", schedule=schedule,
                     race_check=True)
    try:
        ck(grid=2, block=block, args=(o,))
        pto.sync()
    except pto.RaceError as exc:
        return str(exc)
    return None


@pto.kernel
def two_warps_read_then_one_writes(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    if t == 0:
        pto.store(o, pto.load(buf + 5))      # warp 0 reads element 5
    if t == 40:
        pto.store(o + 1, pto.load(buf + 5))  # warp 1 reads it too (the last reader)
    if t == 41:
        pto.store(buf + 5, 2.0)              # warp 1 writes it: races with warp 0's read


def test_write_after_reads_by_two_warps_is_a_war_race():
    text = race_text(two_warps_read_then_one_writes)
    assert text is not None and "WAR race on L1 buffer 'buf' element 5" in text
    assert "read by lane 0 (warp 0)" in text and "written by lane 41 (warp 1)" in text


@pto.kernel
def all_read_one_element_then_one_writes(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + 3)                    # both warps read element 3 in one instruction
    if t == 63:
        pto.store(buf + 3, v + 1.0)          # warp 1 writes it


def test_one_instruction_read_by_two_warps_then_a_write_is_a_war_race():
    text = race_text(all_read_one_element_then_one_writes)
    assert text is not None and "WAR race on L1 buffer 'buf' element 3" in text
    assert "(warp 0)" in text and "written by lane 63 (warp 1)" in text


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kernel", [two_warps_read_then_one_writes,
                                    all_read_one_element_then_one_writes])
def test_the_war_races_are_found_under_every_schedule(kernel, schedule):
    assert race_text(kernel, schedule) is not None


@pto.kernel
def reads_then_barrier_then_write(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + 63 - t)               # every warp reads the other warp's elements
    w = pto.load(buf + 3)
    pto.barrier_block()                      # the reads' epoch ends here
    pto.store(buf + t, v + w)
    pto.store(o + t, pto.load(buf + t))


@pto.kernel
def disjoint_reads_and_writes(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(128)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + (t % 32))             # both warps read elements 0..31
    pto.store(buf + 64 + t, v)               # each lane writes its own element elsewhere
    pto.store(o + t, pto.load(buf + 64 + t))  # and reads back only what its warp wrote


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kernel", [reads_then_barrier_then_write, disjoint_reads_and_writes])
def test_no_race_reported_where_there_is_none(kernel, schedule):
    assert race_text(kernel, schedule) is None


@pto.kernel
def two_warps_write_one_element_in_one_store(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + (t % 32), 1.0)           # lanes t and t + 32 (warps 0 and 1) collide


@pto.kernel
def two_warps_write_one_element_decreasing(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + 40 - (t + 2) // 4, 1.0)  # lanes 30..33 (warps 0 and 1) share element 32


def test_two_warps_writing_one_element_in_one_instruction_is_reported():
    text = race_text(two_warps_write_one_element_in_one_store)
    assert text is not None and "WAW race on L1 buffer 'buf' element 0" in text
    assert "written by the same instruction" in text
    assert "lane 0 (warp 0)" in text and "lane 32 (warp 1)" in text
    text = race_text(two_warps_write_one_element_decreasing)
    assert text is not None and "written by the same instruction" in text
    assert "element 32" in text and "(warp 0)" in text and "(warp 1)" in text


@pto.kernel
def general_read_then_row_accesses(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + (63 - t))             # a general read: each warp reads the other's half
    w = pto.load(buf + t)                    # a row read (batch mode: buf + tid)
    pto.store(buf + t, v + w)                # a row write: WAR with the general read


@pto.kernel
def row_read_then_general_write(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    w = pto.load(buf + t)                    # a row read
    v = pto.load(buf + (63 - t))             # a general read, deferred
    pto.store(buf + (t ^ 1), v + w)          # a general write within each warp: no race...
    pto.store(buf + (63 - t), w)             # ...this one writes the other warp's half: WAR


@pytest.mark.parametrize("kernel", [general_read_then_row_accesses,
                                    row_read_then_general_write])
def test_deferred_reads_meet_row_accesses(kernel):
    """Batch-mode row accesses (`buf + tid`) and deferred general reads in one epoch: the WAR
    race is reported, and exactly as the general path (fast paths off) reports it."""
    from pypto.backend.interpreter.fastpaths import FAST_PATHS
    texts = []
    for on in (True, False):
        saved, FAST_PATHS.on = FAST_PATHS.on, on
        try:
            texts.append(race_text(kernel))
        finally:
            FAST_PATHS.on = saved
    assert texts[0] is not None and "WAR race on L1 buffer 'buf'" in texts[0]
    assert texts[0] == texts[1]
