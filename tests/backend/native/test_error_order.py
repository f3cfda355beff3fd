"""Which lane an error names when several lanes fail: the interpreter's order (each op over
every lane of a batch of blocks), on both backends (docs/native.md#errors)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


def _messages(kernel, grid, block, arrays, scalars=(), error=pto.KernelError):
    out = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        with pytest.raises(error) as info:
            pto.launch(kernel, grid, block, (*copies, *scalars), backend=backend)
        out.append(str(info.value))
    return out


@pto.kernel
def two_loads(x, out):
    i = pto.get_global_id()
    a = pto.load(x + i * 3)   # out of range for the last lanes (element 30 and up)
    b = pto.load(x + (30 - i))  # out of range for lane 0 only, one op later
    pto.store(out + i, a + b)


@pytest.mark.parametrize("grid,block,lane", [(1, 16, "lane (10, 0, 0)"),
                                             (2, 8, "block (1, 0, 0), lane (2, 0, 0)")])
def test_the_first_op_to_fail_names_its_lane_not_the_first_lane_to_fail(grid, block, lane):
    interp, native = _messages(two_loads, grid, block,
                               [np.zeros(30, np.float32), np.zeros(16, np.float32)],
                               error=pto.MemoryAccessError)
    assert interp == native
    assert "element 30 " in native and lane in native
    assert "test_error_order.py:25:" in native  # the first load's line, not the second's


@pto.kernel
def l1_in_a_loop(out, n):
    buf = pto.alloc_local(64, pto.float32)
    lane = pto.get_local_id()
    pto.fill(buf, 1.0, 64)
    pto.barrier()
    acc = 0.0
    for j in range(n):
        acc = acc + pto.load(buf + (lane * 9 + j * 8))  # lane 7 fails at j = 1, lane 0 at 8
    pto.store(out + lane, acc)


def test_an_l1_read_in_a_loop_names_the_lane_of_the_earliest_trip():
    interp, native = _messages(l1_in_a_loop, 2, 8, [np.zeros(16, np.float32)], (10,),
                               error=pto.MemoryAccessError)
    assert interp == native
    assert "element 71 " in native and "block (0, 0, 0), lane (7, 0, 0)" in native


@pto.kernel
def two_divisions(x, y, out):
    i = pto.get_global_id()
    a = pto.load(x + i) // pto.load(y + i)          # y[5] == 0
    b = pto.load(x + i) // (pto.load(y + i) - 1)    # y[0] == 1
    pto.store(out + i, a + b)


def test_a_division_by_zero_names_the_interpreters_lane():
    x = np.arange(8, dtype=np.int32) + 10
    y = np.full(8, 3, np.int32)
    y[5], y[0] = 0, 1
    interp, native = _messages(two_divisions, 1, 8, [x, y, np.zeros(8, np.int32)])
    assert interp == native
    assert "integer division by zero" in native and "lane (5, 0, 0)" in native


@pto.kernel
def print_then_fail(x, out):
    i = pto.get_global_id()
    pto.printf("lane %d\n", i)
    pto.store(out + i, pto.load(x + (i + 5)))  # lanes 3.. are out of range


def test_the_interpreters_rerun_prints_nothing(capfd):
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(pto.MemoryAccessError, match=r"lane \(3, 0, 0\)"):
        pto.launch(print_then_fail, 1, 8, (x, out), backend="native")
    printed = capfd.readouterr().out.splitlines()
    # the compiled lanes 0..3 printed before lane 3 failed; the re-run added nothing
    assert printed == [f"[block (0, 0, 0) lane ({i}, 0, 0)] lane {i}" for i in range(4)]
