"""Range checks over loop counters (pypto/backend/native/fast_blocks.py,
docs/native.md#fast-blocks): an access at `tile + tid + k` inside `for k in range(lo, hi)` with
block-uniform bounds is checked once per block at its first and last k (with the lane
corners), then runs unchecked and vectorised; bit for bit against the interpreter and NumPy,
and out-of-range counters still raise the interpreter's error."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import conv1d_ref, conv1d_taps_hbm, conv1d_taps_l1


@pytest.mark.parametrize("kernel", [conv1d_taps_l1, conv1d_taps_hbm])
@pytest.mark.parametrize("n, block, taps", [(1024, 64, 9), (1000, 64, 9), (77, 32, 5),
                                            (5, 32, 3)])
def test_conv1d_bit_exact(kernel, n, block, taps):
    rng = np.random.default_rng(n + taps)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(taps).astype(np.float32)
    y = np.zeros(n, np.float32)
    interp, native = both(kernel, (n + block - 1) // block, block, [x, w, y], (n, block, taps))
    assert same_bits(interp, native)
    assert np.array_equal(native[2], conv1d_ref(x, w))


@pto.kernel
def window_sum(x, y, lo, hi):
    """y[i] = sum of tile[tid + k] for k in [lo, hi): the counter's bounds are parameters."""
    tid = pto.get_local_id()
    tile = pto.alloc_local(96)
    pto.store(tile + tid, pto.load(x + pto.get_global_id()))
    if tid < 32:
        pto.store(tile + 64 + tid, 0.5)
    pto.barrier_block()
    acc = 0.0
    for k in range(lo, hi):
        acc = acc + pto.load(tile + tid + k)
    pto.store(y + pto.get_global_id(), acc)


def _window_ref(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    out = np.zeros_like(x)
    for b in range(x.size // 64):
        tile = np.concatenate([x[b * 64:(b + 1) * 64], np.full(32, 0.5, np.float32)])
        acc = np.zeros(64, np.float32)
        for k in range(lo, hi):
            acc = acc + tile[np.arange(64) + k]
        out[b * 64:(b + 1) * 64] = acc
    return out


@pytest.mark.parametrize("lo, hi", [(0, 33), (3, 17), (5, 5), (9, 2)])  # incl. empty loops
def test_counter_bounds_from_parameters_bit_exact(lo, hi):
    x = np.random.default_rng(lo * 100 + hi).standard_normal(256).astype(np.float32)
    y = np.zeros(256, np.float32)
    interp, native = both(window_sum, 4, 64, [x, y], (lo, hi))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], _window_ref(x, lo, hi))


@pytest.mark.parametrize("lo, hi", [(0, 34), (0, 35)])
def test_counter_out_of_range_raises_the_interpreters_error(lo, hi):
    x = np.ones(128, np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(window_sum, 2, 64, (x, np.zeros(128, np.float32), lo, hi),
                       backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])


@pto.kernel
def strided_tiles(x, y, n):
    """`for t in range(0, n, 16)`: the last t is n - 16 (n a multiple of 16), so `x + t + tx`
    is in range although `x + (n - 1) + tx` would not be."""
    tx = pto.get_local_id()
    buf = pto.alloc_local(16)  # (L1 and a barrier: the loop is a phase's, in scf form)
    acc = 0.0
    for t in range(0, n, 16):
        acc = acc + pto.load(x + t + tx)
    pto.store(buf + tx, acc)
    pto.barrier_block()
    pto.store(y + tx, pto.load(buf + 15 - tx))


@pytest.mark.parametrize("n", [64, 16, 0, 40])
def test_strided_counter_checked_at_its_last_value(n):
    x = np.random.default_rng(n).standard_normal(max(n, 16)).astype(np.float32)
    y = np.zeros(16, np.float32)
    if n % 16:  # 40: the last tile (t = 32) reads x[32 + tx], out of range for tx >= 8
        errors = []
        for backend in ("interpreter", "native"):
            with pytest.raises(MemoryAccessError) as info:
                pto.launch(strided_tiles, 1, 16, (x, y.copy(), n), backend=backend)
            errors.append(str(info.value))
        assert errors[0] == errors[1]
        return
    interp, native = both(strided_tiles, 1, 16, [x, y], (n,))
    assert same_bits(interp, native)
    want = np.zeros(16, np.float32)
    for t in range(0, n, 16):
        want = want + x[t:t + 16]
    assert np.array_equal(native[1], want[::-1])
