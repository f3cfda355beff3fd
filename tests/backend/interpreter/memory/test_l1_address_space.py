"""L1 is one address space per block: buffers are typed views at byte offsets, so a placement
that overlaps two live buffers changes results (and is caught), an overrun names the neighbour
it runs into, and the race detector, in-flight copies and uninitialised-read tracking follow
bytes rather than buffer names."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, i64

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.backend.interpreter.l1 import L1Layout
from pypto.backend.targets import default_target
from pypto.dialects import pto as pto_ir


@pto.kernel
def through_b(o):
    t = pto.get_local_id()
    a = pto.alloc_local(64)
    b = pto.alloc_local(64)
    pto.store(a + t, 1.0 + pto.cast(t, pto.float32))
    pto.barrier_block()
    pto.store(o + pto.get_global_id(), pto.load(b + t))


@pto.kernel
def racy_through_alias(o):
    t = pto.get_local_id()
    a = pto.alloc_local(64)
    b = pto.alloc_local(64)
    pto.store(a + t, 1.0)
    pto.store(o + t, pto.load(b + (63 - t)))  # lane 0 (warp 0) reads what lane 63 wrote


@pto.kernel
def copy_then_read_alias(o, x):
    t = pto.get_local_id()
    a = pto.alloc_local(64)
    b = pto.alloc_local(64)
    pto.store(b + t, 0.0)
    pto.barrier_block()
    tok = pto.async_load(a, x, 64 * 4)
    pto.store(o + t, pto.load(b + t))  # b shares a's bytes: still in flight
    pto.wait(tok)


@pto.kernel
def overrun(o):
    t = pto.get_local_id()
    a = pto.alloc_local(64)
    b = pto.alloc_local(64)
    pto.fill(b, 0.0, 64)
    pto.store(a + t + 64, 1.0)


def _allocs(func):
    return [op for op in func.walk() if isinstance(op, pto_ir.AllocLocalOp)]


def _place(func, *offsets):
    """Inject a placement, as a (possibly wrong) `pto-allocate-l1` would."""
    for op, off in zip(_allocs(func), offsets):
        op.properties["offset"] = IntegerAttr(off, i64)


def _run(func, grid, block, args, **options):
    Executable(func, **options).run(grid, block, args)


def _compiled(kernel, args, block, pipeline=None):
    # the default pipeline minus pto-allocate-l1: these tests inject their own placements
    pipeline = "pto-verify-barriers" if pipeline is None else pipeline
    return pto.compile(kernel, args=args, block=block, pipeline=pipeline).func.clone()


@pytest.mark.parametrize("options", [{}, {"batch_blocks": False}, {"schedule": "reverse"}],
                         ids=["batch", "block", "warp"])
def test_overlapping_placement_changes_results(options):
    o = pto.alloc_tensor(3 * 64 * 4)
    func = _compiled(through_b, (o,), 64)
    expected_alias = np.tile(np.arange(1, 65, dtype=np.float32), 3)

    _run(func, (3, 1, 1), (64, 1, 1), (o,), **options)
    out = np.empty(3 * 64, np.float32)
    pto.memcpy_d2h(out, o)
    assert np.isnan(out).all()  # a correct placement: b was never written

    _place(func, 0, 0)  # a deliberately overlapping allocation: b is a
    _run(func, (3, 1, 1), (64, 1, 1), (o,), **options)
    pto.memcpy_d2h(out, o)
    np.testing.assert_array_equal(out, expected_alias)

    _place(func, 0, 128)  # partial overlap: b[k] is a[k + 32]
    _run(func, (3, 1, 1), (64, 1, 1), (o,), **options)
    pto.memcpy_d2h(out, o)
    block = out[:64]
    np.testing.assert_array_equal(block[:32], np.arange(33, 65, dtype=np.float32))
    assert np.isnan(block[32:]).all()


def test_layout_places_in_order_aligned_and_honours_offsets():
    o = pto.alloc_tensor(64 * 4)
    func = _compiled(through_b, (o,), 64)
    target = default_target()
    layout = L1Layout.of(func, target)
    offsets = sorted(s.offset for s in layout.slots.values())
    assert offsets == [0, 256]
    _place(func, 512, 1024)
    layout = L1Layout.of(func, target)
    assert sorted(s.offset for s in layout.slots.values()) == [512, 1024]
    assert layout.peak == 1024 + 256


def test_placement_beyond_l1_or_misaligned_is_an_l1_capacity_error():
    o = pto.alloc_tensor(64 * 4)
    func = _compiled(through_b, (o,), 64)
    _place(func, 0, default_target().l1_bytes - 128)
    with pytest.raises(pto.L1CapacityError, match="needs 196736 bytes of L1"):
        Executable(func)
    _place(func, 2, 0)
    with pytest.raises(pto.L1CapacityError, match="not a non-negative multiple"):
        Executable(func)


def test_race_detector_sees_a_race_through_an_aliasing_buffer():
    o = pto.alloc_tensor(64 * 4)
    # pipeline="": the static check knows nothing of placements; the dynamic one does
    func = _compiled(racy_through_alias, (o,), 64, pipeline="")
    _run(func, (1, 1, 1), (64, 1, 1), (o,))  # separate buffers: reading poison, no race
    _place(func, 0, 0)
    with pytest.raises(pto.RaceError) as info:
        _run(func, (1, 1, 1), (64, 1, 1), (o,))
    text = str(info.value)
    assert "RAW race on L1 buffer 'b' element 63" in text
    assert "written by lane 63 (warp 1)" in text and "read by lane 0 (warp 0)" in text


def test_in_flight_copy_hazard_follows_bytes_not_names():
    o = pto.alloc_tensor(64 * 4)
    x = pto.alloc_tensor(64 * 4)
    func = _compiled(copy_then_read_alias, (o, x), 64, pipeline="")
    _run(func, (1, 1, 1), (64, 1, 1), (o, x))
    _place(func, 0, 0)
    with pytest.raises(pto.RaceError, match="while the pto.async_load .* still in flight"):
        _run(func, (1, 1, 1), (64, 1, 1), (o, x))


def test_uninitialised_tracking_follows_bytes():
    o = pto.alloc_tensor(64 * 4)
    func = _compiled(through_b, (o,), 64)
    with pytest.raises(pto.KernelError, match="uninitialised L1: 'b'"):
        _run(func, (1, 1, 1), (64, 1, 1), (o,), check_uninitialized=True)
    _place(func, 0, 0)  # b's bytes were written through a
    _run(func, (1, 1, 1), (64, 1, 1), (o,), check_uninitialized=True)


def test_overrun_into_the_neighbour_names_both_buffers():
    o = pto.alloc_tensor(64 * 4)
    ck = pto.compile(overrun, args=(o,), block=64, pipeline="pto-verify-barriers")
    with pytest.raises(pto.MemoryAccessError) as info:
        ck(grid=1, block=64, args=(o,))
        pto.sync()
    text = str(info.value)
    assert "L1 buffer 'a' at element 64" in text
    assert "inside buffer 'b' (bytes 256..511" in text and "overruns 'a' (bytes 0..255)" in text


def test_int_and_float_buffers_are_poisoned_in_the_shared_arena():
    @pto.kernel
    def peek(oi, of):
        t = pto.get_local_id()
        bi = pto.alloc_local(32, dtype=pto.int32)
        bf = pto.alloc_local(32, dtype=pto.float16)
        pto.store(oi + t, pto.load(bi + t))
        pto.store(of + t, pto.load(bf + t))

    oi = pto.alloc_tensor(32 * 4, dtype=np.int32)
    of = pto.alloc_tensor(32 * 2, dtype=np.float16)
    pto.launch(peek, grid=1, block=32, args=(oi, of))
    hi, hf = np.empty(32, np.int32), np.empty(32, np.float16)
    pto.memcpy_d2h(hi, oi)
    pto.memcpy_d2h(hf, of)
    assert (hi == 0x7FBADBAD).all() and np.isnan(hf).all()
