"""Unrolled tree loops and constant lane ranges (docs/native.md#unrolled-trees): a block-level
loop of a few trips whose carried stride is known and at most 32 on every trip is unrolled,
and the short steps (`tid < s`, `lane < s`, s <= 32) run lane loops of constant bounds in a launch of the
compiled block shape. Bit for bit against the interpreter (the oracle) and a NumPy model of
the lockstep order, every L1 element after the tree compared (not only the sums); an
out-of-range step's error as well."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import scf

import pypto as pto
from pypto.backend.native.tree_unroll import unroll_block_loops
from pypto.errors import KernelError
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def trees(x, out, out_red, n, BLOCK: pto.constexpr, STEPS: pto.constexpr, WSTART: pto.constexpr):
    """A block tree (`tid < s`, s = BLOCK/2 ... 1) in `buf`, a warp tree (`lane < s`, s =
    WSTART ... 1, warp barriers) in `red`; both buffers written out whole (`out`, `out_red`)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    buf = pto.alloc_local(BLOCK)
    red = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.store(red + warp * 32 + lane, v * 0.5)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(STEPS):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    w = WSTART
    for _ in range(5):
        if lane < w:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + w))
        pto.barrier()
        w = w >> 1
    pto.store(out + i, pto.load(buf + tid))
    pto.store(out_red + i, pto.load(red + tid))


def trees_ref(x: np.ndarray, n: int, block: int, steps: int, wstart: int) -> np.ndarray:
    """Both buffers after the trees, each step reading every lane's old values (lockstep)."""
    grid = -(-n // block)
    v = np.zeros(grid * block, np.float32)
    v[:n] = x[:n]
    buf = v.reshape(grid, block).copy()
    red = (v * np.float32(0.5)).reshape(grid, block // 32, 32).copy()
    s = block // 2
    for _ in range(steps):
        buf[:, :s] = buf[:, :s] + buf[:, s:2 * s]
        s //= 2
    w = wstart
    for _ in range(5):
        red[:, :, :w] = red[:, :, :w] + red[:, :, w:2 * w]
        w >>= 1
    return np.concatenate([buf.ravel(), red.ravel()])  # (out, then out_red)


@pytest.fixture(scope="module")
def compiled():
    """`trees` for blocks of 128 (7 block steps, warp steps from 16), compiled once."""
    x = np.zeros(1000, np.float32)
    out = np.zeros(1024, np.float32)
    return pto.compile(trees, args=(x, out, out.copy(), 1000, 128, 7, 16), block=128)


def test_the_warp_tree_is_unrolled(compiled):
    """The warp tree (s = 16 .. 1, every stride within a warp) wholly; the block tree (s = 64
    .. 1) stays a loop of its 7 trips."""
    unrolled = unroll_block_loops(compiled.func)
    assert unrolled is not compiled.func
    loops = [op for op in unrolled.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1
    assert [op.value.value.data for op in (loops[0].lb.owner, loops[0].ub.owner)] == [0, 7]
    assert len([op for op in compiled.func.walk() if isinstance(op, scf.ForOp)]) == 2  # (a copy)


@pytest.mark.parametrize("n", [1000, 1024])
def test_trees_bit_exact(compiled, n):
    """Values of magnitudes 1e-3 .. 1e3 (the association of the additions shows), a ragged
    last block and whole ones."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    outs = [np.zeros(1024, np.float32) for _ in range(2)]
    interp, native = both(compiled, 8, 128, [x, *outs], (n, 128, 7, 16))
    assert same_bits(interp, native)
    got = np.concatenate(native[1:])
    assert np.array_equal(got.view(np.uint32), trees_ref(x, n, 128, 7, 16).view(np.uint32))


@pto.kernel
def strided_start(x, out, n, BLOCK: pto.constexpr):
    """The stride starts at a run-time value: nothing to unroll."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = n // 2
    for _ in range(3):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    pto.store(out + pto.get_global_id(), pto.load(buf + tid))


def test_a_run_time_stride_is_not_unrolled():
    x = np.zeros(64, np.float32)
    ck = pto.compile(strided_start, args=(x, x.copy(), 64, 64), block=64)
    assert unroll_block_loops(ck.func) is ck.func


@pto.kernel
def overreach(x, out):
    """Steps `tid < s` reading `buf[tid + 4 * s]`: the first one reads past the buffer."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + tid, pto.load(x + tid))
    pto.barrier_block()
    s = 16
    for _ in range(3):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + 4 * s))
        pto.barrier_block()
        s = s // 2
    pto.store(out + tid, pto.load(buf + tid))


def test_an_out_of_range_step_raises_the_interpreters_error():
    """Both backends raise the same message (the unrolled copy keeps the line). The step's
    range check fails, so this also runs a run's phase-by-phase path."""
    x = np.ones(64, np.float32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(overreach, 1, 64, (x, np.zeros(64, np.float32)), backend=backend)
            pto.sync()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "test_unrolled_trees.py" in messages[1] and "out-of-bounds" in messages[1]
