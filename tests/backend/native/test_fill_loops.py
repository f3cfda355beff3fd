"""`pto.fill` compiled as a store loop (pypto/backend/native/fill_loops.py,
docs/native.md#collectives): the interpreter's bits for float32 and int32 fills at an offset
inside an L1 buffer (-0, NaN, inf, negative integers), no callback on that path, a fill of
zero elements writes nothing, and an out-of-range fill raises the interpreter's error through
the callback."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import collectives, fill_loops
from tests.backend.native.helpers import both, same_bits

T = 64

pytestmark = pytest.mark.shared_native_cache  # (fill_loops.ENABLED is in the cache key; the
# callback spy runs after compiling)


@pto.kernel
def fill_part(y, v, n, off, T: pto.constexpr):
    """Block b: its L1 tile zeroed, then `n` elements from `off` set to `v`, stored to y."""
    buf = pto.alloc_local(T, dtype=y.dtype)
    pto.fill(buf, v * 0, T)
    pto.fill(buf + off, v, n)
    pto.wait(pto.async_store(y + pto.get_block_id() * T, buf, T * y.itemsize))


@pytest.fixture
def fills(monkeypatch):
    """The kinds of the block-level instructions that went through the callback."""
    seen: list[str] = []
    real = collectives._run
    monkeypatch.setattr(collectives, "_run", lambda kernel, site, *rest: (
        seen.append(site.kind), real(kernel, site, *rest))[1])
    return seen


@pytest.mark.parametrize("value", [np.float32(-2.5), np.float32(-0.0), np.float32(np.inf),
                                   np.float32(np.nan), np.int32(-7), np.int32(2**31 - 1)],
                         ids=["f32", "f32 -0", "f32 inf", "f32 nan", "i32", "i32 max"])
def test_a_fill_at_an_offset_gives_the_interpreters_bits(value, fills):
    y = np.zeros(2 * T, value.dtype)
    interp, native = both(fill_part, 2, 32, [y], (value, 10, 5, T))
    assert same_bits(interp, native)
    with np.errstate(invalid="ignore"):  # (v * 0: -0 or NaN where the value says)
        want = np.zeros((2, T), value.dtype) * value
    want[:, 5:15] = value
    np.testing.assert_array_equal(native[0].reshape(2, T).view(np.uint8), want.view(np.uint8))
    assert fills == []  # both fills compiled: no callback


def test_the_callback_path_gives_the_same_bits(monkeypatch):
    monkeypatch.setattr(fill_loops, "ENABLED", False)
    y = np.zeros(2 * T, np.float32)
    interp, native = both(fill_part, 2, 32, [y], (np.float32(3.25), 7, 50, T))
    assert same_bits(interp, native)
    assert (native[0].reshape(2, T)[:, 50:57] == 3.25).all()


def test_a_fill_of_nothing_and_one_past_the_end(fills):
    y = np.zeros(2 * T, np.float32)
    interp, native = both(fill_part, 2, 32, [y], (np.float32(1.0), 0, T, T))
    assert same_bits(interp, native) and not native[0].any()
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(fill_part, 2, 32, (y.copy(), np.float32(1.0), 10, 60, T),
                       backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "out-of-bounds fill destination: L1 buffer 'buf' element 69" in messages[1]
    assert "fill" in fills  # the error is the callback's
