"""Several printfs, and printf in a loop, natively (docs/native.md#what-is-compiled-the-support-check,
pypto/backend/native/printf.py `plan`): the launch's lines are buffered and sorted into the
interpreter's order — its lane vectors (`Executable.lane_vectors`: the grid's chunks, batches or
single blocks) one after another, op by op within one (each enclosing loop's trip, `for` or
SIMT `while`), lanes in linear order — compared line for line with the interpreter and with the
lines the kernel's semantics give (built here in Python)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.errors import KernelError


@pto.kernel
def debug_lane(x, n):
    tid = pto.get_local_id()
    if tid == 3 and pto.get_block_id() == 1:
        pto.printf("n=%d\n", n)
        for k in range(n):
            pto.printf("x[%d]=%.2f\n", k, pto.load(x + k))
    if pto.get_block_id() == 1:
        if tid == 3:
            pto.printf("done\n")


@pto.kernel
def debug_global(x, n):
    i = pto.get_global_id()
    buf = pto.alloc_local(64)
    pto.store(buf + pto.get_local_id(), pto.load(x + i % n))
    pto.barrier_block()
    if i == 70:
        k = 0
        while k < 3:
            pto.printf("k=%d v=%g\n", k, pto.load(buf + k))
            k += 1
        pto.printf("after %d\n", i)


@pto.kernel
def every_lane_twice(x):
    tid = pto.get_local_id()
    if tid < 3:
        pto.printf("a %d\n", tid)
        pto.printf("b %d\n", tid)


@pto.kernel
def every_lane_in_a_loop(x):
    tid = pto.get_local_id()
    if tid < 3:
        for k in range(2):
            pto.printf("%d %d\n", k, tid)


@pto.kernel
def loop_format_error(x, n):
    if pto.get_global_id() == 0:
        for k in range(n):
            pto.printf("%d\n", pto.load(x + k))


def _lines(capsys, kernel, grid, block, args) -> list[str]:
    texts = []
    for backend in ("interpreter", "native"):
        pto.launch(kernel, grid, block, args, backend=backend)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    return texts[1].splitlines()


def test_several_printfs_and_a_loop_on_one_lane(capsys):
    x = np.array([0.5, -1.25, 3.0, 7.0], np.float32)
    lines = _lines(capsys, debug_lane, 2, 64, (x, 4))
    prefix = "[block (1, 0, 0) lane (3, 0, 0)] "
    assert lines == [prefix + t for t in ("n=4", "x[0]=0.50", "x[1]=-1.25", "x[2]=3.00",
                                          "x[3]=7.00", "done")]


def test_printf_in_a_while_loop_after_a_barrier_on_one_global_lane(capsys):
    x = np.arange(64, dtype=np.float32) * 0.5
    lines = _lines(capsys, debug_global, 3, 64, (x, 64))
    prefix = "[block (1, 0, 0) lane (6, 0, 0)] "
    assert lines == [prefix + t for t in ("k=0 v=0", "k=1 v=0.5", "k=2 v=1", "after 70")]


def test_printfs_of_several_lanes_in_a_loop_of_one_block_in_the_interpreters_order(capsys):
    """The lines of one block sorted by (loop, trip, printf, lane): lockstep order
    (printf.py `add_order_keys`); two blocks could interleave otherwise."""
    x = np.zeros(4, np.float32)
    lines = _lines(capsys, every_lane_in_a_loop, 1, 32, (x,))
    assert lines == [f"[block (0, 0, 0) lane ({t}, 0, 0)] {k} {t}" for k in range(2)
                     for t in range(3)]
    # two blocks: one lane vector on the interpreter (no L1: grid mode), so trip by trip
    lines = _lines(capsys, every_lane_in_a_loop, 2, 32, (x,))
    assert lines == [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] {k} {t}" for k in range(2)
                     for b in range(2) for t in range(3)]


@pto.kernel
def lanes_in_nested_loops(x, n):
    tid = pto.get_local_id()
    if tid < 3:
        for k in range(2):
            pto.printf("%d %d\n", k, tid)
            for j in range(5, 1, -2):
                if tid % 2 == 0:
                    pto.printf("e%d %d %.1f\n", j, tid, pto.load(x + tid))
                else:
                    pto.printf("o%d %d\n", j, tid)
    pto.printf("end %d\n", tid)


@pto.kernel
def lanes_in_a_loop_around_a_barrier(x, n):
    tid = pto.get_local_id()
    buf = pto.alloc_local(8)
    for k in range(n):
        pto.store(buf + tid, pto.load(x + tid) + pto.cast(k, pto.float32))
        pto.barrier_block()
        pto.printf("%d: %g\n", k, pto.load(buf + 7 - tid))
        pto.barrier_block()


@pto.kernel
def lanes_in_a_while(x, n):
    tid = pto.get_local_id()
    k = 0
    while k < tid:
        pto.printf("%d\n", k)
        k += 1


def test_printfs_of_several_lanes_in_nested_loops_and_around_barriers(capsys):
    x = np.arange(8, dtype=np.float32)
    lines = _lines(capsys, lanes_in_nested_loops, 1, 4, (x, 2))
    row = "[block (0, 0, 0) lane ({}, 0, 0)] "
    expected = []
    for k in range(2):
        expected += [row.format(t) + f"{k} {t}" for t in range(3)]
        for j in (5, 3):
            expected += [row.format(t) + f"e{j} {t} {t}.0" for t in (0, 2)] + \
                [row.format(1) + f"o{j} 1"]
    assert lines == expected + [row.format(t) + f"end {t}" for t in range(4)]
    lines = _lines(capsys, lanes_in_a_loop_around_a_barrier, 1, 8, (x, 3))
    assert lines == [row.format(t) + f"{k}: {7 - t + k}" for k in range(3) for t in range(8)]
    lines = _lines(capsys, lanes_in_a_while, 1, 4, (x, 2))  # (trip by trip, lanes in order)
    assert lines == [row.format(t) + f"{k}" for k in range(3) for t in range(4) if k < t]


@pto.kernel
def lanes_format_error(x, n):
    tid = pto.get_local_id()
    for k in range(n):
        pto.printf("%d\n", pto.load(x + tid * 3 + k))


def test_a_format_error_of_several_lanes_in_a_loop_is_the_interpreters(capsys):
    """Lane 0 meets inf in trip 2, lane 1 in trip 0: the interpreter prints no line of
    trip 0 (the op fails for its vector) — nor does the native launch (its lines are the
    interpreter's replay, pypto/backend/native/replay.py)."""
    x = np.array([1.0, 2.0, np.inf, np.inf, 5.0, 6.0], np.float32)
    errors, outs = [], []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(lanes_format_error, 1, 2, (x, 3), backend=backend)
        errors.append(str(info.value))
        outs.append(capsys.readouterr().out)
    assert errors[0] == errors[1] and "cannot print (inf,)" in errors[1]
    assert outs[0] == outs[1]


def test_printfs_of_several_lanes_need_a_one_block_launch(capsys):
    """Outside loops, the lines of one block are sorted into the interpreter's order; two
    blocks could interleave otherwise (the interpreter's vector may hold both)."""
    x = np.zeros(4, np.float32)
    lines = _lines(capsys, every_lane_twice, 1, 32, (x,))
    assert lines == [f"[block (0, 0, 0) lane ({t}, 0, 0)] {w} {t}" for w in "ab"
                     for t in range(3)]
    lines = _lines(capsys, every_lane_twice, 2, 32, (x,))  # (one lane vector: the grid)
    assert lines == [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] {w} {t}" for w in "ab"
                     for b in range(2) for t in range(3)]


def test_a_launch_extending_an_unpinned_dimension(capsys):
    """debug_lane pins x only: a 2-D grid has a printing lane in every block row, (1, 0) and
    (1, 1); one lane vector holds both (grid mode), so their lines interleave op by op."""
    x = np.ones(4, np.float32)
    lines = _lines(capsys, debug_lane, (2, 2), 64, (x, 4))
    rows = [f"[block (1, {y}, 0) lane (3, 0, 0)] " for y in range(2)]
    assert lines == [r + "n=4" for r in rows] + [r + f"x[{k}]=1.00" for k in range(4)
                                                 for r in rows] + [r + "done" for r in rows]


def test_a_format_error_in_a_loop_is_the_interpreters(capsys):
    x = np.array([1.0, 2.0, np.inf], np.float32)
    errors, outs = [], []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(loop_format_error, 1, 32, (x, 3), backend=backend)
        errors.append(str(info.value))
        outs.append(capsys.readouterr().out)
    assert errors[0] == errors[1] and "cannot print (inf,)" in errors[1]
    assert outs[0] == outs[1] and len(outs[1].splitlines()) == 2


@pto.kernel
def debug_block(x, n):
    tid = pto.get_local_id()
    if pto.get_block_id() == 1:
        pto.printf("a %d\n", tid)
        if tid % 2 == 0:
            pto.printf("even %d %.1f\n", tid, pto.load(x + tid))
        else:
            pto.printf("odd %d\n", tid)
        pto.printf("c\n")


@pto.kernel
def one_block_phases(x):
    tid = pto.get_local_id()
    buf = pto.alloc_local(8)
    pto.store(buf + tid, pto.load(x + tid))
    pto.printf("w %d\n", tid)
    pto.barrier_block()
    pto.printf("r %g\n", pto.load(buf + 7 - tid))


def test_several_printfs_of_one_block_in_the_interpreters_order(capsys):
    """Printfs outside loops that one block reaches: op by op, lanes in order (the lines of
    the launch sorted), then-branch lines before else-branch ones."""
    x = np.arange(8, dtype=np.float32)
    lines = _lines(capsys, debug_block, 3, 6, (x, 3))
    prefix = "[block (1, 0, 0) lane ({}, 0, 0)] "
    assert lines == ([prefix.format(t) + f"a {t}" for t in range(6)] +
                     [prefix.format(t) + f"even {t} {t}.0" for t in (0, 2, 4)] +
                     [prefix.format(t) + f"odd {t}" for t in (1, 3, 5)] +
                     [prefix.format(t) + "c" for t in range(6)])


def test_printfs_around_a_barrier_in_a_one_block_launch(capsys):
    x = np.arange(8, dtype=np.float32)
    lines = _lines(capsys, one_block_phases, 1, 8, (x,))
    assert lines == ([f"[block (0, 0, 0) lane ({t}, 0, 0)] w {t}" for t in range(8)] +
                     [f"[block (0, 0, 0) lane ({t}, 0, 0)] r {7 - t}" for t in range(8)])
    # several blocks: the interpreter runs them as lane vectors of whole blocks (batch or
    # block mode, its choice, `lane_vectors`): each vector's `w` lines, then its `r` lines
    x16 = np.arange(40, dtype=np.float32)
    lines = _lines(capsys, one_block_phases, 5, 8, (x16,))
    compiled = pto.compile(one_block_phases, args=(x16,), block=8)
    vectors = compiled.executable.lane_vectors((5, 1, 1), (8, 1, 1), (x16,))
    expected = []
    for first, count in vectors:
        blocks = range(first // 8, (first + count) // 8)
        expected += [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] w {t}" for b in blocks
                     for t in range(8)]
        expected += [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] r {7 - t}" for b in blocks
                     for t in range(8)]
    assert lines == expected


@pto.kernel
def blocks_in_a_while(x, n):
    tid = pto.get_local_id()
    buf = pto.alloc_local(4, pto.int32)  # (L1 and a barrier: the interpreter's batch mode)
    pto.store(buf + tid, pto.get_block_id() % 3)
    pto.barrier_block()
    k = pto.load(buf + tid)
    while k < 2 + tid % 2:
        pto.printf("%d\n", k)
        k += 1
    pto.printf("end %d\n", k)


@pto.kernel
def lanes_2d(x, n):
    i = pto.get_local_id(0)
    j = pto.get_local_id(1)
    if i + j < 2:
        for k in range(n):
            pto.printf("%d %d %d\n", k, i, j)


def _vectors(kernel, grid, block, args):
    compiled = pto.compile(kernel, args=args, block=block)
    exe = compiled.executable
    return exe.lane_vectors(grid, block, args)  # (scalars as given: a tail cut reads one)


def test_a_simt_while_of_many_blocks_in_the_interpreters_vectors(capsys, monkeypatch):
    """A grid too large for one lane vector (the interpreter's batch mode runs it in chunks
    of whole blocks; chunks made small here): per chunk, the while loop's trips in lockstep — a
    lane prints trip k's line when its own loop runs a k-th time — then every lane's `end`."""
    from pypto.backend.interpreter import executor

    monkeypatch.setattr(executor, "BATCH_CHUNK_LANES_1D", 32)
    x = np.zeros(4, np.float32)
    grid = 30
    vectors = _vectors(blocks_in_a_while, (grid, 1, 1), (4, 1, 1), (x, 2))
    assert len(vectors) > 1  # (several chunks: their order is what is tested)
    lines = _lines(capsys, blocks_in_a_while, grid, 4, (x, 2))
    expected = []
    for first, count in vectors:
        lanes = [(lane // 4, lane % 4) for lane in range(first, first + count)]
        for trip in range(3):
            expected += [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] {b % 3 + trip}"
                         for b, t in lanes if b % 3 + trip < 2 + t % 2]
        expected += [f"[block ({b}, 0, 0) lane ({t}, 0, 0)] end {max(b % 3, 2 + t % 2)}"
                     for b, t in lanes]
    assert lines == expected


def test_lanes_of_a_2d_grid_and_block_in_linear_order(capsys):
    x = np.zeros(4, np.float32)
    lines = _lines(capsys, lanes_2d, (2, 2), (2, 2), (x, 2))
    order = [(bx, by, i, j) for by in range(2) for bx in range(2) for j in range(2)
             for i in range(2) if i + j < 2]
    assert lines == [f"[block ({bx}, {by}, 0) lane ({i}, {j}, 0)] {k} {i} {j}" for k in range(2)
                     for bx, by, i, j in order]
