"""Fast lane loops of phases and the population-count idiom (docs/native.md#phases,
docs/native.md#idioms), bit for bit against the interpreter (the oracle) and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import llvm_ir
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def bits_between(a, out, n, LO: pto.constexpr, HI: pto.constexpr):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        count = 7
        for k in range(LO, HI):
            count = count + ((x >> k) & 1)
        pto.store(out + i, count)


@pto.kernel
def two_bits(a, out, n):
    """Not a population count (`& 3`): stays a loop."""
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        count = 0
        for k in range(32):
            count = count + ((x >> k) & 3)
        pto.store(out + i, count)


def _bits_ref(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    width = x.dtype.itemsize * 8
    u = x.view(f"u{x.dtype.itemsize}")
    bits = ((1 << (hi - lo)) - 1) << lo
    masked = u & np.array(bits % (1 << width), dtype=u.dtype)
    return (np.bitwise_count(masked).astype(x.dtype) + x.dtype.type(7))


@pytest.mark.parametrize("dtype,lo,hi", [(np.int32, 0, 32), (np.int32, 5, 19), (np.int32, 4, 4),
                                         (np.int64, 0, 64), (np.int64, 31, 64)])
def test_popcount_idiom_is_one_ctpop_and_exact(dtype, lo, hi):
    n = 1000
    rng = np.random.default_rng(lo * 100 + hi)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:4] = [0, -1, info.min, info.max]
    interp, native = both(bits_between, 4, 256, [a, np.zeros(n, dtype)], (n, lo, hi))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], _bits_ref(a, lo, hi))
    compiled = pto.compile(bits_between, args=(a, np.zeros(n, dtype), n, lo, hi), block=256)
    assert ("llvm.ctpop" in llvm_ir(compiled.func)) == (lo < hi)  # (no loop when empty)


def test_not_a_popcount_stays_a_loop():
    n = 600
    a = np.random.default_rng(3).integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    interp, native = both(two_bits, 3, 256, [a, np.zeros(n, np.int32)], (n,))
    assert same_bits(interp, native)
    ref = sum(((a.astype(np.int64) >> k) & 3) for k in range(32)).astype(np.int32)
    np.testing.assert_array_equal(native[1], ref)
    compiled = pto.compile(two_bits, args=(a, np.zeros(n, np.int32), n), block=256)
    assert "llvm.ctpop" not in llvm_ir(compiled.func)


@pto.kernel
def tree_sum(x, partial, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """block_sum's tree: the `tid < s` phases run only the lanes they admit."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if 0 == tid:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


def _tree_ref(x: np.ndarray, blocks: int, block: int) -> np.ndarray:
    v = np.zeros(blocks * block, np.float32)
    v[:x.size] = x
    v = v.reshape(blocks, block)
    s = block // 2
    while s:
        v[:, :s] = v[:, :s] + v[:, s:2 * s]
        s //= 2
    return v[:, 0].copy()


@pytest.mark.parametrize("n", [4096, 4000])
def test_tree_phases_fast_and_exact(n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    blocks = -(-n // 256)
    interp, native = both(tree_sum, blocks, 256, [x, np.zeros(blocks, np.float32)],
                          (n, 256, 8))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], _tree_ref(x, blocks, 256))


@pto.kernel
def guarded_overrun(x, out, s):
    """Lanes `tid >= s` read past the L1 buffer's end: the fast path's range check over the
    admitted lanes fails for s > 64, and the checked lane loop raises the interpreter's error."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(128)
    pto.store(buf + tid, pto.load(x + tid))
    pto.barrier_block()
    if tid < s:
        pto.store(out + tid, pto.load(buf + tid + 64))


def test_guarded_phase_in_and_out_of_range():
    x = np.arange(128, dtype=np.float32)
    interp, native = both(guarded_overrun, 1, 128, [x, np.zeros(128, np.float32)], (64,))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1][:64], x[64:])
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(guarded_overrun, 1, 128, (x.copy(), np.zeros(128, np.float32), 65),
                       backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_interleaved_tree_scaled_guard_exact():
    """`2 * s * tid < BLOCK` admits lanes [0, ceil(BLOCK / 2s)): the fast loops run those."""
    from tests.kernels.test_users_zoo import dot_interleaved, dot_interleaved_ref

    n = 256 * 6
    rng = np.random.default_rng(11)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    interp, native = both(dot_interleaved, 6, 256, [a, b, np.zeros(6, np.float32)],
                          (n, 256, 8))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[2], dot_interleaved_ref(a, b, 256))


@pytest.mark.parametrize("n", [2048, 2000])
def test_scan_inner_guard_clips_the_checked_box(n):
    """`if tid >= d: t += a[tid - d]` inside a phase: the range check takes the corners of
    the lanes the `if` admits ([d, block)), so the phase runs unchecked; a partial last block
    (n = 2000) takes the checked path for its `x + i` access. Bit for bit both ways."""
    from tests.kernels.test_users_zoo import scan_block, scan_ref

    block = 256
    x = np.random.default_rng(n).integers(-1000, 1000, n, dtype=np.int32)
    blocks = -(-n // block)
    interp, native = both(scan_block, blocks, block, [x, np.zeros(n, np.int32)],
                          (n, block, 4))
    assert same_bits(interp, native)
    padded = np.zeros(blocks * block, np.int32)
    padded[:n] = x
    np.testing.assert_array_equal(native[1], scan_ref(padded, block)[:n])
