"""Fast prefixes of block-level loops (fast_prefix.py, docs/native.md#fast-prefixes): the
iterations whose range checks pass run in a loop of their own, then the loop as before from
where the prefix stopped. The bits are the interpreter's, the switch changes the generated code,
and a loop whose last iteration fails its check reports the interpreter's error."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import fast_prefix, jit
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import gemv_block_ref, gemv_block_row

pytestmark = pytest.mark.shared_native_cache


@pytest.mark.parametrize("rows,ncols,block", [(64, 256, 32), (33, 96, 32), (8, 512, 128)])
def test_gemv_block_row_is_bit_exact(rows, ncols, block):
    rng = np.random.default_rng(rows * ncols)
    A = rng.standard_normal((rows, ncols)).astype(np.float32)
    A.flat[::37] = -0.0
    x = rng.standard_normal(ncols).astype(np.float32)
    log2 = block.bit_length() - 1
    interp, native = both(gemv_block_row, rows, block, [A, x, np.zeros(rows, np.float32)],
                          (ncols, block, log2))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[2], gemv_block_ref(A, x, block))


def test_the_switch_changes_the_code(monkeypatch):
    A = np.ones((8, 256), np.float32)
    func = pto.compile(gemv_block_row, args=(A, np.ones(256, np.float32),
                                             np.zeros(8, np.float32), 256, 32, 5),
                       block=32).func
    interchanged = next(jit._variants(func))  # (the chunk loop at block level, as a build)
    on = jit.llvm_ir(interchanged)
    monkeypatch.setattr(fast_prefix, "ENABLED", False)
    off = jit.llvm_ir(interchanged)
    assert on != off and len(on) > len(off)


def test_a_failing_last_iteration_reports_the_interpreters_error():
    """ncols = 80 with blocks of 32: the chunk at k = 64 reads columns 64..95, past the end of
    the last row's data (A has 8 x 80 elements): the prefix stops there, the general loop's
    checked lanes report it."""
    rows, ncols, block = 8, 80, 32
    A = np.ones((rows, ncols), np.float32)
    x = np.ones(96, np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(gemv_block_row, rows, block, (A.copy(), x.copy(),
                                                     np.zeros(rows, np.float32), ncols, block, 5),
                       backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
