"""A batch's bulk copies of an affine block grid as one view (batch mode; tiles.py's run-time
copy planner): every block of the vector copies a tile of one geometry between the same L1
offset and its own HBM offset, so the checks run once for all blocks and the data moves in one
strided NumPy assignment (a load stays lazy, `LazyLoad`, until something needs its L1
bytes). The geometry found is remembered with the arena (`CopyPlan`, by the copy's operands
other than the HBM offset), so the next k step or launch checks one comparison instead of
searching the block grid again (`copy_again`).

- planner: `match` picks the bulk copies (ops with a copy's tile footprint);
- run time: `BlockMemory.copy` (`ctx.memory`) calls `copy_again` then `copy_blocks` with this
  Decision and itself (`memory`); each returns None, having changed nothing, when the shape is
  unusual or a check would fail, and the general path (block by block) then copies or reports
  the error, as it always does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation

from pypto.backend.interpreter import copies
from pypto.backend.interpreter.strategies import base
from pypto.backend.interpreter.affine import affine_grid, grid_injective
from pypto.backend.interpreter.modes import BATCH
from pypto.dialects.traits import CopyFootprint, LoadMmaFootprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """A batch's copies may run as one view of their affine block grid."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A bulk copy (its tile footprint is a copy's, or the fused load-and-multiply's), in batch
    mode (other modes run one block per vector: nothing to batch)."""
    if facts.mode == BATCH and (op.has_trait(CopyFootprint) or op.has_trait(LoadMmaFootprint)):
        return Decision()
    return None


def copy_again(decision: Decision, memory: Any, kind: str, dst_b: Any, src_b: Any,
               raw: tuple[Any, ...], blocks: int, site: int) -> Any:
    """A copy whose operands match a remembered plan (`CopyPlan`): its geometry from the plan,
    then `copy_geometry`. None when there is no plan or it does not fit."""
    key = plan_key(kind, dst_b, src_b, raw)
    plan = memory.arena.plans.get(key) if key is not None else None
    if plan is None:
        return None
    l1, hbm, hbm_o = (dst_b, src_b, raw[1]) if kind == "async_load" else (src_b, dst_b, raw[0])
    geo = plan.geometry(l1, hbm, blocks, hbm_o)
    if geo is None:
        return None
    return copy_geometry(memory, kind, geo, plan.l1_region, plan.span, site)


def plan_key(kind: str, dst_b: Any, src_b: Any, raw: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The key of a copy's plan: the instruction, where and how big its buffers are, and every
    operand but the HBM offset (None when one of them differs between lanes: no plan then)."""
    rest = raw[:1] + raw[2:] if kind == "async_load" else raw[1:]
    if any(isinstance(v, np.ndarray) for v in rest):
        return None
    return (kind, dst_b.geometry_key(), src_b.geometry_key()) + tuple(int(v) for v in rest)


class CopyGeometry:
    """A bulk copy of a batch of blocks, as far as it is the same for all of them: the L1 tile
    (one block-local offset and row stride) and the HBM tile shape; `starts` holds each
    block's HBM start and `grid` their affine form (`affine.affine_grid`) when they have one. Only
    built for well-formed, in-bounds copies (`of`)."""

    __slots__ = ("l1", "hbm", "blocks", "l1_o", "starts", "grid", "rows", "row_len",
                 "l1_stride", "hbm_stride")

    def __init__(self, l1: Any, hbm: Any, blocks: int, l1_o: int, starts: list[int] | None,
                 grid: tuple[int, int, int, int, int] | None, rows: int, row_len: int,
                 l1_stride: int, hbm_stride: int):
        self.l1, self.hbm, self.blocks, self.l1_o = l1, hbm, blocks, l1_o
        self.starts, self.grid = starts, grid
        self.rows, self.row_len = rows, row_len
        self.l1_stride, self.hbm_stride = l1_stride, hbm_stride

    @staticmethod
    def of(kind: str, dst_b: Any, src_b: Any, ops: list[Any], blocks: int) -> CopyGeometry | None:
        """The geometry of a copy with per-block operands `ops`, or None when it is not one L1
        tile for all blocks, or anything about it is unusual (the general path reports that)."""
        dst_o, src_o, nbytes, rows, src_stride, dst_stride = ops
        load = kind == "async_load"
        l1, hbm = (dst_b, src_b) if load else (src_b, dst_b)
        l1_o, hbm_o = (dst_o, src_o) if load else (src_o, dst_o)
        l1_stride, hbm_stride = (dst_stride, src_stride) if load else (src_stride, dst_stride)
        if l1.space != "local" or hbm.space != "global" or l1.data.dtype != hbm.data.dtype or \
                isinstance(nbytes, np.ndarray) or isinstance(rows, np.ndarray) or \
                isinstance(src_stride, np.ndarray) or isinstance(dst_stride, np.ndarray) or \
                isinstance(l1_o, np.ndarray):
            return None
        nbytes, rows, l1_o = int(nbytes), int(rows), int(l1_o)
        l1_stride, hbm_stride = int(l1_stride), int(hbm_stride)
        itemsize = l1.data.itemsize
        if rows <= 0 or nbytes <= 0 or nbytes % (rows * itemsize):
            return None
        row_len = nbytes // (rows * itemsize)
        if rows > 1 and min(l1_stride, hbm_stride) < row_len:
            return None
        if l1_o < 0 or l1_o + (rows - 1) * l1_stride + row_len > l1.count:
            return None
        starts = hbm_o.tolist() if isinstance(hbm_o, np.ndarray) else [int(hbm_o)] * blocks
        grid = affine_grid(starts)
        if grid is None:
            lo, hi = min(starts), max(starts)
        else:
            n1, n2, lo, d1, d2 = grid
            hi = lo + max(0, (n1 - 1) * d1) + max(0, (n2 - 1) * d2)
            lo += min(0, (n1 - 1) * d1) + min(0, (n2 - 1) * d2)
        if lo < 0 or hi + (rows - 1) * hbm_stride + row_len > hbm.count:
            return None
        return CopyGeometry(l1, hbm, blocks, l1_o, starts, grid, rows, row_len, l1_stride,
                             hbm_stride)

    def l1_view(self, array: np.ndarray, split: int = 1) -> np.ndarray:
        """Every block's L1 tile in `array` (the buffer's data, or its initialised flags,
        indexed alike): (blocks, rows, row_len), or with `split` = n2 the blocks as an
        (n1, n2) grid."""
        step = array.strides[0]
        bstride = self.l1.stride * step
        shape = (self.rows, self.row_len)
        strides = (self.l1_stride * step, step)
        if split > 1:
            shape = (self.blocks // split, split) + shape
            strides = (split * bstride, bstride) + strides
        else:
            shape = (self.blocks,) + shape
            strides = (bstride,) + strides
        return copies.view(array, self.l1_o, shape, strides)

    def hbm_dims(self) -> list[tuple[int, int]]:
        """(extent, element stride) of each axis of the HBM tiles of the affine block grid."""
        assert self.grid is not None
        n1, n2, _, d1, d2 = self.grid
        return [(n1, d1), (n2, d2), (self.rows, self.hbm_stride), (self.row_len, 1)]

    def hbm_view(self) -> np.ndarray:
        """(n1, n2, rows, row_len) view of the blocks' HBM tiles (block i * n2 + j at [i, j]),
        strides possibly 0 or negative."""
        data = self.hbm.data
        step = data.strides[0]
        dims = self.hbm_dims()
        return copies.view(data, self.grid[2], tuple(e for e, _ in dims),  # type: ignore[index]
                     tuple(s * step for _, s in dims))

    def hbm_tile(self, start: int) -> np.ndarray:
        """One block's (rows, row_len) HBM tile."""
        data = self.hbm.data
        step = data.strides[0]
        return copies.view(data, start, (self.rows, self.row_len), (self.hbm_stride * step, step))

    def hbm_regions(self) -> list[copies.Region]:
        return copies.distinct([copies.Region(o, self.rows, self.row_len, self.hbm_stride)
                                for o in self.block_starts()])

    def block_starts(self) -> list[int]:
        """Each block's HBM start (from the grid when a copy plan made the geometry)."""
        if self.starts is None:
            n1, n2, s0, d1, d2 = self.grid  # type: ignore[misc]
            self.starts = [s0 + i * d1 + j * d2 for i in range(n1) for j in range(n2)]
        return self.starts


class CopyPlan:
    """What a batch copy instruction found the last time it ran with operands of this geometry
    (buffers' places and sizes, every operand but the HBM offset): the copy's shape, its block
    grid without the start, and the HBM offsets per lane relative to lane 0's (`lane_rel`,
    None for a uniform offset). A later run whose per-lane offsets are the same pattern from
    another start (the next k step, the next launch) skips `BlockMemory.per_block` and `affine.affine_grid`:
    one comparison checks both that the offset is uniform in each block and that the blocks'
    starts are the same affine grid. Plain numbers only: it holds no buffer."""

    __slots__ = ("l1_o", "rows", "row_len", "l1_stride", "hbm_stride", "dims", "lane_rel",
                 "lo_rel", "hi_rel", "l1_region", "span", "starts")

    def __init__(self, geo: CopyGeometry, lane_rel: np.ndarray | None, s0: int):
        self.l1_o, self.rows, self.row_len = geo.l1_o, geo.rows, geo.row_len
        self.l1_stride, self.hbm_stride = geo.l1_stride, geo.hbm_stride
        self.lane_rel = lane_rel
        n1, n2, g0, d1, d2 = geo.grid  # type: ignore[misc]
        self.dims = (n1, n2, g0 - s0, d1, d2)
        lo = g0 + min(0, (n1 - 1) * d1) + min(0, (n2 - 1) * d2)
        hi = g0 + max(0, (n1 - 1) * d1) + max(0, (n2 - 1) * d2)
        self.lo_rel = lo - s0
        self.hi_rel = hi + (geo.rows - 1) * geo.hbm_stride + geo.row_len - s0
        self.l1_region = copies.Region(geo.l1_o, geo.rows, geo.row_len, geo.l1_stride)
        self.span = copies.byte_region(geo.l1, self.l1_region)
        # read-only offset vectors found to be the pattern (views.block_offset's, the same
        # objects at every launch): id -> (the vector, its start); the entry holds the vector
        self.starts: dict[int, tuple[np.ndarray, int]] = {}

    def geometry(self, l1: Any, hbm: Any, blocks: int, hbm_o: Any) -> CopyGeometry | None:
        """The geometry for HBM offsets `hbm_o` (per lane or uniform), or None when they are
        not the plan's pattern or leave the tensor."""
        rel = self.lane_rel
        if isinstance(hbm_o, np.ndarray):
            known = self.starts.get(id(hbm_o))
            if known is not None and known[0] is hbm_o:  # read-only: checked before
                s0 = known[1]
            else:
                if rel is None or hbm_o.shape != rel.shape:
                    return None
                s0 = int(hbm_o[0])
                if not (hbm_o - s0 == rel).all():
                    return None
                if not hbm_o.flags.writeable:
                    if len(self.starts) >= 64:
                        self.starts.clear()
                    self.starts[id(hbm_o)] = (hbm_o, s0)
        elif rel is not None:
            return None
        else:
            s0 = int(hbm_o)
        if s0 + self.lo_rel < 0 or s0 + self.hi_rel > hbm.count:
            return None
        n1, n2, g0, d1, d2 = self.dims
        return CopyGeometry(l1, hbm, blocks, self.l1_o, None, (n1, n2, s0 + g0, d1, d2),
                             self.rows, self.row_len, self.l1_stride, self.hbm_stride)


class LazyLoad:
    """A batch-mode `async_load` (fast path, affine block grid) whose data has not moved: until
    something other than `mma` touches its L1 bytes or anything writes HBM, every block's L1
    tile *is* its HBM tile. `mma` reads the HBM tile in place (`operand`); `materialise` does
    the copy the eager path does, with the same source bytes (no HBM write happened since)."""

    __slots__ = ("geo", "span", "key")

    def __init__(self, geo: CopyGeometry, span: copies.Region):
        self.geo = geo
        self.span = span  # the block-local L1 bytes the load writes
        self.key = (copies.span_key(span), geo.l1.data.dtype)

    @property
    def source(self) -> np.ndarray:
        """The HBM the tiles come from."""
        return self.geo.hbm.data

    def materialise(self) -> None:
        geo = self.geo
        geo.l1_view(geo.l1.data, geo.grid[1])[...] = \
            distinct_tiles(geo.hbm_view(), geo.grid)

    def operand(self, rows: int, cols: int, grid: tuple[int, int]) -> np.ndarray | None:
        """Every block's tile as an (n1, n2, rows, cols) view of HBM over the block grid
        `grid` = (n1, n2), for an mma operand that reads exactly the loaded bytes as a rows x
        cols tile; None when the tiles cannot be seen that way (another shape over HBM rows
        that are not back to back, or a grid their starts are not affine in)."""
        geo = self.geo
        data = geo.hbm.data
        step = data.strides[0]
        if geo.rows == rows and geo.row_len == cols and rows > 1:
            row_stride = geo.hbm_stride
        elif geo.rows == 1 or geo.hbm_stride == geo.row_len:  # one contiguous run per block
            row_stride = cols
        else:
            return None
        if row_stride >= 1 << 31:  # beyond a BLAS leading dimension: NumPy would not call BLAS
            return None
        n1, n2, s0, d1, d2 = geo.grid  # type: ignore[misc]
        if (n1, n2) != grid:
            if n1 != 1:
                return None
            (n1, n2), d1 = grid, grid[1] * d2  # starts s0 + b * d2, b = i * n2 + j
        return copies.view(data, s0, (n1, n2, rows, cols),
                     (d1 * step, d2 * step, row_stride * step, step))


def distinct_tiles(hbm_tiles: np.ndarray, grid: tuple[int, int, int, int, int]) -> np.ndarray:
    """The (n1, n2, rows, row_len) HBM tiles of a load, or, when blocks share tiles (a grid
    axis of stride 0: a row of C tiles shares its A tile), the distinct ones gathered into a
    small contiguous array that broadcasts along that axis: the assignment into L1 then
    copies whole contiguous tiles instead of one HBM row at a time."""
    n1, n2, _, d1, d2 = grid
    shared = (n1 > 1 and d1 == 0, n2 > 1 and d2 == 0)
    if not any(shared):
        return hbm_tiles
    return np.ascontiguousarray(hbm_tiles[tuple(slice(0, 1) if s else slice(None)
                                                for s in shared)])


def copy_blocks(decision: Decision, memory: Any, kind: str, blocks: int, dst_b: Any, src_b: Any,
                ops: list[Any], site: int, raw: tuple[Any, ...] | None = None) -> Any:
    """Batch mode, the common shape: every block copies a tile of one geometry between the
    same L1 offset and its own HBM offset. The checks run once for all blocks; the data
    moves in one strided NumPy assignment when the blocks' HBM tiles form an affine grid
    (`affine.affine_grid`; for a store also only if no two blocks write one element), otherwise
    block by block.

    Returns the token (`copies.NO_TOKEN` for tile_store), or None, having changed nothing, when
    the shape is unusual or a check would fail: the general path then does the copy, or
    reports the error, exactly as it always does."""
    geo = CopyGeometry.of(kind, dst_b, src_b, ops, blocks)
    if geo is None:
        return None
    l1_region = copies.Region(geo.l1_o, geo.rows, geo.row_len, geo.l1_stride)
    span = copies.byte_region(geo.l1, l1_region)
    key = plan_key(kind, dst_b, src_b, raw) if raw is not None else None
    hbm_o = None if raw is None else raw[1] if kind == "async_load" else raw[0]
    if key is not None and geo.grid is not None and \
            (not isinstance(hbm_o, np.ndarray) or hbm_o.shape == (memory.ctx.count,) or
             hbm_o.shape == (blocks,)):  # per lane, or per block (views.block_offset)
        plans = memory.arena.plans
        if len(plans) >= 64:
            plans.clear()
        s0 = int(hbm_o[0]) if isinstance(hbm_o, np.ndarray) else int(hbm_o)  # type: ignore
        rel = hbm_o - s0 if isinstance(hbm_o, np.ndarray) else None
        plans[key] = CopyPlan(geo, rel, s0)
    return copy_geometry(memory, kind, geo, l1_region, span, site)


def copy_geometry(memory: Any, kind: str, geo: CopyGeometry, l1_region: copies.Region,
                  span: copies.Region, site: int) -> Any:
    """The fast path's copy of a checked geometry (`copy_blocks`)."""
    l1, load = geo.l1, kind == "async_load"
    if len(memory.inflight) and blocks_copy_hazard(memory, geo, l1_region, load):
        return None  # (len: copies in flight, not the lazy work)
    if not load and l1.init is not None and not geo.l1_view(l1.init).all():
        return None
    lazy = memory.inflight.lazy
    if load and memory.inflight.fresh is not None:
        memory.inflight.fresh.overwrite(span)
    if lazy or memory.inflight.fresh is not None:
        if load:  # a lazy load of exactly these bytes is overwritten whole: forget it
            key = copies.span_key(span)
            lazy[:] = [lz for lz in lazy if lz.key[0] != key]
            memory.settle(span)
        else:  # a store reads its L1 tile and writes HBM a lazy load may come from
            memory.settle(span, geo.hbm.data)
    if geo.grid is not None and load:
        lazy.append(LazyLoad(geo, span))
    elif geo.grid is not None and grid_injective(geo.hbm_dims()):
        geo.hbm_view()[...] = geo.l1_view(l1.data, geo.grid[1])
    else:  # block by block, in block order (for stores: the last block's write wins)
        l1_tiles = geo.l1_view(l1.data)
        for b, start in enumerate(geo.block_starts()):
            if load:
                l1_tiles[b] = geo.hbm_tile(start)
            else:
                geo.hbm_tile(start)[...] = l1_tiles[b]
    if load and l1.init is not None:
        geo.l1_view(l1.init)[...] = True
    if kind == "tile_store":
        return copies.NO_TOKEN
    token = memory.counters["next_token"]
    memory.counters["next_token"] = token + 1
    memory.inflight[token] = copies.InFlight(token, kind, site, l1, [span], geo.hbm, geo.hbm_regions)
    return token


def blocks_copy_hazard(memory: Any, geo: CopyGeometry, l1_region: copies.Region,
                       load: bool) -> bool:
    """Would some block's copy hit an in-flight copy (the general path's `check_region`
    on both sides)? Every block's L1 tile is at the same block-local bytes, so block 0's
    stands for all; the HBM tiles matter only if a store to that tensor is in flight."""
    if copies.l1_in_flight(memory.inflight, copies.byte_region(geo.l1, l1_region),
                           "write" if load else "read"):
        return True
    stores = [c for c in memory.inflight.values()
              if c.kind == "async_store" and c.hbm is geo.hbm]
    return bool(stores) and any(r.overlaps(h) for h in geo.hbm_regions() for c in stores
                                for r in c.hbm_regions)
