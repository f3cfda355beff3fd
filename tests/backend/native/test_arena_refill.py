"""The L1 arena's refill left out where no read sees it (arena_refill.py,
docs/native.md#the-l1-arena): which words a block of the compiled shape still refills, and
the poison (NaN, 0x7FBADBAD) a block reads where it did not write, never the previous block's
values, bit for bit against the interpreter; a launch of another block size refills all."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.analysis.uniformity import varying_values
from pypto.backend.native.arena_refill import refill_ranges
from pypto.dialects import pto as pto_dialect
from tests.backend.native.helpers import both, same_bits

BLOCK = 64
POISON = 0x7FBADBAD


@pto.kernel
def three_buffers(x, out_a, out_b, out_c, out_d):
    """`a` written at `tid` then read reversed (no refill); `b` written at `tid`, read at
    `tid + BLOCK` too (its upper half refilled); `c` read before it is written (all of it);
    `d` written at `tid + 3`, read inside (its first three elements refilled)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    a = pto.alloc_local(BLOCK)
    b = pto.alloc_local(2 * BLOCK, dtype=pto.int32)
    c = pto.alloc_local(BLOCK, dtype=pto.int32)
    d = pto.alloc_local(BLOCK + 3)
    v = pto.load(x + i)
    pto.store(a + tid, v)
    pto.store(b + tid, i)
    seen = pto.load(c + tid)
    pto.store(c + tid, i)
    pto.store(d + tid + 3, v)
    pto.barrier_block()
    pto.store(out_a + i, pto.load(a + BLOCK - 1 - tid))
    pto.store(out_b + i, pto.load(b + tid) + pto.load(b + tid + BLOCK))
    pto.store(out_c + i, seen)
    pto.store(out_d + i, pto.load(d + tid))


@pytest.fixture(scope="module")
def compiled():
    x = np.zeros(4 * BLOCK, np.float32)
    outs = (x.copy(), np.zeros(4 * BLOCK, np.int32), np.zeros(4 * BLOCK, np.int32), x.copy())
    return pto.compile(three_buffers, args=(x, *outs), block=BLOCK)


def test_the_words_refilled(compiled):
    """The arena words (8 bytes) holding a byte of an element some read may see before its
    block writes it: none of `a`, the upper half of `b`, all of `c`, the first three of `d`
    (wherever pto-allocate-l1 placed the buffers)."""
    varying = varying_values(compiled.func)
    ranges = refill_ranges(compiled.func, BLOCK, lambda v: v not in varying)
    allocs = [op for op in compiled.func.walk() if isinstance(op, pto_dialect.AllocLocalOp)]
    seen = {"a": (0, 0), "b": (BLOCK, 2 * BLOCK), "c": (0, BLOCK), "d": (0, 3)}
    words = set()
    for op in allocs:
        lo, hi = seen[op.result.name_hint]
        start = int(op.l1_offset)
        words |= {b // 8 for b in range(start + 4 * lo, start + 4 * hi)}
    expected = []
    for w in sorted(words):
        if expected and expected[-1][1] == w:
            expected[-1] = (expected[-1][0], w + 1)
        else:
            expected.append((w, w + 1))
    assert ranges == expected and len(expected) >= 2


@pytest.mark.parametrize("block", [BLOCK, 32])
def test_blocks_see_the_poison(compiled, block):
    """Four blocks of the compiled shape (each later block would see the earlier one's values
    if a read word were not refilled), and eight of 32 lanes (every word refilled)."""
    x = np.random.default_rng(block).standard_normal(4 * BLOCK).astype(np.float32)
    outs = [np.zeros(4 * BLOCK, np.float32), np.zeros(4 * BLOCK, np.int32),
            np.zeros(4 * BLOCK, np.int32), np.zeros(4 * BLOCK, np.float32)]
    interp, native = both(compiled, 4 * BLOCK // block, block, [x, *outs])
    assert same_bits(interp, native)
    if block == BLOCK:
        i = np.arange(4 * BLOCK)
        assert np.array_equal(native[1], x.reshape(4, BLOCK)[:, ::-1].reshape(-1))
        assert np.array_equal(native[2], (i + POISON).astype(np.int32))
        assert (native[3] == POISON).all()
        d = native[4].reshape(4, BLOCK)
        assert np.isnan(d[:, :3]).all() and np.array_equal(d[:, 3:],
                                                           x.reshape(4, BLOCK)[:, :-3])


def test_arena_and_spill_slots_are_cache_line_aligned(compiled):
    """The arena (and its template) and the spill slots start at a 64-byte boundary, whatever
    NumPy's allocator gives (it aligns to 16): vector accesses at aligned offsets then never
    straddle two cache lines."""
    from pypto.backend.native.phases import ALIGN, aligned_words, arena_layout, arena_template

    assert ALIGN == 64
    for count in (1, 3, 100, 1000):
        words = aligned_words(count)
        assert words.ctypes.data % ALIGN == 0 and words.size == count and not words.any()
    assert arena_template(arena_layout(compiled.func)).ctypes.data % ALIGN == 0
