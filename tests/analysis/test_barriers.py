"""`pto-verify-barriers` from Python: messages, the error's attached ops, options, and kernels
written with `@pto.kernel` (the analysis sees the frontend's real IR, with Python locations)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import pypto as pto
from pypto.analysis.barriers import Category, check_kernel, find_hazards
from pypto.errors import BarrierError
from pypto.ir import make_context
from pypto.passes import PipelineError, list_passes, parse_pipeline
from pypto.diagnostics import capture_diagnostics, error_notes, error_op
from pypto.passes.verify_barriers import VerifyBarriersPass
from pypto.tools.parsing import parse_module

HERE = __file__


def line_of(marker: str) -> int:
    """The line of this file holding `# <marker>` (so tests do not hard-code line numbers)."""
    with open(HERE, encoding="utf-8") as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return number
    raise AssertionError(marker)


def kernel_module(kernel: object, args: tuple[object, ...], block: object = 256) -> ModuleOp:
    """The frontend's IR for `kernel` (no passes), as a copy the test may change."""
    return pto.compile(kernel, args=args, block=block, pipeline="").module.clone()


def the_func(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def verify(module: ModuleOp, **options: object) -> None:
    VerifyBarriersPass(**options).apply(make_context(), module)  # type: ignore[arg-type]


def verify_remarks(module: ModuleOp, **options: object) -> list[str]:
    """Verify (raising on a proven hazard) and return the remarks: the deferred hazards."""
    found: list[str] = []
    with capture_diagnostics(lambda d: found.append(d.message)
                             if d.severity == "remark" else None):
        verify(module, **options)
    return found


def out_tensor(n: int = 256) -> object:
    return pto.alloc_tensor(n * 4, dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


@pto.kernel
def pitfall(out, data: pto.float32):
    shared = pto.alloc_local(256)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, data)  # pitfall-store
    pto.barrier()
    v = pto.load(shared + lid % 128)  # pitfall-load
    pto.store(out + pto.get_global_id(), v)


@pto.kernel
def pitfall_fixed(out, data: pto.float32):
    shared = pto.alloc_local(256)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, data)
    pto.barrier_block()
    v = pto.load(shared + lid % 128)
    pto.store(out + pto.get_global_id(), v)


@pto.kernel
def warp_exchanges(out, data: pto.float32):
    """Exchanges that stay inside a warp: `barrier()` is enough."""
    buf = pto.alloc_local(256)
    lid = pto.get_local_id()
    pto.store(buf + lid, data + pto.cast(lid, pto.float32))
    pto.barrier()
    a = pto.load(buf + (lid ^ 1))
    b = pto.load(buf + lid // 32 * 32 + 7)
    c = pto.load(buf + pto.get_warp_id() * 32 + (31 - pto.get_lane_id()))
    pto.store(out + pto.get_global_id(), a + b + c)


@pto.kernel
def tree_sum(x, partial, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def tree_sum_warp_tail(x, partial, BLOCK: pto.constexpr, CROSS: pto.constexpr):
    """Block-wide steps while several warps take part, then warp 0 alone under barrier()."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(CROSS):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if pto.get_warp_id() == 0:
        for _ in range(5):
            if tid < s:
                pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
            pto.barrier()
            s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def tree_sum_all_warp_barriers(x, partial, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """The tail trick applied too early: steps with s >= 32 cross warps under barrier()."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))  # tail-step
        pto.barrier()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


TILE, ROWS, PITCH = 32, 8, 33


@pto.kernel
def transpose(src, dst, n):
    tile = pto.alloc_local(TILE * PITCH)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    col0 = pto.get_block_id(0) * TILE
    row0 = pto.get_block_id(1) * TILE
    for j in range(0, TILE, ROWS):
        if col0 + tx < n and row0 + ty + j < n:
            pto.store(tile + (ty + j) * PITCH + tx, pto.load(src + (row0 + ty + j) * n + col0 + tx))
    pto.barrier_block()
    for j in range(0, TILE, ROWS):
        if row0 + tx < n and col0 + ty + j < n:
            pto.store(dst + (col0 + ty + j) * n + row0 + tx, pto.load(tile + tx * PITCH + ty + j))


@pto.kernel
def transpose_missing_barrier(src, dst, n):
    tile = pto.alloc_local(TILE * PITCH)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    col0 = pto.get_block_id(0) * TILE
    row0 = pto.get_block_id(1) * TILE
    for j in range(0, TILE, ROWS):
        if col0 + tx < n and row0 + ty + j < n:
            pto.store(tile + (ty + j) * PITCH + tx, pto.load(src + (row0 + ty + j) * n + col0 + tx))
    for j in range(0, TILE, ROWS):
        if row0 + tx < n and col0 + ty + j < n:
            pto.store(dst + (col0 + ty + j) * n + row0 + tx, pto.load(tile + tx * PITCH + ty + j))


@pto.kernel
def read_before_wait(src, out):
    buf = pto.alloc_local(256)
    tok = pto.async_load(buf, src, 256 * 4)  # async-issue
    v = pto.load(buf + pto.get_local_id())  # async-read
    pto.wait(tok)
    pto.store(out + pto.get_global_id(), v)


@pto.kernel
def read_after_wait(src, out):
    buf = pto.alloc_local(256)
    tok = pto.async_load(buf, src, 256 * 4)
    pto.wait(tok)
    v = pto.load(buf + pto.get_local_id())
    pto.store(out + pto.get_global_id(), v)


@pto.kernel
def double_buffered(x, y, ntiles):
    """Ping-pong buffers alternating by the parity of the loop counter (trip count unknown)."""
    tid = pto.get_local_id()
    ping = pto.alloc_local(256)
    pong = pto.alloc_local(256)
    tok = pto.async_load(ping, x, 256 * 4)
    for k in range(ntiles):
        nxt = tok
        if k % 2 == 0:
            if k + 1 < ntiles:
                nxt = pto.async_load(pong, x + (k + 1) * 256, 256 * 4)
            pto.wait(tok)
            pto.store(y + k * 256 + tid, pto.load(ping + tid))
        else:
            if k + 1 < ntiles:
                nxt = pto.async_load(ping, x + (k + 1) * 256, 256 * 4)
            pto.wait(tok)
            pto.store(y + k * 256 + tid, pto.load(pong + tid))
        pto.barrier_block()
        tok = nxt
    pto.wait_all()


@pto.kernel
def two_slots(x, y, ntiles, WRONG: pto.constexpr):
    """One buffer, two slots: the copy of tile k + 1 fills slot (k + 1) % 2 while lanes read
    slot k % 2 (or, WRONG, the slot being filled); the trip count is a run-time value."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(512)
    tok = pto.async_load(buf, x, 256 * 4)
    for k in range(ntiles):
        nxt = pto.async_load(buf + (k + 1) % 2 * 256, x + (k + 1) * 256, 256 * 4)
        pto.wait(tok)
        slot = (k + 1) % 2 if WRONG else k % 2
        pto.store(y + k * 256 + tid, pto.load(buf + slot * 256 + tid))  # slot-read
        pto.barrier_block()
        tok = nxt
    pto.wait_all()


@pto.kernel
def prefetch_waits_too_early(x, y, ntiles):
    """Waits on the token of the copy issued in this iteration's *previous* slot only: the
    prefetch just issued into the other buffer is still in flight when that buffer is read."""
    tid = pto.get_local_id()
    ping = pto.alloc_local(256)
    pong = pto.alloc_local(256)
    tok = pto.async_load(ping, x, 256 * 4)
    for k in range(ntiles):
        nxt = pto.async_load(pong, x + (k + 1) * 256, 256 * 4)
        pto.wait(tok)
        pto.store(y + k * 256 + tid, pto.load(pong + tid))  # early-read
        tok = nxt
    pto.wait_all()


# ---------------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------------


def test_pitfall_error_names_kind_buffer_range_lanes_warps_both_locations_and_fix():
    module = kernel_module(pitfall, (out_tensor(), 1.0))
    with pytest.raises(BarrierError) as info:
        verify(module)
    err = info.value
    store, load = line_of("pitfall-store"), line_of("pitfall-load")
    message = err.bare_message
    assert message.startswith("RAW hazard on L1 buffer 'shared' [0, 128): ")
    assert f"written by lanes 0-127 (warps 0-3) at {HERE}:{store}:" in message
    assert f"read by lanes 128-255 (warps 4-7) at {HERE}:{load}:" in message
    assert "only pto.barrier() (which orders a single warp) separates them" in message
    assert message.endswith("use pto.barrier_block()")
    # CompileError's own prefix: the second access's Python location, then its source line
    assert str(err).startswith(f"{HERE}:{load}:")
    assert "v = pto.load(shared + lid % 128)" in str(err)
    assert err.line == load


def test_error_is_attached_to_the_second_access_with_a_note_at_the_first():
    module = kernel_module(pitfall, (out_tensor(), 1.0))
    with pytest.raises(BarrierError) as info:
        verify(module)
    op = error_op(info.value)
    assert op is not None and op.name == "pto.load"
    notes = error_notes(info.value)
    assert len(notes) == 1
    text, first = notes[0]
    assert first is not None and first.name == "pto.store"
    assert "written here" in text


def test_the_fixed_pitfall_passes():
    verify(kernel_module(pitfall_fixed, (out_tensor(), 1.0)))


def test_same_warp_exchanges_pass_under_a_warp_barrier():
    verify(kernel_module(warp_exchanges, (out_tensor(), 1.0)))


@pytest.mark.parametrize("block,log2", [(64, 6), (256, 8), (1024, 10)])
def test_tree_reduction_passes_for_every_block_size(block, log2):
    x = pto.alloc_tensor(block * 4 * 4, dtype=np.float32)
    module = kernel_module(tree_sum, (x, out_tensor(4), block, log2), block)
    verify(module, block_size=block)


def test_warp_synchronous_tail_passes():
    x = pto.alloc_tensor(256 * 4, dtype=np.float32)
    verify(kernel_module(tree_sum_warp_tail, (x, out_tensor(1), 256, 3)))


def test_warp_barrier_between_cross_warp_steps_is_a_loop_carried_raw():
    x = pto.alloc_tensor(256 * 4, dtype=np.float32)
    module = kernel_module(tree_sum_all_warp_barriers, (x, out_tensor(1), 256, 8))
    with pytest.raises(BarrierError) as info:
        verify(module)
    message = info.value.bare_message
    step = line_of("tail-step")
    assert message.startswith("RAW hazard on L1 buffer 'buf' [64, 128): ")
    assert "written by lanes 64-127 (warps 2-3)" in message
    assert "read by lanes 0-63 (warps 0-1)" in message
    assert "in the previous iteration of the loop at" in message
    assert "(the first when s = 128, the second when s = 64)" in message
    assert "only pto.barrier() (which orders a single warp) separates them on the way round " \
           "the loop" in message
    assert message.count(f"{HERE}:{step}:") == 2


def test_two_dimensional_block_needs_the_block_shape():
    src = pto.alloc_tensor(64 * 64 * 4, dtype=np.float32)
    verify(kernel_module(transpose, (src, src, 64), (TILE, ROWS)), block_dims=(TILE, ROWS))
    racy = kernel_module(transpose_missing_barrier, (src, src, 64), (TILE, ROWS))
    with pytest.raises(BarrierError, match=r"^.*RAW hazard on L1 buffer 'tile'"):
        verify(racy, block_dims=(TILE, ROWS))
    # With only the lane count, ids along y are unknown: not proven, so not an error but a
    # remark naming both accesses, deferred to the run-time race detector (never silent).
    remarks = verify_remarks(racy, block_size=TILE * ROWS)
    assert any("possible WAW hazard on L1 buffer 'tile'" in r and
               "left to the run-time race detector" in r for r in remarks)


def test_block_size_decides_which_lanes_share_a_warp():
    module = kernel_module(pitfall, (out_tensor(), 1.0))
    verify(module.clone(), block_size=128)  # lanes 0-127 only: each reads its own slot
    # 160 lanes: lanes 128-159 (warp 4) read slots 0-31, written by warp 0
    with pytest.raises(BarrierError, match=r"\[0, 32\): written by lanes 0-31 \(warp 0\).*read by "
                                           r"lanes 128-159 \(warp 4\)"):
        verify(module, block_size=160)


def test_in_flight_async_load_read():
    module = kernel_module(read_before_wait, (out_tensor(), out_tensor()))
    with pytest.raises(BarrierError) as info:
        verify(module)
    message = info.value.bare_message
    issue, read = line_of("async-issue"), line_of("async-read")
    assert message.startswith("RAW hazard on L1 buffer 'buf' [0, 256): read by lanes 0-255 "
                              "(warps 0-7)")
    assert f"at {HERE}:{read}:" in message
    assert f"while the pto.async_load at {HERE}:{issue}:" in message
    assert message.endswith("call pto.wait(tok) first (or pto.wait_all())")
    verify(kernel_module(read_after_wait, (out_tensor(), out_tensor())))


def test_double_buffering_by_loop_parity_passes():
    x = pto.alloc_tensor(4 * 256 * 4, dtype=np.float32)
    verify(kernel_module(double_buffered, (x, x, 4)))


def test_two_slots_indexed_by_counter_parity_with_an_unknown_trip_count():
    x = pto.alloc_tensor(9 * 256 * 4, dtype=np.float32)
    verify(kernel_module(two_slots, (x, x, 8, False)))
    with pytest.raises(BarrierError, match=r"RAW hazard on L1 buffer 'buf' \[256, 512\): read by "
                                           r"lanes 0-255 \(warps 0-7\) at .*:"
                                           + str(line_of("slot-read")) + r":.*\(when k = 0\)"):
        verify(kernel_module(two_slots, (x, x, 8, True)))


def test_a_token_carried_round_the_loop_does_not_complete_this_iterations_copy():
    x = pto.alloc_tensor(4 * 256 * 4, dtype=np.float32)
    module = kernel_module(prefetch_waits_too_early, (x, x, 4))
    with pytest.raises(BarrierError, match=r"RAW hazard on L1 buffer 'pong' \[0, 256\): read by "
                                           r"lanes 0-255 \(warps 0-7\) at .*:"
                                           + str(line_of("early-read")) + ":.*call "
                                           r"pto\.wait\(nxt\) first"):
        verify(module)


DIVERGENT = """\
func.func @k(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<64xf32>
  %lid = pto.get_local_id 0 : i32
  %c64 = arith.constant 64 : i32
  %lo = arith.cmpi slt, %lid, %c64 : i32 loc("k.py":4:8)
  scf.if %lo {
    pto.fill %buf, %v, %c64 : !pto.l1buf<64xf32>, f32 loc("k.py":5:9)
  }
  func.return
}
"""


def test_divergent_tile_instruction():
    module, _ = parse_module(make_context(), DIVERGENT, "k.mlir")
    with pytest.raises(BarrierError) as info:
        verify(module)
    assert info.value.bare_message.startswith(
        "barrier divergence: pto.fill is a tile instruction (executed once per block, by every "
        "warp) but sits under lane-dependent control flow: the condition at k.py:4:8")
    assert error_op(info.value).name == "pto.fill"  # type: ignore[union-attr]
    assert error_notes(info.value)[0][1].name == "arith.cmpi"  # type: ignore[union-attr]


def test_alloc_local_is_a_declaration_not_a_collective():
    text = DIVERGENT.replace("pto.fill %buf, %v, %c64 : !pto.l1buf<64xf32>, f32",
                             "%other = pto.alloc_local : !pto.l1buf<8xf32>")
    module, _ = parse_module(make_context(), text, "k.mlir")
    verify(module)


# ---------------------------------------------------------------------------------------------
# API, options, pipelines
# ---------------------------------------------------------------------------------------------


def test_find_hazards_lists_every_hazard_without_raising():
    x = pto.alloc_tensor(4 * 256 * 4, dtype=np.float32)
    kernel = the_func(kernel_module(prefetch_waits_too_early, (x, x, 4)))
    hazards = find_hazards(kernel, (256, 1, 1))
    assert hazards and all(h.category is Category.IN_FLIGHT for h in hazards)
    with pytest.raises(BarrierError):
        check_kernel(kernel, 256)


def test_options_parse_and_are_listed():
    (p,) = parse_pipeline("pto-verify-barriers{block-size=64}")
    assert isinstance(p, VerifyBarriersPass) and p.block_size == 64
    (p,) = parse_pipeline("pto-verify-barriers{block-dims=32,8}")
    assert isinstance(p, VerifyBarriersPass) and p.block_dims == (32, 8)
    summaries = dict(list_passes())
    assert summaries["pto-verify-barriers"].startswith("Reject L1 hazards between warps")


@pytest.mark.parametrize("text", ["pto-verify-barriers{block-size=0}",
                                  "pto-verify-barriers{block-size=2048}",
                                  "pto-verify-barriers{block-dims=64,32}"])
def test_bad_block_options_are_pipeline_errors(text):
    with pytest.raises(PipelineError, match="block"):
        parse_pipeline(text)


def test_compile_with_the_pass_raises_barrier_error_with_both_python_lines():
    with pytest.raises(pto.BarrierError) as info:
        pto.compile(pitfall, args=(out_tensor(), 2.0), block=256,
                    pipeline="pto-verify-barriers{block-size=256}")
    message = str(info.value)
    for marker in ("pitfall-store", "pitfall-load"):
        assert re.search(rf"{re.escape(HERE)}:{line_of(marker)}:\d+", message)
