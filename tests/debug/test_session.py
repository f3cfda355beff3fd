"""The debugger's Python API (`pypto.debug`): the article's session on vector_add at both IR
levels, stepping granularities, breakpoints, variables by Python name, L1 by offset, choice of
block and warp, errors stopping at the instruction, the timeline. Expected values come from
NumPy or from the kernel's source, never from the debugger's own output."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402

PTO_LEVEL = "pto-verify-barriers"

def line_of(fn, marker: str) -> int:
    """The source line of `fn` containing `marker`."""
    lines, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    for k, text in enumerate(lines):
        if marker in text:
            return first + k
    raise AssertionError(f"{marker!r} not in {fn}")


def device(*arrays):
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
            pto.memcpy_h2d(t, a)  # queued: debug_kernel must wait for it
            out.append(t)
        else:
            out.append(a)
    return out


def host(t, dtype=np.float32):
    out = np.empty(t.size, dtype=dtype)
    pto.memcpy_d2h(out, t)
    return out


def vector_add_data(n=1024):
    a = np.arange(n, dtype=np.float32) * 0.25
    b = np.full(n, 0.5, dtype=np.float32)
    d_a, d_b, d_o = device(a, b, np.zeros(n, np.float32))
    return a, b, d_a, d_b, d_o


def out_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]


# the article's session ------------------------------------------------------------------------


def test_article_session_at_the_default_npu_level(capsys):
    n = 1024
    a, b, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n))
    assert ctx.level == "npu"
    capsys.readouterr()
    ctx.step()
    # the article: "[Lane 0] LOAD d_a[0] -> L1[0] (4 bytes)", folded over the 256 lanes
    assert out_lines(capsys) == ["[Lanes 0-255] LOAD d_a[0..255] -> L1[0..255] (4 bytes each)"]
    np.testing.assert_array_equal(ctx.inspect_l1(0, 16), a[:16])
    timeline = ctx.get_instruction_timeline()
    assert [e.inst for e in timeline] == ["LOAD", "LOAD", "FMA"]
    assert all(str(e.lane) == "0-255" for e in timeline)
    ctx.continue_()
    np.testing.assert_array_equal(host(d_o)[:256], a[:256] + b[:256])


def test_article_session_at_the_pto_level(capsys):
    n = 1024
    a, b, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    assert ctx.level == "pto"
    assert ctx.location[1] == line_of(vector_add, "a_val = pto.load")
    assert repr(ctx) == ("<pypto.debug session: kernel 'vector_add' (pto level), block (0, 0, 0), "
                         f"paused before vector_add.py:{ctx.location[1]} (LOAD, op 4)>")
    capsys.readouterr()
    ctx.step()
    # at the pto level a lane load goes to a value, not through L1
    assert out_lines(capsys) == ["[Lanes 0-255] LOAD d_a[0..255] -> a_val (4 bytes each)"]
    np.testing.assert_array_equal(ctx.value("a_val"), a[:256])
    # vector_add has no L1 buffer at this level: its L1 holds nothing the kernel wrote
    assert np.isnan(ctx.inspect_l1(0, 16)).all()
    ctx.step(2)
    lines = out_lines(capsys)
    assert lines[0] == "[Lanes 0-255] LOAD d_b[0..255] -> b_val (4 bytes each)"
    assert lines[1] == "[Lanes 0-255] FMA a_val * 1.0 + b_val -> d_o[0..255] (4 bytes each)"
    assert lines[2] == "Kernel finished (block (0, 0, 0))."
    assert ctx.finished
    # only the focus block ran: its 256 outputs, and nothing past them
    out = host(d_o)
    np.testing.assert_array_equal(out[:256], a[:256] + b[:256])
    assert not out[256:].any()
    ctx.step()
    assert "has finished" in capsys.readouterr().out


@pytest.mark.parametrize("model", ["fused", "table"])
def test_timeline_cycles_are_the_cost_models(capsys, model):
    n = 1000
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), grid=4, block_id=3,
                           model=model)
    ctx.step()
    timeline = ctx.get_instruction_timeline()
    assert [e.inst for e in timeline] == ["LOAD", "LOAD", "FMA"]
    assert {e.model for e in timeline} == {model}
    assert all(e.lane == range(1000 - 768) for e in timeline)  # block 3: lanes 0..231 active
    # the same cycles pto.profile gives block 3 (a launch of that block alone)
    profiled = pto.profile(vector_add, grid=1, block=256, args=(d_a, d_b, d_o, 232),
                           model=model)
    by_op = {e.op_id: (e.cycle, e.end, e.pipe) for e in profiled.timeline}
    assert [(e.cycle, e.end, e.pipe) for e in timeline] == [by_op[e.op_id] for e in timeline]
    assert timeline[0].cycle < timeline[1].cycle < timeline[2].cycle
    every = ctx.get_instruction_timeline(every_op=True)
    assert {e.inst for e in every} > {"LOAD", "FMA", "GET_GLOBAL_ID"}


def test_article_timeline_loop_prints_cycle_lane_inst(capsys):
    n = 1024
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL,
                           model="table")
    ctx.step()
    capsys.readouterr()
    timeline = ctx.get_instruction_timeline()
    for entry in timeline:
        print(f"Cycle {entry.cycle}: Lane {entry.lane}: {entry.inst}")
    # the side run that produced the timeline did not write the user's output
    assert not host(d_o).any()
    # the cycles are the cost model's: those pto.profile gives the same launch
    profiled = pto.profile(vector_add, grid=1, block=256, args=(d_a, d_b, d_o, n),
                           model="table", pipeline=PTO_LEVEL)
    start = {e.op_id: e.cycle for e in profiled.timeline}
    assert out_lines(capsys) == [f"Cycle {start[e.op_id]}: Lane 0-255: {kind}"
                                 for e, kind in zip(timeline, ["LOAD", "LOAD", "FMA"])]
    assert {e.model for e in timeline} == {"table"}
    src = [int(e.source.rsplit(":", 1)[1]) for e in timeline]
    assert src == [line_of(vector_add, "a_val = pto.load"), line_of(vector_add, "b_val = pto"),
                   line_of(vector_add, "pto.fma(o + i")]
    assert {e.pipe for e in timeline} == {"VECTOR"}


def test_per_lane_lines_and_partial_blocks(capsys):
    n = 40  # lanes 40..255 fail the bounds check
    a, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL, fold=False)
    assert ctx.active_lanes() == range(40)
    capsys.readouterr()
    ctx.step()
    lines = out_lines(capsys)
    assert lines[:2] == ["[Lane 0] LOAD d_a[0] -> a_val (4 bytes)",
                         "[Lane 1] LOAD d_a[1] -> a_val (4 bytes)"]
    assert lines[-1] == "... (8 more lines)"  # 40 lanes, 32 lines shown
    ctx.fold = True
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 0-39] LOAD d_b[0..39] -> b_val (4 bytes each)"]


def test_names_fall_back_to_kernel_parameters(capsys):
    n = 256
    _, _, *args = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(*args, n), pipeline=PTO_LEVEL, names={})
    capsys.readouterr()
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 0-255] LOAD a[0..255] -> a_val (4 bytes each)"]


# stepping granularity, breakpoints, where --------------------------------------------------------


def test_stepi_visits_address_arithmetic_and_next_moves_by_line(capsys):
    n = 256
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    fma_line = line_of(vector_add, "pto.fma(o + i")
    ctx.step()
    ctx.stepi()
    capsys.readouterr()
    ctx.stepi()  # the address o + i of the fma, not an instruction step() would stop at
    assert out_lines(capsys)[0].startswith("[Lanes 0-255] ADDPTR o, i -> o + i = [0, 1, 2, 3")
    assert ctx.location[1] == fma_line
    ctx.restart()
    ctx.next()
    assert ctx.location[1] == line_of(vector_add, "b_val = pto")
    ctx.next()
    assert ctx.location[1:] == (fma_line, "FMA")


def test_breakpoints_on_lines_and_kinds(capsys):
    n = 256
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    fma_line = line_of(vector_add, "pto.fma(o + i")
    bp = ctx.break_at(fma_line)
    ctx.continue_()
    assert ctx.location[1] == fma_line
    assert f"breakpoint {bp} at line {fma_line}" in capsys.readouterr().out
    ctx.continue_()
    assert ctx.finished
    ctx.delete(bp)
    ctx.break_at("fma")
    ctx.restart()
    ctx.continue_()
    assert ctx.location[1:] == (fma_line, "FMA")
    ctx.delete()
    ctx.restart()
    ctx.break_at(f"vector_add.py:{line_of(vector_add, 'b_val = pto')}")
    ctx.continue_()
    assert ctx.location[2] == "LOAD"
    with pytest.raises(dbg.DebugError, match="no instruction .* on line 1 of vector_add.py; "
                       "lines with instructions: 14, 17, 19, 20, 25"):
        ctx.break_at(1)
    with pytest.raises(dbg.DebugError, match="no instruction from other.py; its source files: "
                       "vector_add.py"):
        ctx.break_at("other.py:19")
    with pytest.raises(dbg.DebugError, match="no MMA instruction"):
        ctx.break_at("MMA")
    with pytest.raises(dbg.DebugError, match="no breakpoint 99"):
        ctx.delete(99)


def test_where_shows_the_source_line_with_context(capsys):
    n = 256
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    capsys.readouterr()
    ctx.where()
    text = capsys.readouterr().out
    line = line_of(vector_add, "a_val = pto.load")
    assert "paused before LOAD (pto.load" in text and "on lanes 0-255" in text
    assert f"{line:>5} ->         a_val = pto.load(a + i)" in text
    assert f"{line + 1:>5}            b_val = pto.load(b + i)" in text


# variables ------------------------------------------------------------------------------------


@pto.kernel
def scaled_sum(x, out, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i) * 2.0
    pto.store(buf + tid, v)  # @stage
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))  # @tree
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(out + pto.get_block_id(), pto.load(buf))


def scaled_sum_args(n=200, block=64):
    x = (np.arange(n, dtype=np.float32) % 7) + 1
    grid = -(-n // block)
    return x, grid, device(x, np.zeros(grid, np.float32), n, block, block.bit_length() - 1)


def test_value_follows_the_loop_carried_variable_and_reads_l1_buffers(capsys):
    x, grid, args = scaled_sum_args()
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=64, pipeline=PTO_LEVEL)
    tree = line_of(scaled_sum, "# @tree")
    ctx.break_at(tree)
    ctx.continue_()
    assert ctx.value("s", lanes=0) == 32
    np.testing.assert_array_equal(ctx.value("tid"), np.arange(64))
    np.testing.assert_array_equal(ctx.value("buf"), x[:64] * 2)  # an L1 buffer: its contents
    np.testing.assert_array_equal(ctx.value("v", lanes=range(4)), x[:4] * 2)
    assert ctx.active_lanes() == range(32)
    ctx.continue_()
    assert ctx.value("s", lanes=5) == 16
    assert ctx.active_lanes() == range(16)
    ptr = ctx.value("x", lanes=[0, 1])
    assert ptr.buffer == "x" and ptr.space == "global" and list(ptr.offsets) == [0, 0]
    with pytest.raises(dbg.DebugError, match="has no variable 'nope'; its variables: .*buf"):
        ctx.value("nope")
    with pytest.raises(dbg.DebugError, match="lane 64 is not executing here"):
        ctx.value("tid", lanes=64)
    ctx.delete()
    ctx.continue_()
    np.testing.assert_allclose(host(args[1])[0], (x[:64] * 2).sum())
    with pytest.raises(dbg.DebugError, match="has finished"):
        ctx.value("s")


def test_value_before_assignment_says_so():
    x, grid, args = scaled_sum_args()
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=64, pipeline=PTO_LEVEL)
    with pytest.raises(dbg.DebugError, match="variable 's' has no value at .* assigned on line"):
        ctx.value("s")


# L1 -------------------------------------------------------------------------------------------


def test_inspect_l1_reads_the_block_arena_by_element_offset():
    x, grid, args = scaled_sum_args()
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=64, block_id=1,
                           pipeline=PTO_LEVEL)
    ctx.break_at(line_of(scaled_sum, "barrier_block()"))
    ctx.continue_()
    # `buf` is the kernel's only L1 buffer: at offset 0, 64 floats of block 1's staged values
    assert ctx.l1_map()[0][:3] == (0, 256, "buf")
    np.testing.assert_array_equal(ctx.inspect_l1(0, 64), x[64:128] * 2)
    np.testing.assert_array_equal(ctx.inspect_l1(60, 4), x[124:128] * 2)
    np.testing.assert_array_equal(ctx.inspect_l1(0, 4, dtype=np.int32),
                                  (x[64:68] * 2).view(np.int32))
    assert np.isnan(ctx.inspect_l1(64, 8)).all()  # past the buffer: nothing written there
    np.testing.assert_array_equal(ctx.inspect_l1(0, 2, block=(1, 0, 0)), x[64:66] * 2)
    with pytest.raises(dbg.DebugError, match=r"runs block \(1, 0, 0\) only; restart\(block_id=0"):
        ctx.inspect_l1(0, 4, block=0)
    with pytest.raises(dbg.DebugError, match="outside the block's L1 of"):
        ctx.inspect_l1(10**6, 4)
    # NumPy reads "1,,2" as a struct spec and raised SyntaxError (found by the debugger fuzzer)
    for bad in ("1,,2", "f4,,", "(99999999999999999999999,)f4", "no_such_type"):
        with pytest.raises(pto.PtoError, match="is not a dtype|is not supported"):
            ctx.inspect_l1(0, 4, dtype=bad)


def test_npu_level_staging_slots_hold_each_load():
    n = 300
    a, b, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), grid=2, block_id=1)
    ctx.step(2)
    slots = sorted(off for off, _, _, _ in ctx.l1_map())
    assert len(slots) == 3  # one staging slot per lane memory instruction (2 loads, the fma)
    # block 1, lanes 0..43 active: the slots hold a[256:300], b[256:300]
    np.testing.assert_array_equal(ctx.inspect_l1(slots[0] // 4, 44), a[256:300])
    np.testing.assert_array_equal(ctx.inspect_l1(slots[1] // 4, 44), b[256:300])
    assert np.isnan(ctx.inspect_l1(slots[2] // 4, 44)).all()  # the fma has not run yet


# block and warp --------------------------------------------------------------------------------


def test_choice_of_block_runs_that_block_with_its_grid_ids(capsys):
    n = 1024
    a, b, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), grid=(4, 1, 1),
                           pipeline=PTO_LEVEL, block_id=2)
    np.testing.assert_array_equal(ctx.value("i"), np.arange(512, 768))
    capsys.readouterr()
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 0-255] LOAD d_a[512..767] -> a_val (4 bytes each)"]
    ctx.continue_()
    out = host(d_o)
    np.testing.assert_array_equal(out[512:768], a[512:768] + b[512:768])
    assert not out[:512].any() and not out[768:].any()
    ctx.restart(block_id=3)
    np.testing.assert_array_equal(ctx.value("i", lanes=0), 768)
    with pytest.raises(dbg.DebugError, match=r"block 4 is not in the grid \(4, 1, 1\)"):
        ctx.restart(block_id=4)


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse"])
def test_choice_of_warp(capsys, schedule):
    x, grid, args = scaled_sum_args(n=128, block=128)
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=128, pipeline=PTO_LEVEL,
                           warp=2, schedule=schedule)
    capsys.readouterr()
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 64-95] LOAD x[64..95] -> %load (4 bytes each)"]
    np.testing.assert_array_equal(ctx.value("tid"), np.arange(64, 96))
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 64-95] STORE v -> L1[64..95] (4 bytes each)"]
    # the block barrier (every warp executes it)
    ctx.step()
    assert out_lines(capsys) == ["[Lanes 64-95] BARRIER_BLOCK"]
    ctx.delete()
    ctx.continue_()
    np.testing.assert_allclose(host(args[1])[0], (x * 2).sum())
    with pytest.raises(dbg.DebugError, match="warp 4 is not in a block of 128 lanes"):
        ctx.restart(warp=4)


# errors ---------------------------------------------------------------------------------------


@pto.kernel
def overrun(o, n):
    i = pto.get_global_id()
    v = pto.cast(i, pto.float32)
    pto.store(o + i + n, v)  # @bad


def test_errors_stop_the_session_at_the_instruction_with_the_launch_diagnostics(capsys):
    t = pto.alloc_tensor(64 * 4)
    # what a launch says
    pto.launch(overrun, grid=1, block=64, args=(t, 10))
    with pytest.raises(pto.MemoryAccessError) as launched:
        pto.sync()
    ctx = dbg.debug_kernel(overrun, args=(t, 10), block=64, pipeline=PTO_LEVEL)
    capsys.readouterr()
    ctx.continue_()
    assert isinstance(ctx.error, pto.MemoryAccessError)
    assert str(ctx.error) == str(launched.value)
    text = capsys.readouterr().out
    bad = line_of(overrun, "# @bad")
    assert f"Kernel error at test_session.py:{bad} (STORE" in text
    assert f"MemoryAccessError: {launched.value}" in text
    assert ctx.location[1:] == (bad, "STORE")
    # the failing instruction's operands are still readable
    np.testing.assert_array_equal(ctx.value("v", lanes=range(3)), [0.0, 1.0, 2.0])
    ctx.step()
    assert "stopped with an error" in capsys.readouterr().out
    ctx.restart()
    assert ctx.error is None and not ctx.finished


@pto.kernel
def warp_barrier_only(o):
    i = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + i, pto.cast(i, pto.float32))
    pto.barrier()  # orders one warp only: lanes read what another warp wrote
    pto.store(o + i, pto.load(buf + 63 - i))  # @race


def test_a_race_stops_the_session_with_the_launch_diagnostics(capsys):
    t = pto.alloc_tensor(64 * 4)
    pto.launch(pto.compile(warp_barrier_only, args=(t,), block=64, pipeline=""), grid=1,
               block=64, args=(t,))
    with pytest.raises(pto.RaceError) as launched:
        pto.sync()
    ctx = dbg.debug_kernel(warp_barrier_only, args=(t,), block=64, pipeline="")
    ctx.continue_()
    assert isinstance(ctx.error, pto.RaceError)
    assert str(ctx.error) == str(launched.value)
    assert ctx.location[1:] == (line_of(warp_barrier_only, "# @race"), "LOAD")


# a tile kernel ----------------------------------------------------------------------------------


def test_matmul_session_steps_tile_instructions(capsys):
    m = n = k = 64
    tile = 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    args = device(a, b, np.zeros(m * n, np.float32), m, n, k, tile, tile, tile)
    ctx = dbg.debug_kernel(matmul_tile, args=args, grid=(2, 2), block=64, pipeline=PTO_LEVEL)
    ctx.break_at("MMA")
    ctx.continue_()
    assert ctx.location[2] == "MMA"
    assert ctx.active_lanes() == range(64)
    timeline = ctx.get_instruction_timeline()
    kinds = [e.inst for e in timeline]
    assert kinds.count("MMA") == 2 and kinds.count("ASYNC_LOAD") == 4
    mma = next(e for e in timeline if e.inst == "MMA")
    assert mma.pipe == "CUBE" and str(mma.lane) == "0-63"
    assert [e.cycle for e in timeline] == sorted(e.cycle for e in timeline)
    ctx.delete()
    ctx.continue_()
    c = host(args[2]).reshape(m, n)
    np.testing.assert_allclose(c[:tile, :tile], (a.reshape(m, k) @ b.reshape(k, n))[:tile, :tile],
                               rtol=1e-4, atol=1e-4)


def test_bad_arguments_are_clear_errors():
    _, _, d_a, d_b, d_o = vector_add_data(64)
    with pytest.raises(dbg.DebugError, match="block 1 is not in the grid"):
        dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, 64), pipeline=PTO_LEVEL, block_id=1)
    with pytest.raises(pto.LaunchError, match="takes 4 arguments"):
        dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o), pipeline=PTO_LEVEL)
    with pytest.raises(dbg.DebugError, match="break_at"):
        dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, 64), pipeline=PTO_LEVEL).break_at("")


def test_sessions_run_after_any_pipeline(capsys):
    n = 256
    a, b, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n),
                           pipeline="pto-verify-barriers,canonicalize,cse")
    assert ctx.location[1] == line_of(vector_add, "a_val = pto.load")  # lines survive passes
    ctx.continue_()
    np.testing.assert_array_equal(host(d_o), a + b)


def test_stepi_enters_branches_one_op_at_a_time(capsys):
    n = 256
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    ctx.break_at(line_of(vector_add, "i = pto.get_global_id"))
    ctx.restart()  # the breakpoint is before the first instruction: the session stops there
    assert ctx.location[2] == "GET_GLOBAL_ID"
    capsys.readouterr()
    ctx.stepi(3)
    lines = out_lines(capsys)
    assert lines[0].startswith("[Lanes 0-255] GET_GLOBAL_ID -> i = [0, 1, 2, 3")
    assert lines[1].startswith("[Lanes 0-255] CMPI i, n -> i < n = True")
    assert lines[2] == "[Lanes 0-255] IF i < n"
    assert ctx.location[2] == "ADDPTR"  # inside the if, not past it


def test_ctrl_c_pauses_a_running_kernel(capsys, monkeypatch):
    from pypto.backend.interpreter.instruments import Step

    n = 256
    _, _, d_a, d_b, d_o = vector_add_data(n)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n), pipeline=PTO_LEVEL)
    calls = []
    wait = Step._wait_for_pause

    def interrupted_once(self):
        calls.append(1)
        if len(calls) == 1:  # as if Ctrl-C arrived while the controller waited
            raise KeyboardInterrupt
        wait(self)

    monkeypatch.setattr(Step, "_wait_for_pause", interrupted_once)
    capsys.readouterr()
    ctx.continue_()
    assert "Interrupted: paused at" in capsys.readouterr().out
    assert not ctx.finished and ctx.location is not None


def test_timeline_of_a_failing_kernel_stops_at_the_failure():
    t = pto.alloc_tensor(64 * 4)
    ctx = dbg.debug_kernel(overrun, args=(t, 10), block=64, pipeline=PTO_LEVEL)
    assert [e.inst for e in ctx.get_instruction_timeline()] == []  # the store failed
    with pytest.raises(dbg.DebugError, match="unknown cost model 'fast'; use one of: fused"):
        dbg.debug_kernel(overrun, args=(t, 10), block=64, model="fast")


@pto.kernel
def histogram(x, h, n):
    i = pto.get_global_id()
    if i < n:
        old = pto.atomic_add(h + pto.load(x + i), 1)  # noqa: F841


def test_atomic_add_lines_name_the_updated_element(capsys):
    x = (np.arange(64) % 4).astype(np.int32)
    args = device(x, np.zeros(4, np.int32), 64)
    ctx = dbg.debug_kernel(histogram, args=args, block=64, pipeline=PTO_LEVEL, names={})
    ctx.step()
    capsys.readouterr()
    ctx.step()
    lines = out_lines(capsys)
    # lanes 4k..4k+3 add to h[0..3]: one line per group of four
    assert lines[0] == "[Lanes 0-3] ATOMIC_ADD h[0..3] += 1 -> old (4 bytes each)"
    assert lines[15] == "[Lanes 60-63] ATOMIC_ADD h[0..3] += 1 -> old (4 bytes each)"
    np.testing.assert_array_equal(host(args[1], np.int32), np.bincount(x, minlength=4))


def test_a_dropped_session_releases_its_suspended_launch():
    import gc

    _, _, d_a, d_b, d_o = vector_add_data(256)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, 256), pipeline=PTO_LEVEL)
    thread = ctx._step._thread
    assert thread.is_alive()  # suspended before the first LOAD
    del ctx
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    with dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, 256), pipeline=PTO_LEVEL) as ctx:
        thread = ctx._step._thread
    assert not thread.is_alive()


@pto.kernel
def two_stages(x, out):
    tid = pto.get_local_id()
    first = pto.alloc_local(64)
    pto.store(first + tid, pto.load(x + tid) + 1.0)
    pto.barrier_block()
    second = pto.alloc_local(64)
    pto.store(second + tid, pto.load(first + 63 - tid) * 2.0)  # @second
    pto.barrier_block()
    pto.store(out + tid, pto.load(second + tid))


def test_inspect_l1_follows_the_offsets_pto_allocate_l1_gives(capsys):
    x = np.arange(64, dtype=np.float32)
    args = device(x, np.zeros(64, np.float32))
    ctx = dbg.debug_kernel(two_stages, args=args, block=64,
                           pipeline="pto-verify-barriers,pto-allocate-l1")
    placed = {name: off for off, _, name, _ in ctx.l1_map()}
    assert set(placed) == {"first", "second"}
    ctx.break_at(line_of(two_stages, "# @second") + 1)
    ctx.continue_()
    np.testing.assert_array_equal(ctx.inspect_l1(placed["first"] // 4, 64), x + 1)
    np.testing.assert_array_equal(ctx.inspect_l1(placed["second"] // 4, 64), (x[::-1] + 1) * 2)
    ctx.delete()
    ctx.continue_()
    np.testing.assert_array_equal(host(args[1]), (x[::-1] + 1) * 2)


def test_a_block_with_no_work_says_so_at_once(capsys):
    _, _, d_a, d_b, d_o = vector_add_data(1024)
    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, 100), grid=4, block_id=2,
                           pipeline=PTO_LEVEL)
    assert ctx.finished and ctx.location is None
    assert "Kernel finished (block (2, 0, 0))." in capsys.readouterr().out


# bad arguments are DebugErrors at once (issue 22) ------------------------------------------------


def test_huge_lane_ranges_are_refused_without_building_them():
    """`value(lanes=range(10**9))` used to build 10^9 lane ids first (4.7 GB at 10^8)."""
    x, grid, args = scaled_sum_args()
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=64, pipeline=PTO_LEVEL)
    ctx.step(3)
    for lanes in (range(10**9), range(10**30), range(5, 10**18, 7), range(-1, 3)):
        with pytest.raises(dbg.DebugError, match="is not executing here"):
            ctx.value("i", lanes=lanes)
    with pytest.raises(dbg.DebugError, match="below 2\\^63"):
        ctx.value("i", lanes=[1, 2**70])
    for bad in (1.5, "3", True, {1, 2}, [1.0]):
        with pytest.raises(dbg.DebugError, match="lanes must be an int, a range"):
            ctx.value("i", lanes=bad)
    np.testing.assert_array_equal(ctx.value("i", lanes=range(60, 64)), np.arange(60, 64))
    assert ctx.value("i", lanes=range(3, 3)).size == 0


def test_counts_and_offsets_must_be_ints():
    x, grid, args = scaled_sum_args()
    ctx = dbg.debug_kernel(scaled_sum, args=args, grid=grid, block=64, pipeline=PTO_LEVEL)
    for call in (lambda: ctx.step("x"), lambda: ctx.stepi(1.5), lambda: ctx.step(True),
                 lambda: ctx.inspect_l1(0.5, 4), lambda: ctx.inspect_l1("0", 4),
                 lambda: ctx.inspect_l1(0, 4.0)):
        with pytest.raises(dbg.DebugError, match="must be an int"):
            call()
    ctx.step(np.int64(2))  # NumPy ints are ints


def test_every_entry_point_checks_the_launch_shape_at_once():
    """debug_kernel used to skip the lane-count check: OverflowError, or minutes of work."""
    x, grid, args = scaled_sum_args()
    for grid_, block_ in (((2**31 - 1), 1024), ((2**16, 2**15), 1024), (1, 4096), (0, 64)):
        with pytest.raises(pto.LaunchError, match="dbg.debug_kernel of kernel 'scaled_sum'"):
            dbg.debug_kernel(scaled_sum, args=args, grid=grid_, block=block_,
                             pipeline=PTO_LEVEL)
