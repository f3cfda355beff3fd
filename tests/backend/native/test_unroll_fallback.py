"""The loop-unrolling fallback of `jit.object_code` (docs/native.md#compile-time): a module
whose IR O3 grows past `UNROLL_LIMIT` times is optimised again without unrolling, and the
rolled code computes NumPy's (and the interpreter's) bits."""

from __future__ import annotations

import numpy as np

import pypto as pto
from pypto.backend.native import jit
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def poly(x, y, n, K: pto.constexpr):
    """y[i] = sum over k < K of x[i] * (k + 1): a constant-trip loop O3 unrolls fully."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        acc = v * 0
        for k in range(K):
            acc = acc + v * pto.cast(k + 1, pto.float32)
        pto.store(y + i, acc)


def test_the_rolled_fallback_gives_the_interpreters_and_numpys_bits(monkeypatch):
    calls: list[bool] = []
    real = jit._optimised
    monkeypatch.setattr(jit, "_optimised", lambda text, unroll: (
        calls.append(unroll), real(text, unroll))[1])
    monkeypatch.setattr(jit, "UNROLL_LIMIT", 0)  # (every module "grew": the fallback runs)
    x = np.arange(100, dtype=np.float32) * np.float32(0.37) - np.float32(11)
    y = np.zeros(100, np.float32)
    interp, native = both(poly, 1, 128, [x, y], (100, 16))
    assert calls == [True, False]
    assert same_bits(interp, native)
    want = np.zeros(100, np.float32)
    for k in range(16):
        want = want + x * np.float32(k + 1)
    np.testing.assert_array_equal(native[1].view(np.uint32), want.view(np.uint32))
