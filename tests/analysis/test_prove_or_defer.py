"""Prove or defer (docs/barriers.md#prove-or-defer): the barrier verifier reasons over guards
and unknown uniform values, so the tree reduction of every CUDA tutorial (`s = block_dim // 2;
while s > 0: if t < s: buf[t] += buf[t + s]; barrier_block(); s //= 2`) compiles in every
spelling and computes NumPy's sum; a hazard it proves is an error; one it can neither prove nor
rule out is a remark naming both accesses, and the run-time race detector checks the launch."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from tests.frontend.everywhere import run_everywhere

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from barrier_pitfall import broadcast_racy  # noqa: E402


@pto.kernel
def tree_load_store(x, out):
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    pto.store(buf + t, pto.load(x + t))
    pto.barrier_block()
    s = pto.get_block_dim() // 2
    while s > 0:
        if t < s:
            pto.store(buf + t, pto.load(buf + t) + pto.load(buf + t + s))
        pto.barrier_block()
        s //= 2
    if t == 0:
        pto.store(out, pto.load(buf))


@pto.kernel
def tree_subscripts(x, out):
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    buf[t] = x[t]
    pto.barrier_block()
    s = pto.get_block_dim() // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        pto.barrier_block()
        s //= 2
    if t == 0:
        out[0] = buf[0]


@pto.kernel
def tree_shift_from_parameter(x, out, n):
    """`s` from a run-time parameter, halved with >>=, the guard written `s > t`."""
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    buf[t] = x[t]
    pto.barrier_block()
    s = n >> 1
    while s >= 1:
        if s > t:
            buf[t] = buf[t] + buf[s + t]
        pto.barrier_block()
        s >>= 1
    if t == 0:
        out[0] = buf[0]


@pto.kernel
def tree_two_rows(x, out):
    """Two trees side by side, one per half of the buffer: guards `t >= h` and `t < h + s`."""
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    buf[t] = x[t]
    pto.barrier_block()
    h = pto.get_block_dim() // 2
    s = h // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        if t >= h and t < h + s:
            buf[t] += buf[t + s]
        pto.barrier_block()
        s //= 2
    if t == 0:
        out[0] = buf[0]
        out[1] = buf[h]


@pytest.mark.parametrize("kernel", [tree_load_store, tree_subscripts])
@pytest.mark.parametrize("block", [256, 64])
def test_the_tree_reduction_compiles_and_sums_as_numpy(kernel, block):
    x = np.random.default_rng(block).integers(-1000, 1000, 256).astype(np.int32)
    compiled = pto.compile(kernel, args=(pto.tensor(x), pto.tensor(np.zeros(1, np.int32))),
                           block=block)
    assert not [r for r in compiled.remarks if "hazard" in r.message]
    _, out = run_everywhere(kernel, block, (x, np.zeros(1, np.int32)))
    assert out[0] == x[:block].sum()


def test_the_tree_from_a_parameter_with_shifts():
    x = np.arange(256, dtype=np.int32) - 77
    _, out = run_everywhere(tree_shift_from_parameter, 128, (x, np.zeros(1, np.int32), 128))
    assert out[0] == x[:128].sum()


def test_two_guarded_trees_side_by_side():
    x = np.arange(256, dtype=np.int32) * 7 % 31
    _, out = run_everywhere(tree_two_rows, 256, (x, np.zeros(2, np.int32)))
    assert out.tolist() == [x[:128].sum(), x[128:].sum()]


# ---- proven hazards stay errors -----------------------------------------------------------


def test_the_pitfall_is_proven_and_an_error():
    src, out = pto.tensor(np.zeros(128, np.float32)), pto.tensor(np.zeros(256, np.float32))
    with pytest.raises(pto.BarrierError, match=r"^.*error: RAW hazard on L1 buffer 'shared' "
                                               r"\[0, 128\)"):
        pto.compile(broadcast_racy, args=(src, out), block=256)


@pto.kernel
def tree_missing_barrier(x, out):
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    buf[t] = x[t]
    pto.barrier_block()
    for s in (128, 64, 32, 16, 8, 4, 2, 1):
        if t < s:
            buf[t] += buf[t + s]
        # missing: pto.barrier_block()
    if t == 0:
        out[0] = buf[0]


def test_a_tree_without_its_barrier_is_a_proven_error():
    args = (pto.tensor(np.zeros(256, np.int32)), pto.tensor(np.zeros(1, np.int32)))
    with pytest.raises(pto.BarrierError) as info:
        pto.compile(tree_missing_barrier, args=args, block=256)
    first = str(info.value).splitlines()[0]
    assert "error: RAW hazard on L1 buffer 'buf'" in first and "possible" not in first


# ---- undecidable: a remark, and the race detector at run time ---------------------------------


@pto.kernel
def tree_off_by_one(x, out):
    """`t <= s` instead of `t < s`: lane s writes buf[s], which lane 0 reads."""
    t = pto.get_local_id()
    buf = pto.alloc_local(512, pto.int32)
    buf[t] = x[t]
    buf[t + 256] = 0
    pto.barrier_block()
    s = pto.get_block_dim() // 2
    while s > 0:
        if t <= s:
            buf[t] += buf[t + s]
        pto.barrier_block()
        s //= 2
    if t == 0:
        out[0] = buf[0]


def _remarks(kernel, args, block):
    compiled = pto.compile(kernel, args=args, block=block)
    return [str(r) for r in compiled.remarks if "hazard" in r.message]


def test_an_undecided_pair_is_a_remark_naming_both_accesses_and_races_at_run_time():
    x = np.arange(256, dtype=np.int32)
    args = (pto.tensor(x), pto.tensor(np.zeros(1, np.int32)))
    remarks = _remarks(tree_off_by_one, args, 256)
    assert remarks, "the off-by-one guard must not pass silently"
    line = next(r for r in remarks if "possible" in r)
    assert "remark: possible" in line and "left to the run-time race detector" in line
    assert line.count(f"{__file__}:") >= 2  # both accesses, by their Python lines
    with pytest.raises(pto.RaceError):
        tree_off_by_one[1, 256](x, np.zeros(1, np.int32))
        pto.sync()


@pto.kernel
def scatter_by_table(x, perm, out):
    """An index loaded from memory: undecidable at compile time."""
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.float32)
    buf[perm[t]] = x[t]
    out[t] = buf[t]


def test_an_undecided_pair_that_does_not_race_runs():
    x = np.arange(256, dtype=np.float32)
    perm = np.arange(256, dtype=np.int32)  # each lane writes its own slot: no race
    args = (pto.tensor(x), pto.tensor(perm), pto.tensor(np.zeros(256, np.float32)))
    remarks = _remarks(scatter_by_table, args, 256)
    assert any("possible RAW hazard on L1 buffer 'buf'" in r for r in remarks)
    out = np.zeros(256, np.float32)
    scatter_by_table[1, 256](x, perm, out)
    pto.sync()
    np.testing.assert_array_equal(out, x)
    shuffled = np.roll(perm, 64)  # lane t writes slot t - 64: read by a lane of another warp
    with pytest.raises(pto.RaceError):
        scatter_by_table[1, 256](x, shuffled, np.zeros(256, np.float32))
        pto.sync()
