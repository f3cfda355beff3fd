"""Instruments watch the one executor: counts equal hand counts, traces show copies issued
before they are waited for, stepping visits ops in program order without changing results,
and every instrument works the same in every execution mode."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.backend.interpreter.instruments import Chain, Count, Instrument, Step, Trace
from tests.conftest import to_device

from tests.kernels.test_reduction import block_sum

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402


def _device(*arrays):
    args, _ = to_device(arrays)
    pto.sync()
    return list(args)


def _host(t, dtype=np.float32):
    out = np.empty(t.size, dtype=dtype)
    pto.memcpy_d2h(out, t)
    return out


def _vector_add(n=1000):
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    args = _device(a, b, np.zeros(n, np.float32), n)
    ck = pto.compile(vector_add, args=args, block=256)
    return ck, args, a + b


def _names(table, ids):
    return [table[i].name for i in ids]


def test_count_equals_a_hand_count_on_vector_add():
    ck, args, _ = _vector_add(1000)
    count = Count()
    ck.executable.run((4, 1, 1), (256, 1, 1), args, instrument=count)
    table = ck.executable.op_table
    by_name = {table[i].name: (count.executions[i], count.lanes[i]) for i in count.executions}
    # 4 blocks x 8 warps = 32 warps run the id and the bound check on 1024 lanes; 1000 lanes
    # (31.25 warps -> 32 warps with an active lane) pass it and do the loads and the fma
    assert by_name["pto.get_global_id"] == (32, 1024)
    assert by_name["arith.cmpi"] == (32, 1024)
    loads = [i for i in count.executions if table[i].name == "pto.load"]
    assert [(count.executions[i], count.lanes[i]) for i in loads] == [(32, 1000), (32, 1000)]
    assert by_name["pto.fma"] == (32, 1000)
    assert count.by_kind()["pto.load"] == 64


def test_count_of_a_branch_taken_by_a_few_lanes():
    n = 40  # one block of 256 lanes: lanes 0..39 (warps 0 and 1) pass the check
    ck, args, _ = _vector_add(n)
    count = Count()
    ck.executable.run((1, 1, 1), (256, 1, 1), args, instrument=count)
    fma = next(i for i in count.executions if ck.executable.op_table[i].name == "pto.fma")
    assert (count.executions[fma], count.lanes[fma]) == (2, 40)


def _reduction_args(n=3000, block=256):
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    grid = (n + block - 1) // block
    return x, grid, block, _device(x, np.zeros(grid, np.float32), n, block,
                                   block.bit_length() - 1)


@pytest.mark.parametrize("options", [{}, {"batch_blocks": False}, {"schedule": "in_order"},
                                     {"schedule": "random:4"}],
                         ids=["batch", "block", "warp-in-order", "warp-random"])
def test_counts_and_results_do_not_depend_on_the_execution_mode(options):
    x, grid, block, args = _reduction_args()
    ck = pto.compile(block_sum, args=args, block=block)
    exe = Executable(ck.func, **options)
    count = Count()
    exe.run((grid, 1, 1), (block, 1, 1), args, instrument=count)
    partial = _host(args[1])
    # the instrumented run computes what the plain one does (and what NumPy says)
    expected = np.add.reduceat(np.pad(x, (0, grid * block - x.size)).reshape(grid, block),
                               [0], axis=1)[:, 0]
    np.testing.assert_allclose(partial, expected, rtol=1e-5)
    plain = Executable(ck.func)
    args[1].data[:] = 0
    plain.run((grid, 1, 1), (block, 1, 1), args)
    np.testing.assert_array_equal(_host(args[1]), partial)
    reference = Count()
    Executable(ck.func, batch_blocks=False).run((grid, 1, 1), (block, 1, 1), args,
                                                instrument=reference)
    assert count.executions == reference.executions
    assert count.lanes == reference.lanes
    # the tree's 8 levels: the store inside `if tid < s` runs 128, 64, ..., 1 lanes per block
    table = exe.op_table
    stores = [i for i in count.lanes if table[i].name == "pto.store"]
    assert sorted(count.lanes[i] for i in stores) == sorted([grid * 255, grid * 256, grid])


def test_trace_of_the_article_matmul_issues_copies_before_waiting_for_them():
    m = n = k = 128
    tile = 64
    rng = np.random.default_rng(2)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    args = _device(a, b, np.zeros(m * n, np.float32), m, n, k, tile, tile, tile)
    ck = pto.compile(matmul_tile, args=args, block=64)
    trace = Trace()
    ck.executable.run((2, 2, 1), (64, 1, 1), args, instrument=trace)
    c = _host(args[2]).reshape(m, n)
    np.testing.assert_allclose(c, a.reshape(m, k) @ b.reshape(k, n), rtol=1e-4, atol=1e-4)
    table = ck.executable.op_table
    classes = trace.block_classes()
    assert sorted(b for blocks, _ in classes for b in blocks) == [0, 1, 2, 3]
    assert len(classes) == 1  # every block runs the same instruction stream
    events = classes[0][1]
    issued = {e.token: i for i, e in enumerate(events) if e.kind == "issue"}
    waited = {e.token: i for i, e in enumerate(events) if e.kind == "wait"}
    assert len(issued) == 4  # two k-steps, two loads each
    assert set(waited) == set(issued)
    assert all(issued[t] < waited[t] for t in issued)
    kinds = [table[e.op_id].name for e in events]
    assert kinds.count("pto.mma") == 2 and kinds.count("pto.tile_store") == 1
    pipes = {table[e.op_id].pipe for e in events if e.kind == "issue"}
    assert pipes == {"MTE_IN"}
    assert table[events[[i for i, e in enumerate(events)
                         if table[e.op_id].name == "pto.mma"][0]].op_id].pipe == "CUBE"
    # block-level instructions involve the whole block
    assert all(e.lanes == 64 for e in events if e.kind in ("issue", "wait"))
    # every event names a line of the Python kernel
    assert all(table[e.op_id].location.startswith(str(Path(matmul_tile.fn.__code__.co_filename)))
               for e in events)


def test_trace_groups_blocks_with_identical_streams():
    ck, args, _ = _vector_add(1000)
    trace = Trace()
    ck.executable.run((4, 1, 1), (256, 1, 1), args, instrument=trace)
    classes = trace.block_classes()
    assert [blocks for blocks, _ in classes] == [[0, 1, 2], [3]]
    table = ck.executable.op_table
    full, tail = classes[0][1], classes[1][1]
    assert [table[e.op_id].name for e in full] == [table[e.op_id].name for e in tail]
    fma_lanes = [e.lanes for e in tail if table[e.op_id].name == "pto.fma"]
    assert fma_lanes == [1000 - 768]
    assert trace.block_events(3) == tail


def test_stepping_through_vector_add_visits_ops_in_program_order():
    ck, args, expected = _vector_add(300)
    step = Step()
    exe = ck.executable
    step.start(lambda: exe.run((2, 1, 1), (256, 1, 1), args, instrument=step))
    visited = []
    seen_values = {}
    while not step.finished:
        pause = step.paused
        assert pause is not None
        visited.append(pause.op_id)
        info = exe.op_table[pause.op_id]
        if info.name == "pto.fma":  # the operands are live: read them by SSA value
            a_val = exe.op_table.read(pause.locals(), info.op.operands[1], pause.ctx)
            seen_values[pause.ctx.first_lane] = np.array(a_val)
        step.resume(1)
    assert step.error is None
    assert visited == sorted(visited)  # straight-line code (the if is a region): in order
    assert [exe.op_table[i].name for i in visited][-1] == "func.return"
    np.testing.assert_array_equal(_host(args[2])[:300], expected)
    lanes = seen_values[0]
    np.testing.assert_array_equal(lanes[:300], np.arange(300, dtype=np.float32))


def test_step_stops_where_asked_and_reports_kernel_errors_at_the_instruction():
    @pto.kernel
    def overrun(o, n):
        i = pto.get_global_id()
        pto.store(o + i + n, 1.0)

    t = pto.alloc_tensor(64 * 4)
    ck = pto.compile(overrun, args=(t, 10), block=64)
    stores = [i.id for i in ck.executable.op_table if i.name == "pto.store"]
    step = Step(stop=lambda info, ctx, mask: info.name == "pto.store")
    step.start(lambda: ck.executable.run((1, 1, 1), (64, 1, 1), (t, 10), instrument=step))
    assert step.paused is not None and step.paused.op_id != stores[0]
    step.resume(0)  # continue to the breakpoint
    assert step.paused is not None and step.paused.op_id == stores[0]
    step.resume(1)
    assert step.finished
    assert isinstance(step.error, pto.MemoryAccessError)


def test_step_close_abandons_a_suspended_launch():
    ck, args, _ = _vector_add(100)
    step = Step()
    step.start(lambda: ck.executable.run((1, 1, 1), (256, 1, 1), args, instrument=step))
    assert step.paused is not None
    step.close()
    assert step._thread is not None and not step._thread.is_alive()


def test_instruments_chain_and_leave_the_plain_code_without_hooks():
    ck, args, expected = _vector_add(1000)
    exe = ck.executable
    calls = []

    class Recorder(Instrument):
        def before(self, op_id, ctx, mask):
            calls.append(op_id)

    count = Count()
    exe.run((4, 1, 1), (256, 1, 1), args, instrument=Chain(Recorder(), count))
    assert len(calls) == sum(1 for i in exe.op_table if i.hooked)
    assert count.executions
    plain = exe.variant(True)
    assert "_ins" not in plain.source
    assert "_ins.before" in exe.variant(True, True).source
    np.testing.assert_array_equal(_host(args[2]), expected)


def test_op_ids_survive_passes_and_name_python_lines():
    ck, args, _ = _vector_add(64)
    ck2 = pto.compile(vector_add, args=args, block=256, pipeline="canonicalize,cse")
    for table in (ck.executable.op_table, ck2.executable.op_table):
        loads = [i for i in table if i.name == "pto.load"]
        assert loads and all(i.line is not None and "vector_add.py" in i.location
                             for i in loads)
