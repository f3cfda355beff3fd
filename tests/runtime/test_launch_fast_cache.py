"""The launch-time cache key of plain Python values (`pypto.compiler._fast_key`) must pick the
same variant as the full key: a different dtype, an int that needs 64 bits, or another value of a
compile-time constant must each reach their own compiled variant."""

from __future__ import annotations

import numpy as np

import pypto as pto


@pto.kernel
def fill_scaled(o, n, k, SCALE: pto.constexpr):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.cast(k * SCALE, o.dtype))


def run(dtype, n, k, scale) -> np.ndarray:
    o = pto.alloc_tensor(4 * np.dtype(dtype).itemsize, dtype=dtype)
    pto.launch(fill_scaled, grid=1, block=32, args=(o, n, k, scale))
    out = np.empty(4, dtype)
    pto.memcpy_d2h(out, o)
    return out


def test_each_specialisation_reaches_its_own_variant():
    assert run(np.float32, 4, 3, 2).tolist() == [6.0] * 4
    assert run(np.float32, 4, 3, 5).tolist() == [15.0] * 4      # constexpr value
    assert run(np.int32, 4, 3, 5).tolist() == [15] * 4          # tensor dtype
    assert run(np.float32, 4, 3, 2).tolist() == [6.0] * 4       # the first again, cached
    big = run(np.float32, 4, 2**40, 1)                          # int64 parameter k
    assert big.tolist() == [float(np.float32(2**40))] * 4
    assert run(np.float32, 4, 3.5, 2).tolist() == [7.0] * 4     # float k
    variants = {id(v) for v in fill_scaled.fast_cache.values()}
    assert variants == {id(v) for v in fill_scaled.cache.values()}
    assert len(fill_scaled.cache) == 5
