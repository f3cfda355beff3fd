"""`pto.printf`: one line per active lane, prefixed `[block (x, y, z) lane (x, y, z)] `.

Output appears when the launch runs (at the next synchronising call: launches are
asynchronous), in block order then lane order for one printf; the lines of one lane appear in
its program order. Captured with pytest's `capfd` (the interpreter writes to stdout).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import pypto as pto

PREFIX = re.compile(r"^\[block \((\d+), (\d+), (\d+)\) lane \((\d+), (\d+), (\d+)\)\] (.*)$")


@pto.kernel
def print_values(x, n):
    i = pto.get_global_id()
    if i < n:
        pto.printf("x[%d] = %.2f", i, pto.load(x + i))


@pto.kernel
def print_ids():
    pto.printf("ids %d %d %d | %d %d %d", pto.get_block_id(0), pto.get_block_id(1),
               pto.get_block_id(2), pto.get_local_id(0), pto.get_local_id(1),
               pto.get_local_id(2))


@pto.kernel
def print_formats(xi, xh, n):
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(xi + i)
    pto.printf("hex %x, %5d|, 100%%, odd=%d", v, v, v % 2 == 1)
    pto.printf("half %.3f", pto.load(xh + i))


@pto.kernel
def print_in_loop_with_barrier(n):
    """Block mode (a barrier is present) and a loop: per-lane program order is kept."""
    tid = pto.get_local_id()
    for k in range(n):
        if tid < 2:
            pto.printf("step %d", k)
        pto.barrier_block()


def parse(text: str) -> list[tuple[tuple[int, ...], tuple[int, ...], str]]:
    rows = []
    for line in text.splitlines():
        m = PREFIX.match(line)
        assert m, f"not a printf line: {line!r}"
        g = m.groups()
        rows.append((tuple(map(int, g[0:3])), tuple(map(int, g[3:6])), g[6]))
    return rows


def test_one_line_per_active_lane_with_the_prefix(run, capfd):
    capfd.readouterr()
    x = np.arange(6, dtype=np.float32) * 1.5
    run(print_values, 2, 4, (x, 6))
    out = capfd.readouterr().out
    expected = [f"[block ({i // 4}, 0, 0) lane ({i % 4}, 0, 0)] x[{i}] = {i * 1.5:.2f}"
                for i in range(6)]
    assert out.splitlines() == expected


def test_inactive_lanes_print_nothing(run, capfd):
    capfd.readouterr()
    run(print_values, 1, 32, (np.zeros(1, np.float32), 0))
    assert capfd.readouterr().out == ""


def test_three_dimensional_prefix_in_block_then_lane_order(capfd):
    capfd.readouterr()
    pto.launch(print_ids, grid=(2, 2, 1), block=(2, 1, 2), args=())
    assert capfd.readouterr().out == ""          # asynchronous: nothing ran yet
    pto.sync()
    rows = parse(capfd.readouterr().out)
    expected_order = [((bx, by, 0), (lx, 0, lz))
                      for by in range(2) for bx in range(2)
                      for lz in range(2) for lx in range(2)]
    assert [(b, lane) for b, lane, _ in rows] == expected_order
    for block, lane, text in rows:
        assert text == "ids %d %d %d | %d %d %d" % (*block, *lane)


def test_format_conversions(run, capfd):
    capfd.readouterr()
    xi = np.array([255, -3, 7], np.int32)
    xh = np.array([0.5, -1.25, 3.140625], np.float16)
    run(print_formats, 1, 32, (xi, xh, 3))
    rows = parse(capfd.readouterr().out)
    texts = [t for _, _, t in rows]
    assert texts[:3] == ["hex ff, %5d|, 100%%, odd=1" % 255,
                         "hex -3, %5d|, 100%%, odd=1" % -3,
                         "hex 7, %5d|, 100%%, odd=1" % 7]
    assert texts[3:] == ["half 0.500", "half -1.250", "half 3.141"]


def test_bfloat16_values_print_as_numbers(run, capfd):
    capfd.readouterr()
    xh = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    run(print_formats, 1, 32, (np.array([1, 2], np.int32), xh, 2))
    texts = [t for _, _, t in parse(capfd.readouterr().out)]
    assert texts[2:] == ["half 1.500", "half -2.000"]


def test_lines_of_a_lane_keep_program_order_in_block_mode(capfd):
    capfd.readouterr()
    pto.launch(print_in_loop_with_barrier, grid=2, block=64, args=(3,))
    pto.sync()
    rows = parse(capfd.readouterr().out)
    assert len(rows) == 2 * 2 * 3
    for b in range(2):
        for t in range(2):
            mine = [text for block, lane, text in rows if block == (b, 0, 0) and lane[0] == t]
            assert mine == ["step 0", "step 1", "step 2"]


@pto.kernel
def print_with_newline(n):
    i = pto.get_global_id()
    if i < n:
        pto.printf("i=%d\n", i)


def test_trailing_newline_in_the_format_does_not_add_blank_lines(capfd):
    capfd.readouterr()
    pto.launch(print_with_newline, grid=1, block=32, args=(2,))
    pto.sync()
    assert capfd.readouterr().out == ("[block (0, 0, 0) lane (0, 0, 0)] i=0\n"
                                      "[block (0, 0, 0) lane (1, 0, 0)] i=1\n")
