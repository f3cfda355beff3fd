"""The lane context holds its parts (docs/interpreter.md#the-lane-context-and-its-parts).

A kernel that uses every part (L1 and a copy: `ctx.memory`; lane loads, stores and an atomic:
`ctx.lanes`; fill and mma: `ctx.tiles`; the race detector: `ctx.races`) runs against a NumPy
reference, and an instrument looks at the lane context it ran on: each part provides its
protocol (parts.py), serves the context that holds it, and the context inherits from nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import parts
from pypto.backend.interpreter.instruments import Instrument
from pypto.backend.interpreter.lanes import LaneContext
from tests.conftest import from_device, to_device

T = 8  # T x T tiles, one element per lane


@pto.kernel
def every_part(A, B, C, total):
    """C tile of block b = A tile b @ B; every lane adds its A element to `total`."""
    b = pto.get_block_id()
    lid = pto.get_local_id()
    a_tile = pto.alloc_local(64)
    b_tile = pto.alloc_local(64)
    c_tile = pto.alloc_local(64)
    pto.fill(c_tile, 0.0, 64)
    tok = pto.async_load(a_tile, A + b * 64, 64 * 4)
    pto.wait(tok)
    pto.store(b_tile + lid, pto.load(B + lid))
    pto.barrier_block()
    pto.mma(c_tile, a_tile, b_tile, 8, 8, 8)
    pto.barrier_block()
    pto.store(C + b * 64 + lid, pto.load(c_tile + lid))
    pto.atomic_add(total, pto.load(a_tile + lid))


class SeeContext(Instrument):
    """Keeps the lane contexts the kernel ran on."""

    def __init__(self) -> None:
        self.contexts: list[LaneContext] = []

    def before(self, op_id, ctx, mask):
        if not self.contexts or self.contexts[-1] is not ctx:
            self.contexts.append(ctx)


@pytest.mark.parametrize("race_check", [False, True])
def test_a_kernel_on_every_part_runs_on_a_context_that_holds_them(race_check):
    blocks = 3
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, size=(blocks, T, T)).astype(np.float32)
    bm = rng.integers(-4, 5, size=(T, T)).astype(np.float32)
    c = np.zeros((blocks, T, T), dtype=np.float32)
    total = np.zeros(1, dtype=np.float32)
    args, tensors = to_device((a, bm, c, total))
    ck = pto.compile(every_part, args=args, block=64, race_check=race_check)
    watch = SeeContext()
    pto.sync()
    ck.executable.run((blocks, 1, 1), (64, 1, 1), args, instrument=watch)
    out_c, out_total = from_device(tensors)[2:]
    assert np.array_equal(out_c, a @ bm)  # small integers: exact in float32
    assert out_total[0] == a.sum()
    assert watch.contexts
    for ctx in watch.contexts:
        assert type(ctx).__bases__ == (object,)  # no mixins
        assert isinstance(ctx, parts.Vector)
        assert isinstance(ctx.memory, parts.Memory) and ctx.memory.ctx is ctx
        assert isinstance(ctx.lanes, parts.LaneAccess) and ctx.lanes.ctx is ctx
        assert isinstance(ctx.tiles, parts.Tiles) and ctx.tiles.ctx is ctx
        assert isinstance(ctx.races, parts.Races) and ctx.races.ctx is ctx
        assert ctx.inflight is ctx.memory.inflight and ctx.counters is ctx.memory.counters
