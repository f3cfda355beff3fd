"""Full blocks inside phases (pypto/backend/native/full_phases.py, docs/native.md#full-blocks):
a phase whose guards hold for every lane it runs calls an unguarded lane function. Bit for bit
against the interpreter and NumPy (conv1d with ragged sizes: the first block fails `g >= 0`,
the last `g < n` and `i < n`, the middle ones run full), and an access out of range in a phase
with guards still raises the interpreter's error."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import llvm_ir
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import conv1d_ref, conv1d_taps_hbm


def test_phase_guard_check_and_full_lane_function_are_generated():
    x = np.zeros(256, np.float32)
    ck = pto.compile(conv1d_taps_hbm, args=(x, np.zeros(9, np.float32), x.copy(), 256, 64, 9),
                     block=64)
    text = llvm_ir(ck.func)
    assert ".guards" in text and ".full.lane" in text


@pytest.mark.parametrize("n", [4096 + 13, 129])
def test_conv1d_full_phases_bit_exact(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(9).astype(np.float32)
    y = np.zeros(n, np.float32)
    interp, native = both(conv1d_taps_hbm, (n + 63) // 64, 64, [x, w, y], (n, 64, 9))
    assert same_bits(interp, native)
    assert np.array_equal(native[2], conv1d_ref(x, w))


def test_out_of_range_in_a_full_phase_raises_the_interpreters_error():
    x = np.ones(200, np.float32)  # n = 256 claims more elements than x and y hold
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(conv1d_taps_hbm, 4, 64, (x.copy(), np.ones(9, np.float32),
                                               np.zeros(200, np.float32), 256, 64, 9),
                       backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
