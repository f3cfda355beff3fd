"""Sorting-network steps run as loops over runs of pairs in the grid function (pair_runs.py)
and the steps `j = 2, 1` fused (pair_fusion.py), docs/native.md#merged-tree-steps: the
interpreter's bits (NaN, -0, ties, min/max), NumPy's order where it is defined, and the lane
loops for any other `j`."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native import pair_fusion, pair_runs
from pypto.backend.native.exchange_selects import select_exchanges
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.jit import llvm_ir
from pypto.backend.native.phase_codegen import split
from pypto.backend.native.phases import Loop, Phase, plan
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import bitonic_sort_block

B = 64


@pto.kernel
def sort_pairs(keys, vals, out_k, out_v, desc, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """A key-value bitonic sort per block (two L1 buffers exchanged together), ascending, or
    descending when `desc` (a uniform value from the host) is 1."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * BLOCK
    sk = pto.alloc_local(BLOCK)
    sv = pto.alloc_local(BLOCK, dtype=pto.int32)
    pto.store(sk + tid, pto.load(keys + base + tid))
    pto.store(sv + tid, pto.load(vals + base + tid))
    pto.barrier_block()
    for stage in range(LOG2):
        k = 2 << stage
        for step in range(stage, -1, -1):
            j = 1 << step
            ixj = tid ^ j
            if ixj > tid:
                a = pto.load(sk + tid)
                b = pto.load(sk + ixj)
                va = pto.load(sv + tid)
                vb = pto.load(sv + ixj)
                up = ((tid & k) == 0) != (desc == 1)
                if (up and a > b) or (not up and a < b):
                    pto.store(sk + tid, b)
                    pto.store(sk + ixj, a)
                    pto.store(sv + tid, vb)
                    pto.store(sv + ixj, va)
            pto.barrier_block()
    pto.store(out_k + base + tid, pto.load(sk + tid))
    pto.store(out_v + base + tid, pto.load(sv + tid))


@pto.kernel
def minmax_step(x, y, j, k):
    """One step written with `min` / `max` (IEEE minimum / maximum: NaN wins, -0 < +0), the
    direction from `tid & k`; `j` from the host."""
    tid = pto.get_local_id()
    s = pto.alloc_local(B)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    ixj = tid ^ j
    if ixj > tid:
        a = pto.load(s + tid)
        b = pto.load(s + ixj)
        if (tid & k) == 0:
            pto.store(s + tid, min(a, b))
            pto.store(s + ixj, max(a, b))
        else:
            pto.store(s + tid, max(a, b))
            pto.store(s + ixj, min(a, b))
    pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


@pto.kernel
def alternating_steps(x, y, k, N: pto.constexpr):
    """`j` = 1, 2, 1, 2, ... (trips 1-2, 3-4, ... are `j = 2, 1`: fused), the direction
    flipped on every third trip (each trip's own value of `t` in the fused pass)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(B)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    for t in range(N):
        j = 1 << (t % 2)
        flip = t % 3 == 0
        ixj = tid ^ j
        if ixj > tid:
            a = pto.load(s + tid)
            b = pto.load(s + ixj)
            if ((tid & k) == 0) != flip:
                if a > b:
                    pto.store(s + tid, b)
                    pto.store(s + ixj, a)
            else:
                if a < b:
                    pto.store(s + tid, b)
                    pto.store(s + ixj, a)
        pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


def _compiled(kernel, args, block):
    """The kernel as the native backend compiles it for a 1-D block of `block` lanes."""
    func = pto.compile(kernel, args=args, block=block).func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (block, 1, 1)])
    return select_exchanges(func)


def _steps(func) -> list[Phase]:
    """The phases pair_runs.py runs as runs of pairs."""
    found = []

    def walk(items):
        for item in items:
            if isinstance(item, Phase):
                lanes = int(func.attributes[BLOCK_ATTR].data[0].value.data)
                if pair_runs._step(item.ops, item.guards, item.copies, lanes,
                                   plan(func).uniform) is not None:
                    found.append(item)
            elif isinstance(item, Loop):
                walk(item.body)
    walk(plan(func).items)
    return found


@pytest.fixture(scope="module")
def keys() -> np.ndarray:
    """Two blocks of keys with NaNs (one with a payload), infinities, signed zeros, ties."""
    x = np.random.default_rng(29).standard_normal(2 * B).astype(np.float32)
    x[:12] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, 1.0, np.nan, -0.0, 2.0, 0.0, -0.0]
    x.view(np.uint32)[7] = 0x7FC00123
    x[B + 3:B + 9] = [0.0, -0.0, 0.0, -0.0, 5.0, 5.0]
    return x


def test_sort_step_runs_as_pairs_and_lane_loops_otherwise():
    func = _compiled(bitonic_sort_block, (np.zeros(B, np.float32), np.zeros(B, np.float32), B, 6),
                     B)
    assert len(_steps(func)) == 1
    ir = llvm_ir(func)
    assert "llvm.loop.unroll.disable" in ir  # (runs of 8 and 16 pairs kept as loops)
    assert "fast.lane" in ir                  # (the phase's lane loops: for any other j)
    old = pair_runs.ENABLED
    pair_runs.ENABLED = False
    try:
        assert "llvm.loop.unroll.disable" not in llvm_ir(func)
    finally:
        pair_runs.ENABLED = old


@pytest.mark.parametrize("desc", [0, 1])
def test_key_value_sort_bit_exact_and_numpy_order(keys, desc):
    vals = np.arange(2 * B, dtype=np.int32)
    arrays = [keys, vals, np.zeros_like(keys), np.zeros_like(vals)]
    interp, native = both(sort_pairs, 2, B, arrays, (desc, B, 6))
    assert same_bits(interp, native)
    out_k, out_v = native[2], native[3]
    assert out_k.view(np.uint32).tobytes() == keys[out_v].view(np.uint32).tobytes()
    clean = np.random.default_rng(desc).standard_normal(2 * B).astype(np.float32)
    clean[::5] = 0.0
    clean[1::5] = -0.0
    interp, native = both(sort_pairs, 2, B, [clean, vals, np.zeros_like(clean),
                                             np.zeros_like(vals)], (desc, B, 6))
    assert same_bits(interp, native)
    want = np.sort(clean.reshape(2, B), axis=1)
    np.testing.assert_array_equal(native[2].reshape(2, B), want[:, ::-1] if desc else want)


def test_sort_pairs_is_taken():
    args = (np.zeros(B, np.float32), np.zeros(B, np.int32), np.zeros(B, np.float32),
            np.zeros(B, np.int32), 0, B, 6)
    assert len(_steps(_compiled(sort_pairs, args, B))) == 1


def _ieee_min_max(a: np.float32, b: np.float32) -> tuple[np.float32, np.float32]:
    """IEEE 754-2019 minimum and maximum (docs/isa.md: NaN if either is NaN, -0 < +0;
    NumPy's `np.minimum(0.0, -0.0)` returns its first argument)."""
    if np.isnan(a) or np.isnan(b):
        nan = a if np.isnan(a) else b
        return nan, nan
    if a == b:
        return (a, b) if np.signbit(a) else (b, a)
    return (a, b) if a < b else (b, a)


@pytest.mark.parametrize("j", [1, 2, 4, 8, 16, 32, 3, 0])
def test_minmax_step_bit_exact(keys, j):
    """Every power of two below the block (one loop nest each), then `j` no nest takes: 3
    (not a power of two) and 0 (no lane admitted). NaN propagates through min / max."""
    x = keys[:B].copy()
    interp, native = both(minmax_step, 1, B, [x, np.zeros_like(x)], (j, 2 * j or 1))
    assert same_bits(interp, native)
    ref, k = x.copy(), 2 * j or 1
    for t in range(B):
        if (t ^ j) > t:  # (every partner is in the block for these j)
            lo, hi = _ieee_min_max(ref[t], ref[t ^ j])
            ref[t], ref[t ^ j] = (lo, hi) if t & k == 0 else (hi, lo)
    np.testing.assert_array_equal(native[1].view(np.uint32), ref.view(np.uint32))


def _alternating_ref(x: np.ndarray, k: int, n: int) -> np.ndarray:
    ref = x.copy()
    for t in range(n):
        j = 1 << (t % 2)
        for lane in range(B):
            p = lane ^ j
            if p > lane:
                up = ((lane & k) == 0) != (t % 3 == 0)
                a, b = ref[lane], ref[p]
                if (up and a > b) or (not up and a < b):
                    ref[lane], ref[p] = b, a
    return ref


@pytest.mark.parametrize("n", [5, 6])
def test_fused_short_steps_bit_exact(keys, n):
    """An odd trip count leaves the last `j = 2` trip unfused, an even one fuses through."""
    x = keys[:B].copy()
    interp, native = both(alternating_steps, 1, B, [x, np.zeros_like(x)], (4, n))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1].view(np.uint32),
                                  _alternating_ref(x, 4, n).view(np.uint32))


def test_fusion_is_taken():
    func = _compiled(alternating_steps, (np.zeros(B, np.float32), np.zeros(B, np.float32), 4,
                                         6), B)

    def whiles() -> int:
        return sum(o.name == "scf.while" for o in split(func.clone())[1].walk())
    fused = whiles()
    old = pair_fusion.ENABLED
    pair_fusion.ENABLED = False
    try:
        assert fused == whiles() + 1  # (the block-level loop as a while over trips)
    finally:
        pair_fusion.ENABLED = old
