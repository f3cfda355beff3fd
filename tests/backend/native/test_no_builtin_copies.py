"""`jit.NO_BUILTIN_COPIES` (docs/native.md#speed, seventh round): LLVM may not turn a block's
copy loop into a call of libc's `memcpy`. The object code of block_sum and atomic_total calls no
`memcpy` with the switch on and does with it off (so the check can fail), and both backends agree
bit for bit with it on."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native import jit
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_reduction import atomic_total, block_sum

N, BLOCK = 4096 + 100, 256


def _inputs(kernel):
    rng = np.random.default_rng(7)
    if kernel is atomic_total:
        x = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int64).astype(np.int32)
        return [x, np.zeros(1, np.int32)]
    x = rng.standard_normal(N).astype(np.float32)
    x[::97] = -0.0
    return [x, np.zeros(-(-N // BLOCK), np.float32)]


def _object(kernel, monkeypatch, on):
    monkeypatch.setattr(jit, "NO_BUILTIN_COPIES", on)
    return jit._compile_object(_func(kernel))[0]


@pytest.mark.parametrize("kernel", [block_sum, atomic_total], ids=["block_sum", "atomic_total"])
def test_copy_loops_call_no_memcpy(kernel, monkeypatch):
    assert b"memcpy" in _object(kernel, monkeypatch, False)  # (LLVM's loop idiom)
    assert b"memcpy" not in _object(kernel, monkeypatch, True)
    assert 'no-builtin-memcpy' in jit._module_text(jit.llvm_module(_func(kernel)))


def _func(kernel):
    func = pto.compile(kernel, args=(*_inputs(kernel), N, BLOCK, 8), block=BLOCK).func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (BLOCK, 1, 1)])
    return func


@pytest.mark.parametrize("kernel", [block_sum, atomic_total], ids=["block_sum", "atomic_total"])
def test_both_backends_agree(kernel):
    grid = -(-N // BLOCK)
    interp, native = both(kernel, grid, BLOCK, _inputs(kernel), (N, BLOCK, 8))
    assert same_bits(interp, native)
    x = _inputs(kernel)[0]
    if kernel is atomic_total:
        assert native[1][0] == x.sum(dtype=np.int32)
    else:
        sums = np.add.reduceat(x.astype(np.float64), np.arange(0, N, BLOCK))
        np.testing.assert_allclose(native[1], sums, rtol=1e-4, atol=1e-4)
