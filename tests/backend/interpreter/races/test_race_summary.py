"""The race detector's bulk checks (races.py): accesses that touch the same elements of every
block's L1 copy with the same lanes — row accesses (`buf + tid + u`), planned patterns
(`buf + 63 - tid`, `buf + 2 * tid`), rows under a mask the same in every block, rows and
patterns under masks that differ between blocks — are checked against a per-epoch summary
of one block, and remembered when race-free. Each kernel here races through one of those
paths; the report must be the one the general path (fast paths off) gives, word for word,
and race-free variants must stay silent, launch after launch."""

from __future__ import annotations

import pytest

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS


def race_text(kernel, grid=4, block=64, launches=1) -> str | None:
    o = pto.alloc_tensor(64 * 4)
    ck = pto.compile(kernel, args=(o,), block=block, pipeline="", race_check=True)
    try:
        for _ in range(launches):
            ck(grid=grid, block=block, args=(o,))
            pto.sync()
    except pto.RaceError as exc:
        return str(exc)
    return None


def both_ways(kernel, **kw) -> tuple[str | None, str | None]:
    texts = []
    for on in (True, False):
        saved, FAST_PATHS.on = FAST_PATHS.on, on
        try:
            texts.append(race_text(kernel, **kw))
        finally:
            FAST_PATHS.on = saved
    return texts[0], texts[1]


@pto.kernel
def pattern_write_then_row_read(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(128)
    pto.store(buf + 2 * t, 1.0)        # a strided pattern: lane t writes element 2t
    v = pto.load(buf + t + 1)          # a row read: lane 33 (warp 1) reads element 34 (lane 17)
    pto.store(o + t, v)


@pto.kernel
def row_read_then_pattern_write(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + t)              # a row read, queued
    pto.store(buf + 63 - t, v)         # a reversed pattern: writes the other warp's elements


@pto.kernel
def broadcast_read_then_row_write(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    k = 0
    for _ in range(1):
        k = k + 5
    v = pto.load(buf + k)              # every lane reads element 5 (a broadcast pattern)
    pto.store(buf + t, v)              # lane 5 (warp 0) writes it: WAR with warp 1's read


@pto.kernel
def window_rows_race(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    if t < 48:                         # the same lanes in every block: a window of rows
        pto.store(buf + t, pto.load(buf + t) + pto.load(buf + t + 16))  # lane 32 writes what lane 16 read


@pto.kernel
def rows_masked_per_block(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + t)
    if t + 9 * pto.get_block_id() > 40:  # different lanes in different blocks
        pto.store(buf + t - 1, v)        # block 1+: lane 32 (warp 1) writes element 31


@pto.kernel
def pattern_masked_per_block(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(128)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    v = pto.load(buf + t)
    if t + 9 * pto.get_block_id() > 40 and t > 16:
        pto.store(buf + 2 * t - 33, v)   # block 1+: lane 32 (warp 1) writes element 31


@pto.kernel
def rows_data_masked(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, pto.cast(t + 3 * pto.get_block_id(), pto.float32))
    pto.barrier_block()
    if t < 48:
        v = pto.load(buf + t + 16)     # lane 29 (warp 0) reads element 45
        if v > 63.0:                   # a mask computed from data, other lanes in each block
            pto.store(buf + t, v)      # block 1+: lane 45 (warp 1) writes element 45


RACY = [
    (pattern_write_then_row_read, "RAW", "element 34"),
    (row_read_then_pattern_write, "WAR", "element"),
    (broadcast_read_then_row_write, "WAR", "element 5"),
    (window_rows_race, "WAR", "element 32"),
    (rows_masked_per_block, "WAR", "element 31"),
    (pattern_masked_per_block, "WAR", "element 31"),
    (rows_data_masked, "WAR", "element 45"),
]


@pytest.mark.parametrize("kernel,kind,where", RACY, ids=[k.__name__ for k, _, _ in RACY])
def test_a_race_through_a_bulk_check_is_reported_as_the_general_path_reports_it(
        kernel, kind, where):
    fast, general = both_ways(kernel)
    assert fast is not None and f"{kind} race on L1 buffer 'buf' {where}" in fast
    assert fast == general


@pytest.mark.parametrize("kernel", [rows_masked_per_block, pattern_masked_per_block,
                                    rows_data_masked])
def test_a_race_in_one_block_only_is_found(kernel):
    """The race is in blocks 1..3 only; block 0's lanes pass the same checks."""
    fast, general = both_ways(kernel, grid=4)
    assert fast is not None and "in block (1, 0, 0)" in fast
    assert fast == general
    assert race_text(kernel, grid=1) is None  # block 0 alone is race-free


@pto.kernel
def clean_mixed_epochs(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(128)
    pto.store(buf + t, 1.0)                  # rows
    pto.store(buf + 64 + (t ^ 1), 2.0)       # a general write, within each warp
    pto.barrier_block()
    v = pto.load(buf + 63 - t)               # a reversed pattern read
    w = pto.load(buf + 64 + t)
    s = 32
    for _ in range(5):
        if t < s:                            # windows of rows, one warp at the end
            pto.store(buf + 64 + t, pto.load(buf + 64 + t) + pto.load(buf + 64 + t + s))
        pto.barrier_block()
        s = s // 2
    if t + pto.get_block_id() > 10:          # rows under per-block masks, same warp
        pto.store(buf + t, v + w)
    pto.store(o + t, pto.load(buf + 64))


@pto.kernel
def clean_data_masked_tree(o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, pto.cast((t * 37 + 11 * pto.get_block_id()) % 64, pto.float32))
    pto.barrier_block()
    s = 32
    for _ in range(6):                       # a min tree: stores under masks from data
        if t < s:
            a = pto.load(buf + t)
            b = pto.load(buf + t + s)
            if b < a:
                pto.store(buf + t, b)
        pto.barrier_block()
        s = s // 2
    pto.store(o + t, pto.load(buf))


@pytest.mark.parametrize("kernel", [clean_mixed_epochs, clean_data_masked_tree])
def test_race_free_kernels_stay_silent_launch_after_launch(kernel):
    """The remembered outcomes (Shadow.trie) are reused by later vectors and launches."""
    assert race_text(kernel, grid=8, launches=3) is None
    fast, general = both_ways(kernel, grid=8, launches=2)
    assert fast is None and general is None


def test_a_racy_launch_after_clean_ones_is_still_reported():
    o = pto.alloc_tensor(64 * 4)
    ck = pto.compile(window_rows_race, args=(o,), block=64, pipeline="", race_check=True)
    for _ in range(2):
        with pytest.raises(pto.RaceError, match="WAR race"):
            ck(grid=4, block=64, args=(o,))
            pto.sync()


@pto.kernel
def row_read_while_load_in_flight(x, o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    other = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    tok = pto.async_load(other, x + pto.get_block_id() * 64, 64 * 4)
    v = pto.load(buf + t)            # rows of a buffer no copy touches: fine
    if t >= 16:
        v = v + pto.load(other + t)  # rows (a window) of the copy's destination: a hazard
    pto.wait(tok)
    pto.store(o + t, v)


@pto.kernel
def row_write_while_store_in_flight(x, o):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, 1.0)
    pto.barrier_block()
    tok = pto.async_store(x + pto.get_block_id() * 64, buf, 64 * 4)
    pto.store(buf + t, 2.0)          # overwrites the copy's source: a hazard
    pto.wait(tok)


@pytest.mark.parametrize("kernel,what", [(row_read_while_load_in_flight, "read"),
                                         (row_write_while_store_in_flight, "write")])
def test_row_accesses_meet_copies_in_flight_as_the_general_path_does(kernel, what):
    """Row accesses check copies in flight on their columns (one block's bytes): the same
    RaceError as the general path."""
    texts = []
    for on in (True, False):
        saved, FAST_PATHS.on = FAST_PATHS.on, on
        try:
            x, o = pto.zeros(4 * 64), pto.zeros(64)
            ck = pto.compile(kernel, args=(x, o), block=64, pipeline="")
            with pytest.raises(pto.RaceError) as info:
                ck(grid=4, block=64, args=(x, o))
                pto.sync()
            texts.append(str(info.value))
        finally:
            FAST_PATHS.on = saved
    assert f"hazard: {what} of L1 buffer" in texts[0] and "still in flight" in texts[0]
    assert texts[0] == texts[1]
