"""The code-shaping switches (`ENABLED` of tile_loops.py and the others) are part of the native
disk cache key (switches.py, docs/native.md#the-cache): object code compiled with a switch on
is never read back with it off, and each way gives NumPy's bits."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def texp_tile(X, Y):
    x = pto.alloc_tile(4, 8, dtype=pto.float32)
    pto.wait(pto.async_load(x, X, 4 * 8 * 4))
    pto.texp(x, x)
    pto.store(Y, x, 4 * 8 * 4)


@pytest.mark.fresh_native_cache
def test_tile_loops_switch_is_part_of_the_cache_key(monkeypatch):
    from pypto.backend.native import switches, tile_loops
    from pypto.backend.native.jit import NativeKernel

    x = np.linspace(-3, 3, 32, dtype=np.float32)
    expect = np.exp(x.astype(np.float64)).astype(np.float32)  # the interpreter's definition
    ck = pto.compile(texp_tile, args=(x, np.zeros(32, np.float32)), block=1)
    assert switches.cache_key() == "switched off: "
    assert not NativeKernel(ck.func, ck.name).cached  # compiled with the loop nests ...
    assert NativeKernel(ck.func, ck.name).cached      # ... and read back
    monkeypatch.setattr(tile_loops, "ENABLED", False)
    assert switches.cache_key() == "switched off: tile_loops"
    assert not NativeKernel(ck.func, ck.name).cached  # the callback form: a key of its own
    for enabled in (False, True):
        monkeypatch.setattr(tile_loops, "ENABLED", enabled)
        y = np.zeros(32, np.float32)
        pto.launch(texp_tile, 1, 1, (x, y), backend="native")
        assert np.array_equal(y.view(np.uint32), expect.view(np.uint32))
