"""`pto.addptr` in generated code (`lanes.addptr`): int64 element offsets plus sign-extended
offsets, computed by widening the offset first. Checked against Python integers, and end to
end: addresses beyond the int32 range are reported exactly, not wrapped."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter.lanes import addptr

I32 = np.iinfo(np.int32)


@pytest.mark.parametrize("base", [np.int64(0), np.int64(-7), np.int64(2**40),
                                  np.arange(6, dtype=np.int64) * 2**33])
@pytest.mark.parametrize("off", [np.array([0, 1, -1, I32.max, I32.min, 12345], np.int32),
                                 np.array([5, -5, 2**40, -2**40, 0, 1], np.int64),
                                 np.int32(-3), np.int64(2**35)])
def test_addptr_is_the_exact_int64_sum(base, off):
    got = addptr(base, off)
    want = [int(b) + int(o) for b, o in np.broadcast(base, off)]
    assert np.asarray(got).dtype == np.int64
    assert np.asarray(got).reshape(-1).tolist() == want


@pto.kernel
def far_load(x, out, far):
    i = pto.get_global_id()
    pto.store(out + i, pto.load(x + far + i * 2))  # not lane-affine: a gather


def test_an_address_past_int32_is_reported_exactly():
    x = pto.alloc_tensor(64 * 4)
    out = pto.alloc_tensor(64 * 4)
    pto.launch(far_load, grid=1, block=64, args=(x, out, I32.max))
    with pytest.raises(pto.MemoryAccessError) as info:
        pto.sync()
    assert info.value.address == I32.max and info.value.lane == (0, 0, 0)  # lane 1: 2**31 + 1
    assert f"at element {I32.max}" in str(info.value)
