"""Barriers, L1 writes and async copies in a `while` loop's condition region, compiled by the
native backend (while_phases.py: the condition's phases run as lane loops in the grid's own
`while`, docs/native.md#while-loops), bit for bit against the interpreter and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.errors import DeadlockError

BLOCK = 64


def halve(buf, tid, s):
    """One step of a tree sum, then the barrier; is there a next step?"""
    if tid < s:
        pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
    pto.barrier_block()
    return s > 1


@pto.kernel
def tree_in_condition(x, y):
    """A uniform condition that writes L1 and waits at a barrier."""
    buf = pto.alloc_local(BLOCK)
    tid = pto.get_local_id()
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    while halve(buf, tid, s):
        s = s // 2
    if tid == 0:
        pto.store(y + pto.get_block_id(), pto.load(buf))


def refill(t, x, k):
    """An async copy of row k of x into the tile (and its wait): a next row to add?"""
    pto.wait(pto.async_load(t, x + k * BLOCK, BLOCK * 4))
    return k < 3


@pto.kernel
def copies_in_condition(x, y):
    """A uniform condition that copies a row into L1 each trip; the body adds it up."""
    t = pto.alloc_local(BLOCK)
    tid = pto.get_local_id()
    acc = 0.0
    k = 0
    while refill(t, x, k):
        acc = acc + pto.load(t + tid) * pto.cast(k + 1, pto.float32)
        k += 1
    pto.store(y + tid, acc + pto.load(t + tid))


def bump(buf, tid):
    """Add one to the partner lane's counter (a lane-order atomic) after a barrier."""
    pto.barrier()
    return pto.atomic_add(buf + (tid ^ 1), 1)


@pto.kernel
def warps_in_condition(x, n):
    """A condition that differs between warps: a barrier and L1 atomics in it, each warp
    leaving after its own number of trips."""
    buf = pto.alloc_local(BLOCK, dtype=pto.int32)
    tid = pto.get_local_id()
    pto.store(buf + tid, 0)
    pto.barrier()
    k = 0
    while bump(buf, tid) < n + tid // 32:
        k += 1
    pto.store(x + tid, pto.cast(k * 100 + pto.load(buf + tid), pto.float32))


@pto.kernel
def split_warp_in_condition(x, n):
    """Lanes of one warp leave the loop apart: its condition's barrier deadlocks."""
    buf = pto.alloc_local(BLOCK, dtype=pto.int32)
    tid = pto.get_local_id()
    pto.store(buf + tid, 0)
    pto.barrier()
    k = 0
    while bump(buf, tid) < n + tid % 2:
        k += 1
    pto.store(x + tid, pto.cast(k, pto.float32))


def _both(kernel, grid, args, out):
    """Run natively and on the interpreter; the native output."""
    got = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    ref = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    pto.launch(kernel, grid, BLOCK, tuple(got), backend="native")
    pto.launch(kernel, grid, BLOCK, tuple(ref), backend="interpreter")
    assert np.array_equal(got[out].view(np.uint32), ref[out].view(np.uint32))
    return got[out]


def test_l1_tree_in_a_uniform_condition():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(3 * BLOCK).astype(np.float32)
    y = _both(tree_in_condition, 3, (x, np.zeros(3, np.float32)), 1)
    a = x.reshape(3, BLOCK).copy()
    s = BLOCK // 2
    while s >= 1:  # the tree's order of float32 additions
        a[:, :s] = a[:, :s] + a[:, s:2 * s]
        s //= 2
    assert np.array_equal(y, a[:, 0])


def test_async_copies_in_a_uniform_condition():
    x = np.arange(4 * BLOCK, dtype=np.float32).reshape(4, BLOCK) / 8
    y = _both(copies_in_condition, 1, (x.ravel(), np.zeros(BLOCK, np.float32)), 1)
    expect = np.float32(0)
    for k in range(3):
        expect = expect + x[k] * np.float32(k + 1)
    assert np.array_equal(y, expect + x[3])


@pytest.mark.parametrize("n", [0, 2])
def test_barrier_and_atomics_in_a_condition_that_differs_between_warps(n):
    y = _both(warps_in_condition, 1, (np.zeros(BLOCK, np.float32), n), 0)
    tid = np.arange(BLOCK)
    trips = n + tid // 32  # body trips of each lane; its partner bumps it each condition
    assert np.array_equal(y, trips * 100 + trips + 1)


def test_a_warp_split_in_the_condition_is_the_interpreters_deadlock():
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(DeadlockError) as info:
            pto.launch(split_warp_in_condition, 1, BLOCK, (np.zeros(BLOCK, np.float32), 1),
                       backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def start(t, x, k):
    """An async copy issued in the condition and waited in the body."""
    pto.async_load(t, x + k * BLOCK, BLOCK * 4)
    return k < 3


@pto.kernel
def copy_in_flight_in_condition(x, y):
    t = pto.alloc_local(BLOCK)
    tid = pto.get_local_id()
    k = 0
    while start(t, x, k):
        pto.wait_all()
        k += 1
    pto.wait_all()
    pto.store(y + tid, pto.load(t + tid))


def test_a_copy_in_flight_when_the_condition_is_decided_is_refused():
    from pypto.backend.native.jit import NativeUnsupported

    x = np.arange(4 * BLOCK, dtype=np.float32)
    with pytest.raises(NativeUnsupported, match=r"test_while_conditions.py:\d+:\d+: an async "
                                                r"copy issued in the condition of the while "
                                                r"loop at .* may still be in flight"):
        pto.launch(copy_in_flight_in_condition, 1, BLOCK, (x, np.zeros(BLOCK, np.float32)),
                   backend="native")
    y = np.zeros(BLOCK, np.float32)
    pto.launch(copy_in_flight_in_condition, 1, BLOCK, (x, y), backend="auto")
    assert np.array_equal(y, x[3 * BLOCK:])
