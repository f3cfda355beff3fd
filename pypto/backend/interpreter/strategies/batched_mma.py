"""A batch's `mma` at one offset in every block is one batched matmul over the blocks (`run`,
the run-time part `tile_unit.TileUnit.mma` calls with this Decision), reading lazy HBM tiles in
place (`strategies.batch_copy.LazyLoad`) and a lazy fill of C as its starting value
(`strategies.uniform_fill.LazyFill`). Whether every block uses one offset is data: the run time
checks it. The operands' views are planned once per buffers, offsets and shape (`MmaPlan`) and
kept with the arena (`L1Arena.plans`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xdsl.ir import Operation

from pypto.backend.interpreter.copies import Region, byte_region, l1_in_flight, span_key, view
from pypto.backend.interpreter.strategies import base, batch_copy, uniform_fill
from pypto.backend.interpreter.tile_ops import mma_accumulate
from pypto.dialects.traits import LoadMmaFootprint, MmaFootprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """An mma whose blocks share its offsets may run as one batched matmul."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A matrix multiply on tiles (its tile footprint is an mma's)."""
    return Decision() if op.has_trait(MmaFootprint) or op.has_trait(LoadMmaFootprint) else None


class MmaPlan:
    """A batched mma's operands with the same buffers and offsets as an earlier one of the lane
    vector: their (blocks, rows, cols) arena views, block-local byte regions and span keys, and
    the views as (n1, n2, rows, cols) stacks per block grid a lazy operand needed."""

    __slots__ = ("bufs", "offs", "shapes", "views", "regions", "keys", "dtypes", "extents",
                 "_stacks")

    def __init__(self, bufs: tuple[Any, Any, Any], offs: list[int],
                 shapes: tuple[tuple[int, int], ...], views: list[np.ndarray],
                 regions: list[Region]):
        self.bufs, self.offs, self.shapes = bufs, offs, shapes
        self.views, self.regions = views, regions
        self.keys = [span_key(r) for r in regions]
        self.dtypes = [b.data.dtype for b in bufs]
        self.extents = [(o, r * c) for o, (r, c) in zip(offs, shapes)]
        self._stacks: dict[tuple[int, int], list[np.ndarray]] = {}

    @staticmethod
    def of(blocks: int, bufs: tuple[Any, Any, Any], offs: list[int],
           shapes: tuple[tuple[int, int], ...]) -> MmaPlan | None:
        """The plan, or None when a tile lies outside its buffer (the general path reports it)."""
        views, regions = [], []
        for buf, o, (rows, cols) in zip(bufs, offs, shapes):
            if o < 0 or o + rows * cols > buf.count:
                return None
            step = buf.data.strides[0]
            views.append(view(buf.data, o, (blocks, rows, cols),
                               (buf.stride * step, cols * step, step)))
            regions.append(byte_region(buf, Region(o, rows, cols, cols)))
        return MmaPlan(bufs, offs, shapes, views, regions)

    def stacked(self, grid: tuple[int, int]) -> list[np.ndarray]:
        """The three arena views as (n1, n2, rows, cols) stacks: block i * n2 + j at [i, j]."""
        out = self._stacks.get(grid)
        if out is None:
            n1, n2 = grid
            out = []
            for buf, o, (rows, cols) in zip(self.bufs, self.offs, self.shapes):
                step = buf.data.strides[0]
                bstride = buf.stride * step
                out.append(view(buf.data, o, (n1, n2, rows, cols),
                                 (n2 * bstride, bstride, cols * step, step)))
            self._stacks[grid] = out
        return out



def run(decision: Decision, memory: Any, blocks: int, bufs: tuple[Any, Any, Any], offs: list[Any],
        m: int, n: int, k: int) -> bool:
    """Batch mode, every block's tiles at the same offsets: one batched matmul over
    (blocks, rows, cols) views of the arena, accumulated into C in place. The per-tile
    products are the BLAS calls the general path (`tile_unit.TileUnit._mma_one`) makes (same
    shapes and strides), so the bits are the general path's. Returns False, having changed nothing, when a check would fail (the
    general path then reports it)."""
    key = ("mma", bufs[0].geometry_key(), bufs[1].geometry_key(), bufs[2].geometry_key(),
           int(offs[0]), int(offs[1]), int(offs[2]), m, n, k)
    plans = memory.arena.plans
    plan = plans.get(key)
    if plan is None or plan.bufs[0].data.base is not bufs[0].data.base:
        plan = MmaPlan.of(blocks, bufs, [int(o) for o in offs], ((m, n), (m, k), (k, n)))
        if plan is None:
            return False
        if len(plans) >= 64:
            plans.clear()
        plans[key] = plan
    for buf, (o, size) in zip(bufs, plan.extents):
        if buf.init is not None and not buf.init_grid()[:, o:o + size].all():
            return False
    regions = plan.regions
    if len(memory.inflight):  # copies in flight (not the lazy loads)
        if any(l1_in_flight(memory.inflight, r, "read") for r in regions) or \
                l1_in_flight(memory.inflight, regions[0], "write"):
            return False
    views = plan.views
    start = None
    if memory.inflight.lazy or memory.inflight.fresh is not None:
        start, views = _lazy_views(memory, plan)
    c, a, b = views
    if start is None:
        mma_accumulate(c, a, b)
    else:  # C is a lazy fill: its value + the products, straight into C
        np.add(start, a @ b, out=c)
    if bufs[0].init is not None:
        o = int(offs[0])
        bufs[0].init_grid()[:, o:o + m * n] = True
    return True

def _lazy_views(memory: Any, plan: MmaPlan) -> tuple[Any, list[np.ndarray]]:
    """(C's lazy fill value or None, the operands) of a batched mma with lazy work pending:
    an A or B tile that is exactly a lazy load's bytes is read from HBM in place, as an
    (n1, n2, rows, cols) stack over the load's block grid (C and the other operand are
    reshaped to that stack); a C tile that is exactly a lazy fill of a float32 C with
    float32 operands is not read (the caller adds the products to the value); any other
    overlap with lazy work (C's tile, a part of a loaded tile) does that work first."""
    regions = plan.regions
    lazy = memory.inflight.lazy
    start = None
    key_c = (plan.keys[0], plan.dtypes[0])
    fill = next((lz for lz in lazy
                 if lz.key == key_c and isinstance(lz, uniform_fill.LazyFill)), None)
    if fill is not None and plan.dtypes[0] == plan.dtypes[1] == plan.dtypes[2] == \
            np.float32 and not regions[0].overlaps(regions[1]) and \
            not regions[0].overlaps(regions[2]):
        lazy.remove(fill)  # the mma writes every element of it and reads none
        start = fill.value
    memory.settle(regions[0])  # C is read and written
    found: dict[int, batch_copy.LazyLoad] = {}
    for i in (1, 2):
        key = (plan.keys[i], plan.dtypes[i])
        lz = next((lz for lz in lazy
                   if lz.key == key and isinstance(lz, batch_copy.LazyLoad)), None)
        if lz is None:
            memory.settle(regions[i])
        else:
            found[i] = lz
    if not found:
        return start, plan.views
    # the block grid of the stack: a 1-D grid (1, n) of starts fits any other (n1, n2)
    grid = max((lz.geo.grid[0], lz.geo.grid[1]) for lz in found.values())  # type: ignore
    hbm: list[np.ndarray | None] = [None, None, None]
    for i, lz in found.items():
        hbm[i] = lz.operand(*plan.shapes[i], grid)
        if hbm[i] is None:
            memory.settle(regions[i])
    if hbm[1] is None and hbm[2] is None:
        return start, plan.views
    stacked = plan.stacked(grid)
    return start, [stacked[i] if hbm[i] is None else hbm[i] for i in range(3)]
