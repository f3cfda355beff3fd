"""Strided loops under a lane guard run iteration by iteration (guarded_interchange.py,
docs/native.md#strided-loops-interchanged): the same bits and errors as the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.guarded_interchange import interchange_guarded_loops
from pypto.backend.native.support import analyse
from pypto.dialects import pto as dialect
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def lcg_rows(seeds, out, n, iters, a):
    """A per-lane generator under the tail guard, carrying its state: `out[k * n + i]`."""
    i = pto.get_global_id()
    if i < n:
        x = pto.load(seeds + i)
        for k in range(iters):
            x = x * a + 12345
            if x % 3 != 0:              # a divergent branch inside the interchanged loop
                pto.store(out + k * n + i, x)


def lcg_ref(seeds: np.ndarray, iters: int, a: int) -> np.ndarray:
    x = seeds.copy()
    out = np.zeros((iters, x.size), np.int32)
    with np.errstate(over="ignore"):
        for k in range(iters):
            x = x * np.int32(a) + np.int32(12345)
            out[k] = np.where(x % 3 != 0, x, 0)
    return out.reshape(-1)


@pytest.fixture(scope="module")
def compiled():
    s = np.zeros(200, np.int32)
    return pto.compile(lcg_rows, args=(s, np.zeros(800, np.int32), 200, 4, 7), block=64)


def test_guarded_loop_gets_a_warp_barrier_and_is_accepted(compiled):
    moved = interchange_guarded_loops(compiled.func)
    assert moved is not compiled.func
    assert sum(isinstance(op, dialect.BarrierOp) for op in moved.walk()) == 1
    assert analyse(moved)[0] is None  # (so the native launches below run the copy)
    assert interchange_guarded_loops(moved) is moved  # (a barrier already: left alone)


def test_guarded_loop_bit_exact_with_a_partial_last_block():
    n, iters = 200, 4
    seeds = np.random.default_rng(3).integers(-2**31, 2**31, n).astype(np.int32)
    interp, native = both(lcg_rows, 4, 64, [seeds, np.zeros(n * iters, np.int32)],
                          (n, iters, 1103515245))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], lcg_ref(seeds, iters, 1103515245))


def test_guarded_loop_out_of_bounds_same_error():
    """The output one iteration short: the first bad store (iteration 3, block 0 lane 0) is
    reported by both backends with the same message."""
    n, iters = 100, 4
    seeds = np.ones(n, np.int32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as err:
            pto.launch(lcg_rows, 2, 64, (seeds, np.zeros(n * (iters - 1), np.int32), n,
                                         iters, 1), backend=backend)
            pto.sync()
        messages.append(str(err.value).splitlines()[0])
    assert messages[0] == messages[1]
