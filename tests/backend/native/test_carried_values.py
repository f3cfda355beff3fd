"""A value a later loop recomputes, carried from the earlier loop through the element the later
loop stores to (docs/native.md#carried-values): bit for bit against the interpreter (the
oracle) and NumPy, the kernel's errors unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.carried_values import carry_values
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_softmax import BLOCK, emulated_sum, softmax_rows

B = 32


@pto.kernel
def exp_twice(x, y, total, ncols, WRITE: pto.constexpr):
    """Sum of exp per lane over a block-strided row, then the row's exp halved (exp computed
    again); WRITE: x is written between the loops, so the second exp may differ."""
    row = pto.get_block_id()
    tid = pto.get_local_id()
    src = x + row * ncols
    dst = y + row * ncols
    acc = 0.0
    for c0 in range(0, ncols, B):
        c = c0 + tid
        if c < ncols:
            acc = acc + pto.exp(pto.load(src + c))
    pto.store(total + row * B + tid, acc)
    if WRITE:
        pto.store(src + tid, acc)
    for c0 in range(0, ncols, B):
        c = c0 + tid
        if c < ncols:
            pto.store(dst + c, pto.exp(pto.load(src + c)) * 0.5)


def _exps(kernel) -> int:
    return sum(op.name == "math.exp" for op in kernel.body.walk())


def _args(rows, ncols, y_elements=None):
    rng = np.random.default_rng(ncols)
    x = rng.standard_normal((rows, ncols)).astype(np.float32)
    y = np.full(y_elements if y_elements is not None else rows * ncols, np.nan, np.float32)
    return [x, y, np.zeros(rows * B, np.float32)]


@pytest.fixture(scope="module")
def carried():
    return pto.compile(exp_twice, args=(*_args(2, 8), 8, 0), block=B)


@pytest.mark.parametrize("ncols", [100, 64, 7])
def test_carried_exp_bit_exact(carried, ncols):
    """Partial chunks (the guard), whole chunks, fewer columns than lanes."""
    rows = 3
    arrays = _args(rows, ncols)
    interp, native = both(carried, rows, B, arrays, (ncols, 0))
    assert same_bits(interp, native)
    e = np.exp(arrays[0].astype(np.float64)).astype(np.float32)  # (pto.exp: docs/language.md)
    np.testing.assert_array_equal(native[1].reshape(rows, ncols), e * np.float32(0.5))
    assert _exps(carry_values(carried.func)) == 1 and _exps(carried.func) == 2


def test_a_tensor_written_between_the_loops_is_not_carried():
    rows, ncols = 2, 2 * B  # (each lane's written element is one only it reads)
    arrays = _args(rows, ncols)
    compiled = pto.compile(exp_twice, args=(*arrays, ncols, 1), block=B)
    assert carry_values(compiled.func) is compiled.func
    interp, native = both(compiled, rows, B, arrays, (ncols, 1))
    assert same_bits(interp, native)


def test_the_later_stores_error_is_the_interpreters(carried):
    """y one row short: the added store in the first loop meets the bad element first; the
    launch's error is still the interpreter's (replayed), naming the later store."""
    rows, ncols = 3, 50
    arrays = _args(rows, ncols, y_elements=(rows - 1) * ncols)
    messages = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(carried, rows, B, (*copies, ncols, 0), backend=backend)
            pto.sync()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_softmax_rows_carried_bit_exact():
    rows, ncols = 3, BLOCK + 37
    x = (np.random.default_rng(9).standard_normal((rows, ncols)) * 4).astype(np.float32)
    arrays = [x, np.full_like(x, np.nan), np.zeros(rows, np.float32),
              np.zeros(rows, np.float32)]
    compiled = pto.compile(softmax_rows, args=(*arrays, ncols), block=BLOCK)
    assert _exps(carry_values(compiled.func)) == 1
    interp, native = both(compiled, rows, BLOCK, arrays, (ncols,))
    assert same_bits(interp, native)
    e = np.exp((x - x.max(axis=1)[:, None]).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(native[1], e / emulated_sum(e)[:, None])
