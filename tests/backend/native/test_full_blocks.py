"""Full blocks (pypto/backend/native/full_blocks.py, docs/native.md#full-blocks): the lane
loops without the bounds guards every lane of a block passes, bit for bit against the
interpreter and NumPy, with the edges that exercise the guard check (partial blocks, odd sizes,
a guard that is true in some blocks and false in others, negative strides, a guard whose int32
arithmetic wraps, a launch block other than the compiled one)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import llvm_ir
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def scale2d(x, y, h, w, a, b):
    c = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    r = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    if r < h and c < w:
        pto.store(y + (r * w + c), a * pto.load(x + (r * w + c)) + b)


@pto.kernel
def horner4(coef, x, y, n):
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(x + i)
    acc = pto.load(coef + 4)
    for k in range(3, -1, -1):
        acc = acc * v + pto.load(coef + k)
    pto.store(y + i, acc)


@pto.kernel
def reverse_clamp(x, y, count, n):
    """A negative stride (`n - 1 - i`), a select and an atomic count under the guard."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + (n - 1 - i))
        pto.store(y + i, pto.select(v > 0.5, 0.5, v))
        pto.atomic_add(count, pto.cast(v > 0.5, pto.int32))


@pto.kernel
def two_sided(x, y, n):
    """`g >= 1` (a constant lower bound, expected true) and `g < n - 1`; else a store of -1."""
    g = pto.get_global_id()
    if g >= 1 and g < n - 1:
        pto.store(y + g, pto.load(x + g - 1) + pto.load(x + g + 1))
    elif g < n:
        pto.store(y + g, -1.0)


@pto.kernel
def wraps(y, n, k):
    """A guard whose int32 product wraps for large lane ids: both backends compare the wrapped
    value (the guard check refuses such a block, the fast lanes run it)."""
    i = pto.get_global_id()
    if i < n:
        if i * k < 1000000:
            pto.store(y + i, 1)
        else:
            pto.store(y + i, 2)


def _scale2d_case(h: int, w: int, block: tuple[int, int], launch_block: tuple[int, int]):
    rng = np.random.default_rng(h * 1000 + w)
    x = rng.standard_normal((h, w)).astype(np.float32)
    y = np.zeros_like(x)
    ck = pto.compile(scale2d, args=(x, y, h, w, 1.5, -0.25), block=block)
    grid = ((w + launch_block[0] - 1) // launch_block[0],
            (h + launch_block[1] - 1) // launch_block[1])
    return ck, grid, x, y


@pytest.mark.parametrize("h, w, block, launch_block", [
    (64, 64, (16, 8), (16, 8)),     # whole blocks: the constant-shape full lanes
    (37, 45, (16, 8), (16, 8)),     # partial edge blocks in both dimensions
    (64, 48, (16, 8), (8, 4)),      # another launch block than the compiled one
    (1, 1, (16, 8), (16, 8)),       # one lane in range
])
def test_scale2d_full_blocks_bit_exact(h, w, block, launch_block):
    ck, grid, x, y = _scale2d_case(h, w, block, launch_block)
    interp, native = both(ck, grid, launch_block, [x, y], (h, w, 1.5, -0.25))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], np.float32(1.5) * x + np.float32(-0.25))


@pytest.mark.parametrize("n", [1024, 1000, 257, 3])
def test_early_return_guard_bit_exact(n):
    rng = np.random.default_rng(n)
    coef = rng.standard_normal(5).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    grid = (n + 255) // 256
    interp, native = both(horner4, grid, 256, [coef, x, y], (n,))
    assert same_bits(interp, native)
    acc = np.full(n, coef[4], np.float32)
    for k in range(3, -1, -1):
        acc = acc * x + coef[k]
    assert np.array_equal(native[2], acc)


@pytest.mark.parametrize("n", [2048, 1999])
def test_negative_stride_select_and_atomic_bit_exact(n):
    rng = np.random.default_rng(n)
    x = rng.random(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    count = np.zeros(1, np.int32)
    interp, native = both(reverse_clamp, (n + 127) // 128, 128, [x, y, count], (n,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], np.minimum(x[::-1], np.float32(0.5)))
    assert int(native[2][0]) == int(np.count_nonzero(x > 0.5))


@pytest.mark.parametrize("n", [1024, 777])
def test_guards_true_in_some_blocks_false_in_others(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    interp, native = both(two_sided, (n + 63) // 64, 64, [x, y], (n,))
    assert same_bits(interp, native)
    want = np.full(n, -1.0, np.float32)
    want[1:-1] = x[:-2] + x[2:]
    assert np.array_equal(native[1], want)


def test_guard_with_wrapping_int32_arithmetic():
    n, k = 65536, 100000
    y = np.zeros(n, np.int32)
    interp, native = both(wraps, n // 256, 256, [y], (n, k))
    assert same_bits(interp, native)
    product = (np.arange(n, dtype=np.int64) * k + 2 ** 31) % 2 ** 32 - 2 ** 31  # int32 wrap
    assert np.array_equal(native[0], np.where(product < 1000000, 1, 2).astype(np.int32))


def test_full_lane_function_and_guard_check_are_generated():
    x = np.zeros((4, 4), np.float32)
    ck = pto.compile(scale2d, args=(x, x.copy(), 4, 4, 1.0, 0.0), block=(16, 8))
    text = llvm_ir(ck.func)
    assert '@"scale2d.full.lane"' in text or "@scale2d.full.lane" in text
    assert "scale2d.guards" in text
