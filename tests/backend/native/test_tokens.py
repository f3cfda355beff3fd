"""Async copies whose tokens loops carry (docs/native.md#collectives, tokens.py): compiled when
no in-flight hazard can fire, bit for bit against the interpreter; refused (the interpreter
runs them, raising its RaceError) when one might."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.kernels.test_double_buffer import scale_double_buffered

T = 256


@pto.kernel
def stream_prefetch(x, y, ntiles, WAIT: pto.constexpr):
    """Tile k is read into registers, then tile k+1's load is issued into the same buffer and
    stays in flight (its token carried to the next iteration) while tile k is scaled, staged in
    L1 and stored."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    buf = pto.alloc_local(T)
    out = pto.alloc_local(T)
    tok = pto.async_load(buf, x + base, T * 4)
    for k in range(ntiles):
        if WAIT:
            pto.wait(tok)
        v = pto.load(buf + tid)
        pto.barrier_block()
        nxt = tok
        if k + 1 < ntiles:
            nxt = pto.async_load(buf, x + base + (k + 1) * T, T * 4)
        pto.store(out + tid, v * 3.0)
        pto.barrier_block()
        pto.store(y + base + k * T, out, T * 4)
        pto.barrier_block()
        tok = nxt
    pto.wait_all()


@pytest.mark.parametrize("ntiles,blocks", [(1, 1), (2, 3), (5, 2)])
def test_token_carried_by_a_loop_compiles_bit_exact(ntiles, blocks):
    x = np.random.default_rng(ntiles).standard_normal(blocks * ntiles * T).astype(np.float32)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros_like(x)
        pto.launch(stream_prefetch, blocks, T, (x, y, ntiles, True), backend=backend)
        outs.append(y)
    assert np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8))
    np.testing.assert_array_equal(outs[1], x * np.float32(3))


def test_a_read_of_a_copy_in_flight_is_the_same_error_on_both_backends():
    x = np.ones(3 * T, np.float32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.BarrierError, match="still writing it") as info:
            pto.launch(stream_prefetch, 1, T, (x, np.zeros_like(x), 3, False), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_ping_pong_by_parity_compiles():
    """Which buffer the carried token's copy writes depends on the iteration's parity: the
    proof follows the counter's residue (tokens.py), so it compiles (bit for bit:
    test_async_slots.py)."""
    x = np.ones(2 * T, np.float32)
    y = np.zeros_like(x)
    pto.launch(scale_double_buffered, 1, T, (x, y, 2, True), backend="native")
    np.testing.assert_array_equal(y, x * np.float32(3))
