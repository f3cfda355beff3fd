"""A race report names both accesses by the lanes and warps that made them, in lockstep and
under every warp schedule (each warp is then its own lane vector)."""

from __future__ import annotations

import pytest

import pypto as pto


@pto.kernel
def read_neighbour_warp(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    if t == 0:
        pto.store(buf, 1.0)
    if t == 32:
        pto.store(o, pto.load(buf))  # warp 1 reads what warp 0 wrote: no barrier_block


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:3"])
def test_race_names_the_writer_and_the_reader(schedule):
    o = pto.alloc_tensor(4)
    ck = pto.compile(read_neighbour_warp, args=(o,), block=64, pipeline="", schedule=schedule)
    with pytest.raises(pto.RaceError) as info:
        ck(grid=1, block=64, args=(o,))
        pto.sync()
    text = str(info.value)
    if schedule == "reverse":
        assert "WAR race" in text
    if schedule in (None, "in_order"):
        assert "RAW race" in text
    if "WAR race" in text:  # warp 1 read first, then warp 0 wrote: the same bug as WAR
        assert "read by lane 32 (warp 1)" in text and "written by lane 0 (warp 0)" in text
    else:
        assert "written by lane 0 (warp 0)" in text and "read by lane 32 (warp 1)" in text
