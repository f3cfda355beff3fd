"""Row order (pypto/backend/native/row_order.py, docs/native.md#row-order): a launch whose
lanes are proven independent runs them in the arrays' memory order, bit for bit the
interpreter's; a launch whose lanes write shared elements keeps the block order (the last
writer in the interpreter's lane order wins on both backends); the predicate's verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import pypto as pto
from pypto.backend.native.fast_blocks import UNCHECKED_ATTR, fast_variants
from pypto.backend.native.full_blocks import full_variants
from pypto.backend.native.jit import NATIVE_PIPELINE
from pypto.backend.native.row_order import ORDER_SLOT, reorderable
from pypto.ir import make_context
from pypto.passes import parse_pipeline
from pypto.runtime.tiering import native_code
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import add3d, transpose_naive


@pto.kernel
def rows_at(x, out, h, w, s):
    """Row j of the lanes written at `out[j * s + i]`: rows overlap when `s < w`."""
    i = pto.get_global_id(0)
    j = pto.get_global_id(1)
    if i < w and j < h:
        pto.store(out + j * s + i, pto.load(x + j * w + i) * 3.0)


@pto.kernel
def halves(x, out, h, w, d):
    """A division by a scalar in the lane: it can fail (d == 0), so never reordered."""
    i = pto.get_global_id(0)
    j = pto.get_global_id(1)
    if i < w and j < h:
        pto.store(out + j * w + i, pto.load(x + j * w + i) + (i // d))


def _specials(n: int) -> np.ndarray:
    """Floats with NaN payloads, -0 and infinities among random values."""
    v = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    bits = v.view(np.uint32)
    bits[::7] = 0x7FC0_1234
    bits[3::11] = 0x8000_0000
    bits[5::13] = 0x7F80_0000
    return v


@pytest.fixture(scope="module")
def rows_kernel():
    x = np.zeros(64, np.float32)
    return pto.compile(rows_at, args=(x, x.copy(), 4, 16, 16), block=(8, 2))


def test_independent_lanes_run_in_row_order_bit_exact():
    """add3d over whole blocks: the launch's proof passes (slot set), the same bits as the
    interpreter and NumPy, special values included."""
    d, h, w = 4, 8, 32
    x = _specials(d * h * w).reshape(d, h, w)
    y = _specials(d * h * w + 1)[: d * h * w].reshape(d, h, w)
    ck = pto.compile(add3d, args=(x, y, np.zeros_like(x), d, h, w), block=(8, 4, 2))
    interp, native = both(ck, (4, 2, 2), (8, 4, 2), [x, y, np.zeros_like(x)], (d, h, w))
    assert same_bits(interp, native)
    expect = x + np.float32(2.0) * y
    assert np.array_equal(np.isnan(expect), np.isnan(native[2]))
    assert np.array_equal(expect[~np.isnan(expect)], native[2][~np.isnan(expect)])
    assert native_code(ck, True).err[ORDER_SLOT] == 1


@pytest.mark.parametrize("s", [16, 5])
def test_shared_elements_keep_the_block_order(rows_kernel, s):
    """`s = w`: rows apart, proven, row order. `s = 5 < w`: lanes of different rows (and
    blocks) write one element; the proof fails at launch and the block order runs: the last
    writer in the interpreter's lane order wins, as on the interpreter."""
    h, w = 4, 16
    x = _specials(h * w)
    out = np.zeros(h * s + w, np.float32)
    grid, block = (2, 2), (8, 2)
    interp, native = both(rows_kernel, grid, block, [x, out], (h, w, s))
    assert same_bits(interp, native)
    expect = out.copy()
    for by in range(grid[1]):  # blocks in order, lanes x fastest within
        for bx in range(grid[0]):
            for ty in range(block[1]):
                for tx in range(block[0]):
                    i, j = bx * block[0] + tx, by * block[1] + ty
                    expect[j * s + i] = x[j * w + i] * np.float32(3.0)
    assert np.array_equal(expect.view(np.uint32), native[1].view(np.uint32))
    assert native_code(rows_kernel, True).err[ORDER_SLOT] == (1 if s == w else 0)


def _full_lane(kernel, args, block):
    """The full lane function of `kernel` in cf form (before lowering)."""
    ck = pto.compile(kernel, args=args, block=block)
    module = ModuleOp([ck.func.clone()])
    for p in parse_pipeline(NATIVE_PIPELINE)[:2]:  # pto-simt-to-lanes, convert-scf-to-cf
        p.apply(make_context(), module)
    lane = next(f for f in module.body.block.ops if f.sym_name.data.endswith(".lane"))
    num_params = len(lane.body.blocks[0].args) - 13
    _, fast, _ = fast_variants(lane, ck.name, num_params)
    _, full = full_variants(lane, fast, ck.name, num_params)
    return full


def test_predicate_verdicts():
    """Rows of consecutive elements and no failing op: yes. Transpose's strided store (`c * h
    + r`: its blocks' tiles are the better order) or a division: no."""
    a = np.zeros(64, np.float32)
    assert reorderable(_full_lane(rows_at, (a, a.copy(), 4, 16, 16), (8, 2)), UNCHECKED_ATTR)
    assert not reorderable(_full_lane(transpose_naive, (a, a.copy(), 8, 8), (8, 2)),
                           UNCHECKED_ATTR)
    n = np.zeros(64, np.int32)
    assert not reorderable(_full_lane(halves, (n, n.copy(), 4, 16, 3), (8, 2)), UNCHECKED_ATTR)
