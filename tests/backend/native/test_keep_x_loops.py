"""`fast_blocks.KEEP_X_LOOPS` (docs/native.md#full-blocks): the full lanes' row loop of a
block of 16 x 8 lanes stays a loop, which LLVM vectorises, instead of 16 unrolled scalar lanes;
the bits are the interpreter's (partial edge blocks, NaN, -0, infinities)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native import fast_blocks, jit
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import scale2d_ids, scale2d_ref

pytestmark = pytest.mark.shared_native_cache


def _optimised(kernel, x, block, monkeypatch, on):
    monkeypatch.setattr(fast_blocks, "KEEP_X_LOOPS", on)
    h, w = x.shape
    func = pto.compile(kernel, args=(x, np.zeros_like(x), h, w, 1.5, -0.25), block=block).func
    func = func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (*block, 1)])
    text = jit._module_text(jit.llvm_module(func))
    return text, str(jit._optimised(text, unroll=True))


def test_the_row_loop_is_kept_and_vectorised(monkeypatch):
    x = np.ones((40, 50), np.float32)
    text, opt = _optimised(scale2d_ids, x, (16, 8), monkeypatch, True)
    assert text.count("llvm.loop.unroll.disable") == 1
    assert opt.count("fmul <16 x float>") > opt.count("fmul float")
    text, opt = _optimised(scale2d_ids, x, (16, 8), monkeypatch, False)  # (the check can fail)
    assert "llvm.loop.unroll.disable" not in text
    assert opt.count("fmul <16 x float>") < opt.count("fmul float")


@pytest.mark.parametrize("block", [(8, 8), (128, 2)])
def test_other_widths_are_left_to_llvm(block, monkeypatch):
    text, _ = _optimised(scale2d_ids, np.ones((40, 300), np.float32), block, monkeypatch, True)
    assert "llvm.loop.unroll.disable" not in text


@pytest.mark.parametrize("h,w", [(40, 50), (64, 64), (17, 33)])
def test_both_backends_agree(h, w):
    rng = np.random.default_rng(h * w)
    x = rng.standard_normal((h, w)).astype(np.float32)
    x.flat[::7] = -0.0
    x.flat[3::11] = np.inf
    x.flat[5::13] = np.float32(np.nan)
    grid = (-(-w // 16), -(-h // 8))
    interp, native = both(scale2d_ids, grid, (16, 8), [x, np.zeros_like(x)], (h, w, 1.5, -0.25))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], scale2d_ref(x, 1.5, -0.25))
