"""Counted loops of a kernel without phases (pypto/backend/native/cf_loops.py,
docs/native.md#fast-blocks): after `convert-scf-to-cf` their counters are still box dimensions
of the block's range check, so `A + r * ncols + c` in `for c in range(ncols)` runs unchecked;
bit for bit against the interpreter and NumPy with ragged sizes, empty and strided loops, and
an out-of-range row still raises the interpreter's error."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.cf_loops import cf_loops
from pypto.backend.native.fast_blocks import _Analysis, fast_variants
from pypto.backend.native.jit import NATIVE_PIPELINE
from pypto.errors import MemoryAccessError
from pypto.ir import make_context
from pypto.passes import parse_pipeline
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import gemv_lane_ref, gemv_lane_row


@pto.kernel
def strided_sum(x, y, n, lo, hi, LEN: pto.constexpr):
    """y[i] = sum of x[i * LEN + c] for c in range(lo, hi, 3): a step > 1 and a lower bound
    from a parameter (the counter's last value is lo + (hi - 1 - lo) // 3 * 3)."""
    i = pto.get_global_id()
    if i < n:
        acc = 0.0
        for c in range(lo, hi, 3):
            acc = acc + pto.load(x + i * LEN + c)
        pto.store(y + i, acc)


@pytest.mark.parametrize("rows, cols", [(256, 64), (300, 7), (77, 1)])
def test_gemv_lane_row_bit_exact(rows, cols):
    rng = np.random.default_rng(rows * 100 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    y = np.zeros(rows, np.float32)
    interp, native = both(gemv_lane_row, (rows + 63) // 64, 64, [a, x, y], (rows, cols))
    assert same_bits(interp, native)
    assert np.array_equal(native[2], gemv_lane_ref(a, x))


@pytest.mark.parametrize("lo, hi", [(0, 16), (2, 15), (1, 13), (7, 7), (9, 3)])
def test_strided_counter_bit_exact(lo, hi):
    n, width = 200, 16
    x = np.random.default_rng(lo * 50 + hi).standard_normal(n * width).astype(np.float32)
    y = np.zeros(n, np.float32)
    interp, native = both(strided_sum, 4, 64, [x, y], (n, lo, hi, width))
    assert same_bits(interp, native)
    ref = np.zeros(n, np.float32)
    for c in range(lo, hi, 3):
        ref = ref + x.reshape(n, width)[:, c]
    assert np.array_equal(native[1], ref)


@pytest.mark.parametrize("cols", [65, 80])  # the last row's last columns past the end of A
def test_out_of_range_column_raises_the_interpreters_error(cols):
    a = np.ones(128 * 64, np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(gemv_lane_row, 2, 64, (a, np.ones(cols, np.float32),
                                              np.zeros(128, np.float32), 128, cols),
                       backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])


def test_counter_is_a_box_dimension_after_scf_to_cf():
    """The lowered lane function of gemv lane/row has one counted loop, and all three accesses
    (A, x, y) are proven by the range check (none left checked in the fast lane function)."""
    a = np.zeros((4, 4), np.float32)
    ck = pto.compile(gemv_lane_row, args=(a, np.zeros(4, np.float32), np.zeros(4, np.float32),
                                          4, 4), block=256)
    from xdsl.dialects.builtin import ModuleOp

    module = ModuleOp([ck.func.clone()])
    ctx = make_context()
    for p in parse_pipeline(NATIVE_PIPELINE)[:2]:  # pto-simt-to-lanes, convert-scf-to-cf
        p.apply(ctx, module)
    lane = next(f for f in module.body.block.ops if f.sym_name.data.endswith(".lane"))
    num_params = 5
    loops = cf_loops(lane, _Analysis(lane, num_params).uniform)
    assert len(loops) == 1
    (loop,) = loops.values()
    assert loop.ub is lane.body.blocks[0].args[4]  # c < ncols
    _, _, proven = fast_variants(lane, "gemv_lane_row", num_params)
    assert proven == 3
