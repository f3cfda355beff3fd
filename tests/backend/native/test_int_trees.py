"""Integer L1 trees as one sum by lane 0 (int_trees.py, docs/native.md#integer-trees): where
the rewrite applies and where it must not, and the interpreter's bits (the tree as written)
against the native code's, with wrap-around, partial blocks and poison."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.int_trees import sum_int_trees
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_reduction import atomic_total, block_sum


@pto.kernel
def tree_then_peek(x, out, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """The tree, then lane 0 stores buf[0] and buf[1] (a partial sum): not rewritten."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK, dtype=pto.int32)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid + s) + pto.load(buf + tid))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(out + 2 * pto.get_block_id(), pto.load(buf))
        pto.store(out + 2 * pto.get_block_id() + 1, pto.load(buf + 1))


@pto.kernel
def short_tree(x, out, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """A tree of LOG2 steps from BLOCK // 2, int64 (wraps at 2^64), the final `s` added."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK, dtype=pto.int64)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s >> 1
    if tid == 0:
        pto.store(out + pto.get_block_id(), pto.load(buf) + pto.cast(s, pto.int64))


def _func(kernel, args, block):
    func = pto.compile(kernel, args=args, block=block).func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (block, 1, 1)])
    return func


def _loops(func):
    return [o for o in func.body.blocks[0].ops if isinstance(o, scf.ForOp)]


def test_atomic_total_int32_is_one_sum_and_wraps_like_the_tree():
    x = np.random.default_rng(1).integers(-2**31, 2**31 - 1, 4096 + 100, dtype=np.int64)
    x = x.astype(np.int32)  # (sums wrap around many times)
    n = x.size
    func = _func(atomic_total, (x, np.zeros(1, np.int32), n, 256, 8), 256)
    rewritten = sum_int_trees(func)
    assert rewritten is not func
    (loop,) = [o for o in rewritten.walk() if isinstance(o, scf.ForOp)]
    assert int(loop.ub.owner.value.value.data) == 256  # (the sum over the buffer)
    grid = -(-n // 256)
    interp, native = both(atomic_total, grid, 256, [x, np.zeros(1, np.int32)], (n, 256, 8))
    assert same_bits(interp, native)
    assert native[1][0] == x.sum(dtype=np.int32)  # (NumPy's wrapping sum: any order)


def test_float_tree_and_a_read_partial_sum_are_not_rewritten():
    x = np.arange(512, dtype=np.float32)
    assert sum_int_trees(f := _func(block_sum, (x, np.zeros(2, np.float32), 512, 256, 8),
                                    256)) is f
    xi = np.random.default_rng(2).integers(-1000, 1000, 512).astype(np.int32)
    f = _func(tree_then_peek, (xi, np.zeros(4, np.int32), 256, 8), 256)
    assert sum_int_trees(f) is f
    interp, native = both(tree_then_peek, 2, 256, [xi, np.zeros(4, np.int32)], (256, 8))
    assert same_bits(interp, native)
    blocks = xi.reshape(2, 256)
    assert np.array_equal(native[1][0::2], blocks.sum(axis=1, dtype=np.int32))


@pytest.mark.parametrize("block,log2", [(128, 7), (128, 5)])
def test_int64_tree_wraps_and_a_short_tree_is_left_alone(block, log2):
    """log2 = 7 covers the block: rewritten, int64 sums wrap, `s` ends 0. log2 = 5 starts at
    s = 64 but stops at s = 2 (buf[0] is not the block's sum): S != 2^(trips-1), kept.
    (Blocks of 128: a tree whose strides are all <= 32 is unrolled first, tree_unroll.py.)"""
    x = np.random.default_rng(block + log2).integers(-2**63, 2**63 - 1, 4 * block,
                                                     dtype=np.int64)
    f = _func(short_tree, (x, np.zeros(4, np.int64), block, log2), block)
    assert (sum_int_trees(f) is not f) == (log2 == 7)
    interp, native = both(short_tree, 4, block, [x, np.zeros(4, np.int64)], (block, log2))
    assert same_bits(interp, native)
    if log2 == 7:
        assert np.array_equal(native[1], x.reshape(4, block).sum(axis=1, dtype=np.int64))


def test_fewer_lanes_than_the_first_stride_are_left_alone():
    """A 256-element tree compiled for blocks of 64 lanes: lanes 64..127 of the first step do
    not exist, so buf[0] is not the buffer's sum (its poison included): not rewritten."""
    x = np.random.default_rng(3).integers(-1000, 1000, 128).astype(np.int32)
    f = _func(atomic_total, (x, np.zeros(1, np.int32), 128, 256, 8), 64)
    assert sum_int_trees(f) is f
    interp, native = both(atomic_total, 2, 64, [x, np.zeros(1, np.int32)], (128, 256, 8))
    assert same_bits(interp, native)
