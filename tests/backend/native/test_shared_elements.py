"""Lanes sharing L1 elements between barriers, natively (docs/native.md#what-is-compiled-the-support-check):
every L1 write is a phase of its own, its lanes in order, so several lanes storing one element
leave the last lane's value and a later load sees every lane's store — the interpreter's
op-by-op order, bit for bit, against a NumPy model of that order. (Lanes sharing HBM elements
stay refused: tests/backend/native/test_lane_independence.py.)"""

from __future__ import annotations

import numpy as np

import pypto as pto
from tests.backend.native.helpers import same_bits

B = 64


@pto.kernel
def shared_l1(x, y):
    tid = pto.get_local_id()
    buf = pto.alloc_local(16)
    pto.store(buf + tid // 4, pto.load(x + pto.get_global_id()))  # 4 lanes per element
    v = pto.load(buf + (tid + 1) % 16 // 4)
    pto.store(buf + tid % 16, v * 2.0)  # 4 lanes (of 4 warps) per element
    pto.barrier_block()
    pto.store(y + pto.get_global_id(), pto.load(buf + tid % 16) + v)


def _reference(x: np.ndarray) -> np.ndarray:
    """Op by op over each block's lanes, the last lane winning each store."""
    y = np.empty_like(x)
    tid = np.arange(B)
    for b in range(x.size // B):
        xs = x[b * B:(b + 1) * B]
        buf = np.zeros(16, np.float32)
        for t in tid:
            buf[t // 4] = xs[t]
        v = buf[(tid + 1) % 16 // 4]
        for t in tid:
            buf[t % 16] = v[t] * np.float32(2)
        y[b * B:(b + 1) * B] = buf[tid % 16] + v
    return y


def test_lanes_storing_one_l1_element_in_the_interpreters_order():
    x = np.random.default_rng(5).standard_normal(3 * B).astype(np.float32)
    # (no barrier between the lanes' stores and loads: the static verifier and the race
    # detector would reject it; the interpreter's order still defines the bits)
    compiled = pto.compile(shared_l1, args=(x, np.zeros_like(x)), block=B,
                           pipeline="pto-allocate-l1", race_check=False)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros_like(x)
        pto.launch(compiled, 3, B, (x, y), backend=backend)
        outs.append([y])
    assert same_bits(*outs)
    np.testing.assert_array_equal(outs[1][0], _reference(x))
