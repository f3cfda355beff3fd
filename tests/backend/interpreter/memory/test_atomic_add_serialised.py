"""`pto.atomic_add` against a one-addition-at-a-time Python reference, in every dtype.

Lanes hitting one address are serialised in lane order (docs/language.md): lane k's `old` is
the address's value after the additions of the lower lanes, each rounded (or wrapped) in the
element type. The reference does exactly that with NumPy scalars, one lane at a time, so
float16 absorption (2048 + 1 == 2048), float32 rounding order and int32 wrap-around all have to
match bit for bit. Contention patterns: no two lanes alike, one address for every lane, a few
hot addresses, and a mix of group lengths (which exercises every power-of-two bucket).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto


@pto.kernel
def scatter_add(buf, idx, val, olds, n):
    i = pto.get_global_id()
    if i < n:
        old = pto.atomic_add(buf + pto.load(idx + i), pto.load(val + i))
        pto.store(olds + i, old)


def reference(buf: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    buf = buf.copy()
    olds = np.empty(val.size, buf.dtype)
    with np.errstate(all="ignore"):
        for k in range(idx.size):
            olds[k] = buf[idx[k]]
            buf[idx[k]] = buf[idx[k]] + val[k]
    return buf, olds


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def pattern(kind: str, n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "distinct":
        return rng.permutation(size)[:n].astype(np.int32)
    if kind == "one":
        return np.full(n, size // 2, np.int32)
    if kind == "wide":      # addresses spanning more than 2^16 elements (two radix passes)
        return np.concatenate([rng.integers(0, size, n - 50), np.full(50, size - 2)]).astype(
            np.int32)
    if kind == "hot":
        return rng.choice([0, 3, size - 1], n).astype(np.int32)
    # group lengths 1, 2, 3, ..., spread over the lanes
    lengths = np.arange(1, n + 1)
    groups = np.repeat(np.arange(n), lengths)[:n] % size
    return rng.permutation(groups).astype(np.int32)


DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("kind", ["distinct", "one", "hot", "mixed", "wide"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_old_values_and_totals_match_sequential_additions(run, dtype, kind):
    rng = np.random.default_rng(len(kind) * 31 + np.dtype(dtype).num)
    n, size = 700, 70_001 if kind == "wide" else 997
    idx = pattern(kind, n, size, rng)
    if dtype not in (np.int32, np.int64):
        # magnitudes spread over many binades: the rounding of every step depends on the order
        val = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
        buf = (rng.standard_normal(size) * 1000).astype(dtype)
    else:
        info = np.iinfo(dtype)
        val = rng.integers(info.max // 4, info.max // 2, n, dtype=dtype)   # wraps around
        buf = rng.integers(info.min, info.max, size, dtype=dtype)
    want_buf, want_olds = reference(buf, idx, val)
    olds = np.zeros(n, dtype)
    got_buf, _, _, got_olds = run(scatter_add, (n + 127) // 128, 128, (buf, idx, val, olds, n))
    np.testing.assert_array_equal(bits(got_olds), bits(want_olds))
    np.testing.assert_array_equal(bits(got_buf), bits(want_buf))


def test_float16_absorption_is_kept():
    """2048 + 1 rounds back to 2048 in float16 at every step: a sum taken in float32 and
    rounded once (4096) would be wrong."""
    n = 2048
    buf = np.array([2048], np.float16)
    olds = np.zeros(n, np.float16)
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in
              (buf, np.zeros(n, np.int32), np.ones(n, np.float16), olds)]
    pto.memcpy_h2d(device[0], buf)
    pto.memcpy_h2d(device[1], np.zeros(n, np.int32))
    pto.memcpy_h2d(device[2], np.ones(n, np.float16))
    pto.launch(scatter_add, grid=n // 256, block=256, args=(*device, n))
    out = np.empty(1, np.float16)
    pto.memcpy_d2h(out, device[0])
    pto.memcpy_d2h(olds, device[3])
    assert out[0] == 2048
    assert np.all(olds == 2048)
