"""Which lane and element a failed native launch names: the interpreter's (its lockstep order
of detection, docs/native.md#errors), found by replaying the launch on the interpreter
(pypto/backend/native/replay.py) — straight-line code, `for`, nested and SIMT `while` loops,
loops around a barrier, several blocks, division by zero; the error compiled code detects
itself (replay off) where one lane fails; kernels whose replay could differ keep it."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import replay


@pto.kernel
def two_reads(x, y, out):
    """Lane i reads y[i + 60] then x[i * 100]: natively lane 1's second read fails first."""
    i = pto.get_global_id()
    a = y[i + 60]
    b = x[i * 100]
    out[i] = a + b


@pto.kernel
def strided_l1(x, out, s):
    """buf[t * 4 + k * s]: with s = 8, lane 16 fails in iteration 0, lane 10 in iteration 3."""
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    buf[t] = x[t]
    buf[t + 32] = x[t]
    pto.barrier()
    acc = 0.0
    for k in range(4):
        acc += buf[t * 4 + k * s]
    out[pto.get_global_id()] = acc


@pto.kernel
def nested_l1(x, out):
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    buf[t] = x[t]
    buf[t + 32] = x[t]
    pto.barrier()
    acc = 0.0
    for k in range(3):
        for j in range(2):
            acc += buf[t * 2 + k * 9 + j * 5]
    out[pto.get_global_id()] = acc


@pto.kernel
def while_l1(x, out):
    """A SIMT while: lane t runs t % 5 + 1 trips, reading buf[2 * t + 9 * trip]: lane 28 fails
    in trip 1, lane 14 in trip 4."""
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    buf[t] = x[t]
    buf[t + 32] = x[t]
    pto.barrier()
    acc = 0.0
    k = 0
    while k < t % 5 + 1:
        acc += buf[t * 2 + 9 * k]
        k += 1
    out[pto.get_global_id()] = acc


@pto.kernel
def barrier_loop(x, out):
    """A loop around a barrier (block-level loop, phases): lane t reads buf[t * (k + 1)]."""
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    acc = 0.0
    for k in range(3):
        buf[t] = x[t] + 1.0
        buf[t + 32] = x[t]
        pto.barrier()
        acc += buf[t * 2 + k * 20]
        pto.barrier()
    out[pto.get_global_id()] = acc


@pto.kernel
def grid_loop(x, out, n):
    """No L1 (the interpreter's grid mode: every block at once): block 0 fails in its last
    iteration, block 1 in its first."""
    b = pto.get_block_id()
    t = pto.get_local_id()
    acc = 0.0
    for k in range(4):
        acc += x[b * (n - 8) + t + k * 12 * (1 - b)]
    out[pto.get_global_id()] = acc


@pto.kernel
def divide_in_loop(x, out, d):
    """Lane t divides by d[t * 3 + k]: zeros at lane 7 iteration 0, lane 2 iteration 2."""
    t = pto.get_global_id()
    acc = 0
    for k in range(3):
        acc += 100 // d[t * 3 + k]
    out[t] = acc


CASES = {
    "two reads": (two_reads, 1, 32, lambda: (np.ones(64, np.float32), np.ones(64, np.float32),
                                             np.zeros(32, np.float32))),
    "for": (strided_l1, 1, 32, lambda: (np.ones(64, np.float32), np.zeros(32, np.float32), 8)),
    "nested for": (nested_l1, 1, 32, lambda: (np.ones(64, np.float32),
                                              np.zeros(32, np.float32))),
    "while": (while_l1, 1, 32, lambda: (np.ones(64, np.float32), np.zeros(32, np.float32))),
    "barrier loop": (barrier_loop, 1, 32, lambda: (np.ones(64, np.float32),
                                                   np.zeros(32, np.float32))),
    "blocks": (grid_loop, 2, 32, lambda: (np.ones(64, np.float32), np.zeros(64, np.float32),
                                          64)),
    "division": (divide_in_loop, 1, 16, lambda: (
        np.zeros(16, np.int32), np.zeros(16, np.int32),
        np.array([0 if i in (7 * 3, 2 * 3 + 2) else 1 for i in range(48)], np.int32))),
}


def _messages(kernel, grid, block, make):
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.KernelError) as info:
            pto.launch(kernel, grid, block, make(), backend=backend)
        messages.append(str(info.value))
    return messages


@pytest.mark.parametrize("case", list(CASES))
def test_native_errors_name_the_interpreters_lane_and_element(case, monkeypatch):
    kernel, grid, block, make = CASES[case]
    monkeypatch.setattr(replay, "ENABLED", False)
    compiled_only = _messages(kernel, grid, block, make)
    monkeypatch.setattr(replay, "ENABLED", True)
    interp, native = _messages(kernel, grid, block, make)
    assert native == interp
    expected = {"two reads": "'y' at element 64 (valid elements 0..63, 64 x float32) by block "
                             "(0, 0, 0), lane (4, 0, 0)",
                "for": "element 64 (valid elements 0..63, 64 x float32) by block (0, 0, 0), "
                       "lane (16, 0, 0)",
                "nested for": "element 65 (valid elements 0..63, 64 x float32) by block "
                              "(0, 0, 0), lane (30, 0, 0)",
                "while": "element 65 (valid elements 0..63, 64 x float32) by block (0, 0, 0), "
                         "lane (28, 0, 0)",
                "barrier loop": "element 64 (valid elements 0..63, 64 x float32) by block "
                                "(0, 0, 0), lane (22, 0, 0)",
                "blocks": "'x' at element 64 (valid elements 0..63, 64 x float32) by block "
                          "(1, 0, 0), lane (8, 0, 0)",
                "division": "integer division by zero in block (0, 0, 0), lane (7, 0, 0)"}[case]
    assert expected in interp, interp
    # compiled code alone meets another failure first (a block-level loop: the same one)
    assert (compiled_only[1] == interp) == (case == "barrier loop")


@pto.kernel
def shifted(x, out, s):
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    buf[t] = x[t]
    pto.barrier()
    out[pto.get_global_id()] = buf[t + s]


def test_compiled_code_names_a_single_failing_op_itself_and_the_next_launch_runs(monkeypatch):
    """Replay off: lanes 24.. fail at one op, the lowest in both orders; the failed launch
    leaves no error behind (a phase's lane loop reads the record's status)."""
    monkeypatch.setattr(replay, "ENABLED", False)
    x = np.arange(64, dtype=np.float32)
    interp, native = _messages(shifted, 1, 32, lambda: (x, np.zeros(32, np.float32), 40))
    assert interp == native and "element 64" in native and "lane (24, 0, 0)" in native
    out = np.zeros(32, np.float32)
    pto.launch(shifted, 1, 32, (x, out, 0), backend="native")
    assert np.array_equal(out, x[:32])


@pto.kernel
def doubled_index(a, x, out):
    """a is doubled in place, then indexes x: the replay would read the doubled values."""
    i = pto.get_global_id()
    a[i] = a[i] * 2
    out[i] = x[a[i]]


def test_kernels_whose_replay_could_differ_keep_the_compiled_error():
    a = np.arange(32, dtype=np.int32)
    args = (a, np.ones(40, np.float32), np.zeros(32, np.float32))
    func = pto.compile(doubled_index, block=32, args=args).func
    assert "decides this access" in replay.replay_refusal(func, {0})
    assert replay.replay_refusal(func, set()) is None  # (nothing written: exact)
    with pytest.raises(pto.MemoryAccessError) as info:  # lane 20 reads x[40]
        pto.launch(doubled_index, 1, 32, args, backend="native")
    assert "test_error_order.py:" in str(info.value) and "'x' at element 40" in str(info.value)
    assert "lane (20, 0, 0)" in str(info.value)
