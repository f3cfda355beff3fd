"""One range and guard check per launch (pypto/backend/native/launch_checks.py,
docs/native.md#one-check-per-launch): bit for bit against the interpreter and NumPy, with a
launch that passes (every block runs its full lanes unchecked), one whose edge blocks fail it
(the per-block path), an out-of-range launch whose error is the interpreter's, a block-id
product that wraps int32, and a kernel the launch check declines (a block id taken mod 2)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import llvm_ir
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import add3d  # the users' zoo's 3-D kernel


@pto.kernel
def parity(x, y, n):
    """An offset with `get_block_id(0) % 2`: affine per block, not over the launch."""
    i = (pto.get_block_id(0) % 2) * pto.get_block_dim(0) + pto.get_local_id(0)
    if i < n:
        pto.store(y + pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0),
                  pto.load(x + i))


def _volume(d: int, h: int, w: int):
    rng = np.random.default_rng(d * h * w)
    x = rng.standard_normal((d, h, w)).astype(np.float32)
    y = rng.standard_normal((d, h, w)).astype(np.float32)
    return x, y, np.zeros_like(x)


@pytest.fixture(scope="module")
def add3d_kernel():
    x, y, out = _volume(4, 8, 32)
    return pto.compile(add3d, args=(x, y, out, 4, 8, 32), block=(8, 4, 2))


def test_launch_checks_are_generated_and_declined(add3d_kernel):
    assert "add3d.launch.range" in llvm_ir(add3d_kernel.func)
    assert "add3d.launch.guards" in llvm_ir(add3d_kernel.func)
    x = np.zeros(64, np.float32)
    ck = pto.compile(parity, args=(x, x.copy(), 32), block=16)
    text = llvm_ir(ck.func)
    assert "parity.guards" in text and "parity.launch" not in text
    interp, native = both(ck, 4, 16, [np.arange(64, dtype=np.float32), x.copy()], (32,))
    assert same_bits(interp, native)
    expect = np.tile(np.arange(32, dtype=np.float32), 2)
    assert np.array_equal(native[1], expect)


@pytest.mark.parametrize("shape, launch", [
    ((4, 8, 32), (8, 4, 2)),    # every block whole: the launch check passes
    ((3, 7, 29), (8, 4, 2)),    # partial edge blocks: per-block path
    ((4, 8, 32), (4, 2, 1)),    # another launch block than the compiled one
])
def test_add3d_bit_exact(add3d_kernel, shape, launch):
    d, h, w = shape
    x, y, out = _volume(d, h, w)
    grid = tuple(-(-n // b) for n, b in zip((w, h, d), launch))
    interp, native = both(add3d_kernel, grid, launch, [x, y, out], (d, h, w))
    assert same_bits(interp, native)
    assert np.array_equal(native[2], x + np.float32(2.0) * y)


def test_out_of_range_launch_reports_the_interpreters_error(add3d_kernel):
    """`d` larger than the arrays: the launch check fails, a block's check fails, the error is
    the interpreter's (block, lane, element)."""
    x, y, out = _volume(4, 8, 32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(add3d_kernel, (4, 2, 3), (8, 4, 2),
                       (x.copy(), y.copy(), out.copy(), 6, 8, 32), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "element 1024" in messages[0]


def test_block_id_product_wrapping_int32_is_exact():
    """`k * h * w` wraps int32 in the last blocks: the launch check refuses (its exact values
    overflow), the per-block checks decide, and the error is the interpreter's."""
    d, h, w = 4, 1, 2 ** 30
    x = np.zeros(8, np.float32)
    ck = pto.compile(add3d, args=(x, x.copy(), x.copy(), d, h, w), block=(8, 4, 2))
    # (only lanes with i < 8 are launched; k = 2, 3 make `k * w` wrap int32)
    with pytest.raises(pto.MemoryAccessError) as interp:
        pto.launch(ck, (1, 1, 2), (8, 1, 2), (x.copy(), x.copy(), x.copy(), d, h, w),
                   backend="interpreter")
    with pytest.raises(pto.MemoryAccessError) as native:
        pto.launch(ck, (1, 1, 2), (8, 1, 2), (x.copy(), x.copy(), x.copy(), d, h, w),
                   backend="native")
    assert str(interp.value) == str(native.value)
