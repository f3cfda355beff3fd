"""The tile compute instructions on a block's L1: `pto.fill`, `pto.mma` and the tile vector
instructions (`pto.tadd`, `pto.trowsum`, ...), with their checks (all lanes present, bounds,
in-flight copies, uninitialised reads, races).

`TileUnit` is a part of the lane context (lanes.py's `LaneContext`, `ctx.tiles`): it reads and
writes the tiles of the context's memory (`ctx.memory`, tiles.py) and reports races through
`ctx.races`; the semantics of each instruction are tile_ops.py's pure functions. In batch mode
one instruction acts on every block's tile at once; a batch's fill and mma may be lazy or
batched (strategies/uniform_fill.py, strategies/batched_mma.py), each only with its Decision.
See docs/interpreter.md#the-lane-context-and-its-parts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter.copies import Region
from pypto.backend.interpreter.copies import byte_region as _byte_region
from pypto.backend.interpreter.copies import l1_in_flight as _l1_in_flight
from pypto.backend.interpreter.strategies import batched_mma, uniform_fill
from pypto.backend.interpreter.tile_ops import compute_into, mma_accumulate
from pypto.backend.interpreter.parts import Memory, Vector
from pypto.backend.interpreter.tiles import _BlockSlice, _blocks_of
from pypto.errors import DeadlockError


def _buffer_span(buf: Any) -> Region:
    """Every block-local L1 byte of buffer `buf`."""
    n = buf.count * buf.data.itemsize
    return Region(buf.offset, 1, n, n)


class TileUnit:
    """Fill, mma and the tile vector instructions of a lane vector's block(s): a part of its
    `lanes.LaneContext` (`ctx.tiles`), acting on the tiles of `ctx.memory`."""

    __slots__ = ("ctx", "memory", "_views")

    def __init__(self, ctx: Vector) -> None:
        self.ctx = ctx
        self.memory: Memory = ctx.memory
        # batch-mode tile operands' views, by (buffer, offset, geometry): `_tile_vector_batched`
        self._views: dict[tuple[Any, ...], Any] = {}

    def fill(self, dst_b: Any, dst_o: Any, value: Any, count: Any, mask: Any, site: int) -> None:
        self.memory.require_all_lanes(mask, site, "pto.fill")
        if dst_b.stride:  # batch mode: one copy of the buffer per block
            self._fill_blocks(dst_b, dst_o, value, int(count), site)
            return
        if isinstance(value, np.ndarray):
            raise self.ctx.fail("pto.fill's value must be uniform across the block", site)
        view, region = self.memory.region(dst_b, dst_o, 1, int(count), int(count), site,
                                    "destination")
        if dst_b.watched() or self.memory.inflight:
            self.memory.check_region(dst_b, region, site, "write")
        view[...] = value
        if dst_b.init is not None:
            self.memory.mark_init(dst_b, region)

    def _fill_blocks(self, buf: Any, off: Any, value: Any, n: int, site: int) -> None:
        offs = self.memory.per_block(off, site, "destination offset")
        vals = self.memory.per_block(value, site, "value")
        blocks = buf.blocks
        grid = buf.grid()
        init = buf.init_grid() if buf.init is not None else None
        starts = np.broadcast_to(np.asarray(offs, dtype=np.int64), (blocks,))
        if starts.min() < 0 or starts.max() + n > buf.count:
            which = int(np.argmin(starts)) if starts.min() < 0 else int(np.argmax(starts))
            bad = int(starts[which]) if starts.min() < 0 else int(starts[which]) + n - 1
            raise self.memory.oob_region(buf, bad, site, "destination", which)
        vals = np.broadcast_to(np.asarray(vals, dtype=buf.data.dtype), (blocks,))
        uniform = bool((starts == starts[0]).all())
        lazy = self.memory.inflight.lazy
        if uniform and uniform_fill.Decision in self.ctx.decisions and n > 0 and \
                (vals == vals[0]).all():
            # every block fills the same elements with one value: a lazy fill, which replaces
            # lazy work on exactly these bytes and moves what overlaps them partly
            fill = uniform_fill.LazyFill(buf, int(starts[0]), n, vals[0])
            if self.memory.inflight.fresh is not None:
                self.memory.inflight.fresh.overwrite(fill.span)
            lazy[:] = [lz for lz in lazy if lz.key[0] != fill.key[0]]
            if lazy:
                self.memory.settle(fill.span)
            lazy.append(fill)
            if init is not None:
                init[:, fill.start:fill.start + n] = True
            return
        if lazy or self.memory.inflight.fresh is not None:
            if self.memory.inflight.fresh is not None and uniform:
                isz = buf.data.itemsize
                self.memory.inflight.fresh.overwrite(Region(buf.offset + int(starts[0]) * isz, 1,
                                                     n * isz, n * isz))
            self.memory.settle(_buffer_span(buf))
        if uniform:
            s0 = int(starts[0])
            grid[:, s0:s0 + n] = vals[:, None]
            if init is not None:
                init[:, s0:s0 + n] = True
            return
        for b in range(blocks):
            s0 = int(starts[b])
            grid[b, s0:s0 + n] = vals[b]
            if init is not None:
                init[b, s0:s0 + n] = True

    def mma(self, c_b: Any, c_o: Any, a_b: Any, a_o: Any, b_b: Any, b_o: Any, m: int, n: int,
            k: int, mask: Any, site: int) -> None:
        self.memory.require_all_lanes(mask, site, "pto.mma")
        blocks = max(_blocks_of(x) for x in (c_b, a_b, b_b))
        if blocks == 1:
            self._mma_one(c_b, c_o, a_b, a_o, b_b, b_o, m, n, k, site)
            return
        offs = [self.memory.per_block(o, site, "operand") if isinstance(o, np.ndarray) else o
                for o in (c_o, a_o, b_o)]
        decision = self.ctx.decisions.get(batched_mma.Decision)
        if decision is not None and not any(isinstance(o, np.ndarray) for o in offs) and \
                batched_mma.run(decision, self.memory, blocks, (c_b, a_b, b_b), offs, m, n, k):
            return
        if self.memory.inflight.lazy or self.memory.inflight.fresh is not None:
            self.memory.settle()
        for b in range(blocks):
            cb, ab, bb = (_BlockSlice(x, b) for x in (c_b, a_b, b_b))
            co, ao, bo = (o[b] if isinstance(o, np.ndarray) else o for o in offs)
            self._mma_one(cb, co, ab, ao, bb, bo, m, n, k, site, b)

    def _mma_one(self, c_b: Any, c_o: Any, a_b: Any, a_o: Any, b_b: Any, b_o: Any, m: int,
                 n: int, k: int, site: int, block: int = 0) -> None:
        c, c_region = self.memory.region(c_b, c_o, m, n, n, site, "C", block)
        a, a_region = self.memory.region(a_b, a_o, m, k, k, site, "A", block)
        b, b_region = self.memory.region(b_b, b_o, k, n, n, site, "B", block)
        for buf, region in ((a_b, a_region), (b_b, b_region), (c_b, c_region)):
            if buf.watched() or self.memory.inflight:
                self.memory.check_region(buf, region, site, "read")
        if c_b.watched() or self.memory.inflight:
            self.memory.check_region(c_b, c_region, site, "write")
        mma_accumulate(c, a, b)
        if c_b.init is not None:
            self.memory.mark_init(c_b, c_region)

    def tile_vector(self, name: str, tiles: tuple[tuple[int, int, int], ...],
                    addrs: tuple[Any, ...], scalar: Any, props: dict[str, str],
                    mask: Any, site: int) -> None:
        """`tiles`: per address operand (destination first), its (rows, row_len, stride);
        `addrs`: per address operand, (buffer, offset)."""
        if mask is not None:  # a block-level instruction, but not a barrier: no new race epoch
            fail = self.ctx.fail
            raise fail(f"pto.{name} is a block-level instruction but not every lane of the "
                       f"block reached it", site, DeadlockError)
        if self.memory.inflight.lazy or self.memory.inflight.fresh is not None:
            self.memory.settle()
        bufs = [b for b, _ in addrs]
        blocks = max(_blocks_of(b) for b in bufs)
        if blocks == 1:
            if isinstance(scalar, np.ndarray) and scalar.size > 1:
                if not (scalar == scalar.reshape(-1)[0]).all():
                    raise self.ctx.fail(f"pto.{name}'s value must be uniform across the "
                                    f"block", site)
                scalar = scalar.reshape(-1)[0]
            self._tile_vector_one(name, tiles, addrs, scalar, props, site)
            return
        offs = [self.memory.per_block(o, site, "operand")
                if isinstance(o, np.ndarray) else o for _, o in addrs]
        scalars = self.memory.per_block(scalar, site, "value") \
            if isinstance(scalar, np.ndarray) else scalar
        if self._tile_vector_batched(name, tiles, bufs, offs, scalars, props, blocks, site):
            return
        for b in range(blocks):
            block_addrs = tuple((_BlockSlice(buf, b), o[b] if isinstance(o, np.ndarray) else o)
                                for buf, o in zip(bufs, offs))
            s = scalars[b] if isinstance(scalars, np.ndarray) else scalars
            self._tile_vector_one(name, tiles, block_addrs, s, props, site, b)

    def _tile_vector_batched(self, name: str, tiles: tuple[tuple[int, int, int], ...],
                             bufs: list[Any], offs: list[Any], scalar: Any,
                             props: dict[str, str], blocks: int, site: int = 0) -> bool:
        """Batch mode, every block's tiles at the same offsets, no initialisation tracking and
        no copy in flight on the tiles: one NumPy operation over (blocks, rows, cols) views of
        every block's L1, the race detector's tile rule checked for all blocks at once. Each
        operand's view (and its elements for the race check) is made once per buffer, offset
        and shape and kept with the lane vector (`_views`), so an instruction in a loop
        pays a dictionary look-up, not a bounds check and a strided view. Returns False,
        having changed nothing, when the general path (block by block, with its checks) must
        run."""
        inflight = self.memory.inflight
        if inflight.lazy:
            return False
        cache = self._views
        entries = []
        for index, (buf, off, geometry) in enumerate(zip(bufs, offs, tiles)):
            if isinstance(off, np.ndarray):
                return False
            key = (id(buf), int(off), geometry)
            entry = cache.get(key)
            if entry is None or entry[0] is not buf:
                entry = self._tile_view(buf, int(off), geometry, blocks)
                if entry is None:
                    return False  # the general path reports it
                if len(cache) > 256:
                    cache.clear()
                cache[key] = entry
            if len(inflight):  # a copy in flight on these bytes: the general path reports it
                rows, row_len, stride = geometry
                region = _byte_region(buf, Region(int(off), rows, row_len, stride))
                if _l1_in_flight(inflight, region, "write" if index == 0 else "read"):
                    return False
            entries.append(entry)
        if any(e[2] is not None for e in entries):  # the race detector is on
            races = self.ctx.races
            for index, (buf, _, elements) in enumerate(entries):
                if elements is not None and (index or name == "taxpy"):
                    races.race_tile(buf, elements, site, False, stable=True)
            if entries[0][2] is not None:
                races.race_tile(entries[0][0], entries[0][2], site, True, stable=True)
        compute_into(name, [e[1] for e in entries[1:]], scalar, props, entries[0][1])
        return True

    @staticmethod
    def _tile_view(buf: Any, off: int, geometry: tuple[int, int, int],
                   blocks: int) -> tuple[Any, np.ndarray, Any] | None:
        """(buffer, (blocks, rows, cols) view, element indices for the race detector or None)
        of a tile operand in batch mode; None when the general path must run (initialisation
        tracking, another block count, out of bounds, overlapping rows)."""
        rows, row_len, stride = geometry
        if buf.init is not None or _blocks_of(buf) != blocks:
            return None
        extent = (rows - 1) * stride + row_len
        if off < 0 or off + extent > buf.count or (rows > 1 and stride < row_len):
            return None
        grid = buf.grid()
        g0, g1 = grid.strides
        view = np.lib.stride_tricks.as_strided(
            grid[:, off:], shape=(blocks, rows, row_len), strides=(g0, stride * g1, g1),
            writeable=True)
        elements = None
        if buf.shadow is not None and rows and row_len:
            elements = (np.arange(blocks, dtype=np.int64)[:, None, None] * buf.stride + off
                        + np.arange(rows, dtype=np.int64)[None, :, None] * stride
                        + np.arange(row_len, dtype=np.int64)[None, None, :]).reshape(-1)
        return buf, view, elements

    def _race_tile(self, buf: Any, region: Region, block: int, site: int,
                   write: bool) -> None:
        """The race detector's tile rule for one operand (races.RaceChecker.race_tile): the
        elements of `region` in block `block`'s copy of the buffer, as the shadow indexes
        them."""
        owner = getattr(buf, "owner", buf)  # a _BlockSlice's buffer
        if owner.shadow is None or owner.space != "local" or region.rows == 0 \
                or region.row_len == 0:
            return
        start = block * owner.stride + region.base
        index = (start + np.arange(region.rows, dtype=np.int64)[:, None] * region.stride
                 + np.arange(region.row_len, dtype=np.int64)[None, :]).reshape(-1)
        self.ctx.races.race_tile(owner, index, site, write)

    def _tile_vector_one(self, name: str, tiles: tuple[tuple[int, int, int], ...],
                         addrs: tuple[Any, ...], scalar: Any, props: dict[str, str],
                         site: int, block: int = 0) -> None:
        views = []
        regions = []
        for index, ((buf, off), (rows, row_len, stride)) in enumerate(zip(addrs, tiles)):
            what = "destination" if index == 0 else f"operand {index}"
            view, region = self.memory.region(buf, off, rows, row_len, stride,
                                        site, what, block)
            views.append(view)
            regions.append(region)
        reads_dst = name in ("taxpy",)
        for index, ((buf, _), region) in enumerate(zip(addrs, regions)):
            if index == 0 and not reads_dst:
                continue
            if buf.watched() or self.memory.inflight:
                self.memory.check_region(buf, region, site, "read")
        dst_buf = addrs[0][0]
        if dst_buf.watched() or self.memory.inflight:
            self.memory.check_region(dst_buf, regions[0], site, "write")
        for index, ((buf, _), region) in enumerate(zip(addrs, regions)):
            if index or reads_dst:
                self._race_tile(buf, region, block, site, False)
        self._race_tile(dst_buf, regions[0], block, site, True)
        if isinstance(scalar, np.ndarray):
            scalar = scalar.reshape(-1)[0]
        compute_into(name, [v[None] for v in views[1:]], scalar, props, views[0][None])
        if dst_buf.init is not None:
            self.memory.mark_init(dst_buf, regions[0])
