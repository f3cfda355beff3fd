"""Lanes that share HBM elements (shared_hbm.py, docs/native.md#shared-hbm-elements): each write
to such a tensor a phase of its own across the block's lanes, so a one-block launch gives the
interpreter's lockstep bits; a launch of several blocks (which the interpreter runs as one lane
vector) is refused at the launch, "auto" running the interpreter. Against NumPy references of
lockstep semantics (every lane's load before every lane's store; the last lane wins)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported


@pto.kernel
def shift(y, n):
    """Every lane reads its right neighbour, then every lane writes."""
    i = pto.get_global_id()
    v = pto.load(y + (i + 1) % n)
    pto.store(y + i, v + 1.0)


@pto.kernel
def last_lane_wins(x, o, out):
    """Four lanes store one element; a later op reads it back."""
    i = pto.get_local_id(0) + pto.get_local_id(1) * pto.get_block_dim(0)
    pto.store(o + i // 4, pto.load(x + i))
    pto.store(out + i, pto.load(o + i // 4) * 2.0)


@pto.kernel
def plain_histogram(keys, h):
    """A histogram by plain loads and stores: in lockstep each bin ends one above its start."""
    i = pto.get_global_id()
    k = pto.load(keys + i)
    c = pto.load(h + k)
    pto.store(h + k, c + 1)


@pto.kernel
def scan_in_place(y, n):
    """Hillis-Steele inclusive scan in HBM with no barrier: each step reads, then writes."""
    i = pto.get_global_id()
    s = 1
    while s < n:
        v = pto.load(y + i)
        if i >= s:
            v = v + pto.load(y + i - s)
        pto.store(y + i, v)
        s = s * 2


def _both(kernel, block, args):
    got = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    ref = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    pto.launch(kernel, 1, block, tuple(got), backend="native")
    pto.launch(kernel, 1, block, tuple(ref), backend="interpreter")
    for g, r in zip(got, ref):
        if isinstance(g, np.ndarray):
            assert np.array_equal(g.view(np.uint8), r.view(np.uint8))
    return got


def test_reads_before_a_write_see_no_lane_write():
    y = np.arange(64, dtype=np.float32)
    got = _both(shift, 64, (y, 64))
    assert np.array_equal(got[0], np.roll(y, -1) + np.float32(1))


@pytest.mark.parametrize("block", [64, (8, 4)])
def test_the_last_lane_wins_and_later_reads_see_it(block):
    lanes = 32 if isinstance(block, tuple) else 64
    x = np.random.default_rng(2).standard_normal(lanes).astype(np.float32)
    o, out = _both(last_lane_wins, block, (x, np.zeros(lanes // 4, np.float32),
                                           np.zeros(lanes, np.float32)))[1:]
    assert np.array_equal(o, x[3::4])
    assert np.array_equal(out, np.repeat(x[3::4], 4) * np.float32(2))


def test_a_plain_histogram_is_lockstep():
    keys = np.random.default_rng(3).integers(0, 8, 64).astype(np.int32)
    h0 = np.arange(8, dtype=np.int32) * 10
    h = _both(plain_histogram, 64, (keys, h0))[1]
    expect = h0.copy()
    expect[np.unique(keys)] += 1
    assert np.array_equal(h, expect)


def test_a_scan_with_writes_in_a_loop():
    y = np.random.default_rng(4).integers(-50, 50, 64).astype(np.int32)
    got = _both(scan_in_place, 64, (y, 64))[0]
    assert np.array_equal(got, np.cumsum(y, dtype=np.int32))


def test_several_blocks_are_refused_at_the_launch_and_auto_runs_the_interpreter():
    with pytest.raises(NativeUnsupported, match=r"only in one-block launches"):
        pto.launch(shift, 2, 32, (np.zeros(64, np.float32), 64), backend="native")
    for grid, block in ((2, 32), (4, 16)):
        y = np.arange(64, dtype=np.float32)
        pto.launch(shift, grid, block, (y, 64), backend="auto")  # one vector across blocks
        assert np.array_equal(y, np.roll(np.arange(64, dtype=np.float32), -1) + np.float32(1))
