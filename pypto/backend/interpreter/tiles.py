"""Block-level semantics: L1 buffers, asynchronous copies, tile instructions, atomics, printf.

A mixin of `LaneContext` (lanes.py). In block mode one context is one block, so state kept here
(L1 buffers, in-flight copies) is per block, as on the device.

Asynchronous copies move their data when issued, and the destination (for loads) or source (for
stores) region is marked *in flight* until the `wait` of its token. Reading an in-flight load
destination, writing an in-flight region, or reading HBM that an in-flight store is writing is a
`RaceError` naming both instructions — so a kernel that forgets a `wait` fails loudly instead of
reading whatever happened to be there.

In batch mode a load whose blocks' HBM tiles form an affine grid is *lazy*
(`strategies.batch_copy.LazyLoad`): its
tiles stay in HBM, and `mma` multiplies them there (each block's product is still one BLAS call
of the tile's shape, on a view with the HBM row stride instead of the L1 one). Anything else
that touches the loaded L1 bytes, or writes HBM, first moves the tiles into L1 as the eager
copy would have (`BlockMemory._settle`), so every other reader sees L1 as the semantics say.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto import exact
from pypto.backend.interpreter import atomic_rmw
from pypto.backend.interpreter.buffers import Buffer, outside
from pypto.backend.interpreter.copies import NO_TOKEN as _NO_TOKEN
from pypto.backend.interpreter.copies import InFlight, Region
from pypto.backend.interpreter.copies import byte_region as _byte_region
from pypto.backend.interpreter.copies import distinct as _distinct
from pypto.backend.interpreter.copies import l1_in_flight as _l1_in_flight
from pypto.backend.interpreter.copies import span_key as _span_key
from pypto.backend.interpreter.copies import view as _view
from pypto.backend.interpreter.l1 import L1Arena
from pypto.backend.interpreter.races import ShadowView
from pypto.backend.interpreter.strategies import (atomics, batch_copy, batched_mma, lazy_l1,
                                                  uniform_fill)
from pypto.errors import DeadlockError, KernelError, MemoryAccessError, RaceError


class CopyState(dict):
    """A block's copies: those in flight by token (the dict itself, as before) and the lazy
    loads not yet moved into L1 (`lazy`, in issue order; no two overlap in L1).

    Truthy while either kind exists. Every lane access path already takes its checked route
    (`check_read` / `check_write`) when copies are in flight (`if buf.watched() or
    self.inflight`, `... and not self.inflight`), so lazy loads ride on that gate: the check
    moves them into L1 before the access, after which the fast paths run again."""

    __slots__ = ("lazy", "fresh")

    def __init__(self) -> None:
        super().__init__()
        self.lazy: list[batch_copy.LazyLoad] = []
        self.fresh: FreshL1 | None = None  # L1 not poisoned yet (tile-only kernels)

    def __bool__(self) -> bool:
        return bool(self.lazy) or len(self) > 0


class _MmaPlan:
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
        self.keys = [_span_key(r) for r in regions]
        self.dtypes = [b.data.dtype for b in bufs]
        self.extents = [(o, r * c) for o, (r, c) in zip(offs, shapes)]
        self._stacks: dict[tuple[int, int], list[np.ndarray]] = {}

    @staticmethod
    def of(blocks: int, bufs: tuple[Any, Any, Any], offs: list[int],
           shapes: tuple[tuple[int, int], ...]) -> _MmaPlan | None:
        """The plan, or None when a tile lies outside its buffer (the general path reports it)."""
        views, regions = [], []
        for buf, o, (rows, cols) in zip(bufs, offs, shapes):
            if o < 0 or o + rows * cols > buf.count:
                return None
            step = buf.data.strides[0]
            views.append(_view(buf.data, o, (blocks, rows, cols),
                               (buf.stride * step, cols * step, step)))
            regions.append(_byte_region(buf, Region(o, rows, cols, cols)))
        return _MmaPlan(bufs, offs, shapes, views, regions)

    def stacked(self, grid: tuple[int, int]) -> list[np.ndarray]:
        """The three arena views as (n1, n2, rows, cols) stacks: block i * n2 + j at [i, j]."""
        out = self._stacks.get(grid)
        if out is None:
            n1, n2 = grid
            out = []
            for buf, o, (rows, cols) in zip(self.bufs, self.offs, self.shapes):
                step = buf.data.strides[0]
                bstride = buf.stride * step
                out.append(_view(buf.data, o, (n1, n2, rows, cols),
                                 (n2 * bstride, bstride, cols * step, step)))
            self._stacks[grid] = out
        return out


class FreshL1:
    """The poisoning of fresh L1 (l1.py `L1Arena.poison`), deferred. Only in batch mode for
    kernels whose L1 only tile instructions touch (`L1Layout.tile_only`): every access to L1
    is then one of this module's, which poison the bytes they read first (`materialise`), and
    bytes a tile write covers whole never need it (`overwrite`). `ranges` holds, per buffer
    slot in the order `poison` goes through them (where slots share bytes the later one's
    poison wins), the block-local byte ranges still to poison: whole elements of the slot."""

    __slots__ = ("arena", "ranges")

    def __init__(self, arena: L1Arena):
        self.arena = arena
        self.ranges = [(slot, slot.offset, slot.end) for slot in arena.layout.slots.values()]

    def materialise(self, lo: int | None = None, hi: int | None = None) -> None:
        """Poison what is pending in bytes lo..hi-1 (all of it without bounds), widened to
        whole elements of each slot (still pending bytes: poisoning them early is harmless)."""
        self._settle(0 if lo is None else lo, self.arena_end() if hi is None else hi, True)

    def overwrite(self, span: Region) -> None:
        """Bytes `span` are about to be written whole in every block: they need no poison.
        A region with gaps between its rows, or ends inside a slot's element, is poisoned
        first instead (the write then lands on it)."""
        if span.rows > 1 and span.stride != span.row_len:
            self.materialise(span.lo, span.hi)
            return
        self._settle(span.lo, span.hi, False)

    def arena_end(self) -> int:
        return max((b for _, _, b in self.ranges), default=0)

    def _settle(self, lo: int, hi: int, poison: bool) -> None:
        """Take bytes lo..hi-1, widened to whole elements of each slot, out of the pending
        ranges; poison them when `poison`, or when the widening reached outside lo..hi (a
        write that ends inside an element leaves the rest of it poisoned)."""
        keep = []
        for slot, a, b in self.ranges:
            x, y = max(a, lo), min(b, hi)
            if x >= y:
                keep.append((slot, a, b))
                continue
            isz = slot.dtype.itemsize
            wx, wy = x - (x - slot.offset) % isz, y + -(y - slot.offset) % isz
            if poison or (wx, wy) != (x, y):
                self.arena.poison_bytes(slot, wx, wy)
            if a < wx:
                keep.append((slot, a, wx))
            if wy < b:
                keep.append((slot, wy, b))
        self.ranges = keep


class LazyFill:
    """A batch-mode `pto.fill` of the same elements with one value in every block, not done
    yet: an `mma` whose C tile is exactly those elements adds its products to the value
    instead of reading it back from L1 (`value + A @ B`, the bits of the fill then the
    accumulation); anything else touching the bytes does the fill first (`materialise`)."""

    __slots__ = ("buf", "start", "n", "value", "span", "key")
    source = None  # no HBM behind it

    def __init__(self, buf: Any, start: int, n: int, value: Any):
        self.buf, self.start, self.n, self.value = buf, start, n, value
        isz = buf.data.itemsize
        self.span = Region(buf.offset + start * isz, 1, n * isz, n * isz)
        self.key = (_span_key(self.span), buf.data.dtype)

    def materialise(self) -> None:
        self.buf.grid()[:, self.start:self.start + self.n] = self.value


def _geometry_key(buf: Any) -> tuple[Any, ...]:
    """A buffer as far as a tile instruction's plan depends on it (`Buffer.geometry_key`)."""
    return buf.geometry_key()


def _buffer_span(buf: Any) -> Region:
    """Every block-local L1 byte of buffer `buf`."""
    n = buf.count * buf.data.itemsize
    return Region(buf.offset, 1, n, n)


class _BlockSlice:
    """One block's copy of a batch-mode L1 buffer, shaped like a single-block Buffer."""

    __slots__ = ("data", "name", "space", "count", "stride", "blocks", "init", "offset",
                 "owner")

    def __init__(self, owner: Any, b: int):
        lo, hi = b * owner.stride, b * owner.stride + owner.count
        self.owner = owner
        self.data = owner.data[lo:hi]
        self.name = owner.name
        self.space = owner.space
        self.count = owner.count
        self.stride = 0
        self.blocks = 1
        self.offset = owner.offset
        self.init = owner.init[lo:hi] if owner.init is not None else None

    def watched(self) -> bool:
        return self.owner.watched()

    def byte_of(self, idx: Any) -> Any:
        return self.offset + idx * self.data.itemsize


def _blocks_of(buf: Any) -> int:
    return buf.blocks


class BlockMemory:
    """L1, tile instructions and the other block-level operations of a lane vector."""

    # set by LaneContext.__init__
    races: Any  # races.Races: the lane context's race checker (a part)
    count: int
    sites: list[Any]
    layout: Any
    block_lanes: int
    race_check: bool
    check_uninitialized: bool

    def _init_block_memory(self, share_with: BlockMemory | None = None) -> None:
        """Fresh block state, or the state of `share_with` (the warps of one block share it)."""
        if share_with is not None:
            self.l1_buffers = share_with.l1_buffers
            self.inflight = share_with.inflight
            self.counters = share_with.counters
            self.arenas = share_with.arenas
            return
        self.l1_buffers: dict[int, Any] = {}
        self.inflight: CopyState = CopyState()
        self.counters = {"next_token": 0, "epoch": 0}
        self.arenas: list[L1Arena] = []  # the block's (or batch's) L1, made at first use

    def adopt_block_memory(self, state: tuple[dict[int, Any], list[L1Arena]]) -> None:
        """Take over the L1 (arena and buffers) of a finished lane vector of the same shape,
        reset to fresh: saves allocating the arena, its shadow and the buffer views again."""
        self.l1_buffers, self.arenas = state
        for arena in self.arenas:
            lazy = lazy_l1.applies(self.decisions.get(lazy_l1.Decision), arena.blocks,
                                  arena.layout.tile_only)
            arena.reset(poison=not lazy)
            if lazy:
                self.inflight.fresh = FreshL1(arena)

    @property
    def arena(self) -> L1Arena:
        if not self.arenas:
            blocks = self.count // self.block_lanes if self.count > self.block_lanes else 1
            self.arenas.append(L1Arena(self.layout, blocks, track_init=self.check_uninitialized,
                                       race_check=self.race_check))
        return self.arenas[0]

    # helpers ----------------------------------------------------------------------------------

    def _require_all_lanes(self, mask: Any, site: int, what: str) -> None:
        """Every tile instruction starts here: all lanes must be present, and as a block-level
        collective it orders lane accesses before it against those after (a new race epoch)."""
        if mask is not None:
            raise self.fail(f"{what} is a block-level instruction but not every lane of the "
                            f"block reached it", site, DeadlockError)
        self.counters["epoch"] += 1

    def _site_text(self, site: int) -> str:
        s = self.sites[site]
        return f"pto.{s.op} at {s.location}"

    # allocation -------------------------------------------------------------------------------

    def alloc_local(self, key: int, mask: Any, site: int) -> Any:
        """The buffer of alloc_local op `key`: a typed view of the block's L1 arena at the
        offset the static layout gives it (l1.py). A declaration: reaching it changes no
        memory (the whole arena was poisoned when the block started)."""
        buf = self.l1_buffers.get(key)
        if buf is not None:
            return buf
        arena = self.arena
        slot = self.layout.slots[key]
        data, stride = arena.view(slot)
        g = self.layout.granule
        buf = Buffer(data, slot.name, "local", slot.count, stride, arena.blocks, slot.offset,
                     (slot.offset // g, slot.dtype.itemsize // g))
        if arena.init is not None:
            buf.init = arena.granule_view(arena.init, slot, data.size)
        if arena.shadow is not None:
            sh = arena.shadow
            buf.shadow = ShadowView(sh, arena.granule_view(sh.w_warp, slot, data.size),
                                    arena.granule_view(sh.r_warp, slot, data.size),
                                    arena.granule_view(sh.r_multi, slot, data.size))
        self.l1_buffers[key] = buf
        return buf

    def neighbour(self, buf: Any, address: int) -> str:
        """For an out-of-bounds L1 element: the buffer its address falls in, if any."""
        if buf.space != "local" or self.layout is None:
            return ""
        byte = buf.offset + int(address) * buf.data.itemsize
        other = self.layout.slot_at(byte, other_than=None)
        if other is None or other.name == buf.name and other.offset == buf.offset:
            return ""
        last = buf.offset + buf.count * buf.data.itemsize - 1
        return (f"; that address is L1 byte {byte}, inside buffer '{other.name}' (bytes "
                f"{other.offset}..{other.end - 1}, allocated at {other.location}): the access "
                f"overruns '{buf.name}' (bytes {buf.offset}..{last}) into its neighbour")

    # lazy loads ---------------------------------------------------------------------------------

    def _settle(self, span: Region | None = None, hbm: np.ndarray | None = None) -> None:
        """Move lazy loads into L1: those whose L1 bytes overlap `span`, those loaded from HBM
        that may share memory with `hbm`, or (neither given) all of them. Changes no value any
        instruction can observe, so it may run at any point."""
        lazy = self.inflight.lazy
        fresh = self.inflight.fresh
        if span is None and hbm is None:
            for lz in lazy:
                lz.materialise()
            lazy.clear()
            if fresh is not None:
                fresh.materialise()
                self.inflight.fresh = None
            return
        if span is not None and fresh is not None:
            fresh.materialise(span.lo, span.hi)
        keep = []
        for lz in lazy:
            if (span is not None and lz.span.overlaps(span)) or (hbm is not None and
                                                                  lz.source is not None and
                                                                  np.may_share_memory(lz.source,
                                                                                      hbm)):
                lz.materialise()
            else:
                keep.append(lz)
        lazy[:] = keep

    def settle_l1(self) -> None:
        """Every lazy load moved into L1 and fresh L1 poisoned: the arena bytes are then what
        the semantics say (the debugger's `inspect_l1` reads them directly)."""
        if self.inflight.lazy or self.inflight.fresh is not None:
            self._settle()

    # hazard bookkeeping -----------------------------------------------------------------------

    def check_read(self, buf: Any, idx: Any, mask: Any, site: int, race: bool = True) -> None:
        """A lane read of `buf` at `idx` (offsets of the active lanes, a slice or an int): in
        flight, uninitialised, or racing with another warp? A lane access first moves every
        lazy load into L1 (the fast paths, which skip these checks, then run again)."""
        if self.inflight.lazy or self.inflight.fresh is not None:
            self._settle()
        if buf.space == "local":
            if race and buf.shadow is not None:
                self.races.race_read(buf, idx, mask, site)
            if self.inflight:
                byte = _bytes(buf, idx)
                for copy in list(self.inflight.values()):
                    if copy.kind == "async_load" and copy.l1_hits(byte):
                        self._hazard_in_flight(buf, copy.token, site, "read")
            if buf.init is not None:
                ok = buf.init[idx]
                if not np.all(ok):
                    first = _first_index(idx, ok)
                    raise self.fail(f"read of uninitialised L1: '{buf.name}'[{first}] was never "
                                    f"written (check_uninitialized=True)", site)
        elif self.inflight:
            for copy in self.inflight.values():
                if copy.kind == "async_store" and copy.hbm is buf and copy.hbm_hits(idx):
                    self._hazard_in_flight(buf, copy.token, site, "read")

    def check_write(self, buf: Any, idx: Any, mask: Any, site: int, race: bool = True) -> None:
        if self.inflight.lazy or self.inflight.fresh is not None:  # lazy loads move first
            self._settle()
        if buf.space == "local":
            if race and buf.shadow is not None:
                self.races.race_write(buf, idx, mask, site)
            if self.inflight:
                byte = _bytes(buf, idx)
                for copy in list(self.inflight.values()):
                    if copy.l1_hits(byte):
                        self._hazard_in_flight(buf, copy.token, site, "write")
            if buf.init is not None:
                buf.init[idx] = True

    def _hazard_in_flight(self, buf: Any, token: int, site: int, access: str) -> None:
        copy = self.inflight[token]
        space = "L1" if buf.space == "local" else "HBM"
        raise self.fail(
            f"hazard: {access} of {space} buffer '{buf.name}' while the "
            f"{self._site_text(copy.site)} that {'writes' if copy.kind == 'async_load' else 'reads'}"
            f" it is still in flight; call pto.wait(token) or pto.wait_all() before this "
            f"{access}", site, RaceError)

    # bulk copies ------------------------------------------------------------------------------

    def _region(self, buf: Any, base: Any, rows: int, row_len: int, stride: int, site: int,
                what: str, block: int = 0) -> tuple[np.ndarray, Region]:
        """A (rows, row_len) view of `buf` from element `base`, rows `stride` apart; checked
        (an error names `block`, the index of the block in the lane vector)."""
        base = int(base)
        data = buf.data[:buf.count]
        region = Region(base, rows, row_len, stride)
        if rows == 0 or row_len == 0:
            return data[0:0].reshape(0, 0), region
        if stride < row_len and rows > 1:
            raise self.fail(f"a row stride of {stride} elements is shorter than the row "
                            f"({row_len} elements): the rows would overlap", site)
        if base < 0 or region.hi > data.size:
            raise self.oob_region(buf, base if base < 0 else region.hi - 1, site, what, block)
        if stride == row_len or rows == 1:
            return data[base:base + rows * row_len].reshape(rows, row_len), region
        if base + rows * stride <= data.size:
            return data[base:base + rows * stride].reshape(rows, stride)[:, :row_len], region
        view = as_strided(data[base:], shape=(rows, row_len),
                          strides=(stride * data.itemsize, data.itemsize), writeable=True)
        return view, region

    def oob_region(self, buf: Any, address: int, site: int, what: str,
                   block_index: int = 0) -> Any:
        s = self.sites[site]
        size = buf.count  # one block's view (batch mode keeps a copy per block back to back)
        space = "HBM" if buf.space == "global" else "L1"
        block, _ = self.describe_lane(block_index * self.block[0] * self.block[1] * self.block[2])
        return MemoryAccessError(
            f"out-of-bounds {s.op} {what}: {space} buffer '{buf.name}' element {address} "
            f"(valid elements 0..{size - 1}) in block {block}"
            f"{self.neighbour(buf, address)}", kernel=self.kernel,
            location=s.location, called_from=s.called_from, block=block, lane=None, address=address, bounds=(0, size),
            buffer=buf.name)

    def copy(self, kind: str, dst_b: Any, dst_o: Any, src_b: Any, src_o: Any, nbytes: Any,
             rows: Any, src_stride: Any, dst_stride: Any, mask: Any, site: int) -> Any:
        self._require_all_lanes(mask, site, f"pto.{kind}")
        blocks = max(_blocks_of(dst_b), _blocks_of(src_b))
        if blocks == 1:
            for v in (dst_o, src_o, nbytes, rows, src_stride, dst_stride):
                if isinstance(v, np.ndarray):
                    raise self.fail(f"pto.{kind} operands must be uniform across the block", site)
            regions = [self._copy_one(kind, dst_b, dst_o, src_b, src_o, nbytes, rows,
                                      src_stride, dst_stride, site)]
        else:  # batch mode: every block of the vector copies its own tile
            raw = (dst_o, src_o, nbytes, rows, src_stride, dst_stride)
            decision = self.decisions.get(batch_copy.Decision)  # the plan selects it
            if decision is not None:
                fast = batch_copy.copy_again(decision, self, kind, dst_b, src_b, raw, blocks,
                                             site)
                if fast is not None:
                    return None if fast is _NO_TOKEN else fast
            ops = [self._per_block(v, site, "operand") if isinstance(v, np.ndarray) else v
                   for v in raw]
            if decision is not None:
                fast = batch_copy.copy_blocks(decision, self, kind, blocks, dst_b, src_b, ops,
                                              site, raw)
                if fast is not None:
                    return None if fast is _NO_TOKEN else fast
            if self.inflight.lazy or self.inflight.fresh is not None:
                self._settle()
            regions = []
            for b in range(blocks):
                dst = _BlockSlice(dst_b, b) if dst_b.space == "local" else dst_b
                src = _BlockSlice(src_b, b) if src_b.space == "local" else src_b
                vals = [v[b] if isinstance(v, np.ndarray) else v for v in ops]
                regions.append(self._copy_one(kind, dst, vals[0], src, vals[1], *vals[2:],
                                              site=site, block=b))
        if kind == "tile_store":
            return None
        token = self.counters["next_token"]
        self.counters["next_token"] = token + 1
        dst_regions = _distinct([r[0] for r in regions])
        src_regions = _distinct([r[1] for r in regions])
        if kind == "async_load":
            copy = InFlight(token, kind, site, dst_b,
                            [_byte_region(dst_b, r) for r in dst_regions], src_b, src_regions)
        else:
            copy = InFlight(token, kind, site, src_b,
                            [_byte_region(src_b, r) for r in src_regions], dst_b, dst_regions)
        self.inflight[token] = copy
        return token

    def _copy_one(self, kind: str, dst_b: Any, dst_o: Any, src_b: Any, src_o: Any, nbytes: Any,
                  rows: Any, src_stride: Any, dst_stride: Any, site: int,
                  block: int = 0) -> tuple[Region, Region]:
        """Move one block's tile (block `block` of the lane vector); returns the (destination,
        source) regions it touched."""
        nbytes, rows = int(nbytes), int(rows)
        itemsize = dst_b.data.itemsize
        if rows <= 0 or nbytes < 0 or nbytes % (rows * itemsize):
            raise self.fail(f"pto.{kind}: nbytes={nbytes} is not a whole number of {rows} "
                            f"row(s) of {itemsize}-byte elements", site)
        row_len = nbytes // (rows * itemsize)
        src_view, src_region = self._region(src_b, src_o, rows, row_len, int(src_stride), site,
                                            "source", block)
        dst_view, dst_region = self._region(dst_b, dst_o, rows, row_len, int(dst_stride), site,
                                            "destination", block)
        # the copy reads its source and writes its destination: check both against in-flight
        if src_b.watched() or dst_b.watched() or self.inflight:
            self._check_region(src_b, src_region, site, "read")
            self._check_region(dst_b, dst_region, site, "write")
        dst_view[...] = src_view
        if dst_b.init is not None:
            self._mark_init(dst_b, dst_region)
        return dst_region, src_region

    def _mark_init(self, buf: Any, region: Region) -> None:
        init = buf.init
        for r in range(region.rows):
            start = region.base + r * region.stride
            init[start:start + region.row_len] = True

    def _check_region(self, buf: Any, region: Region, site: int, access: str) -> None:
        if region.rows == 0 or region.row_len == 0:
            return
        if buf.space == "local":
            if self.inflight:
                hit = _l1_in_flight(self.inflight, _byte_region(buf, region), access)
                if hit is not None:
                    self._hazard_in_flight(buf, hit.token, site, access)
            if access == "read" and buf.init is not None:
                for r in range(region.rows):
                    start = region.base + r * region.stride
                    if not buf.init[start:start + region.row_len].all():
                        raise self.fail(f"read of uninitialised L1 in '{buf.name}' "
                                        f"(check_uninitialized=True)", site)
        else:
            for copy in list(self.inflight.values()):
                if copy.kind == "async_store" and copy.hbm is buf and \
                        any(r.overlaps(region) for r in copy.hbm_regions):
                    self._hazard_in_flight(buf, copy.token, site, access)

    def wait(self, token: Any, mask: Any, site: int) -> None:
        self._require_all_lanes(mask, site, "pto.wait")
        if token is None:
            raise self.fail("pto.wait on a token whose copy was never issued (it would wait "
                            "forever)", site, DeadlockError)
        self.inflight.pop(int(token), None)

    def wait_all(self, mask: Any, site: int) -> None:
        self._require_all_lanes(mask, site, "pto.wait_all")
        self.inflight.clear()

    # tile compute -----------------------------------------------------------------------------

    def _per_block(self, v: Any, site: int, what: str) -> Any:
        """Batch mode: the value each block gives a block-level operand (a scalar if the same
        for all). It must be uniform within each block."""
        if not isinstance(v, np.ndarray):
            return v
        if type(v).__name__ == "PerBlock":  # one value per block already (views.block_offset)
            return v.view(np.ndarray)
        bl = self.block_lanes
        # uniform within each block <=> every lane equals its left neighbour, except at the
        # first lane of a block (one contiguous compare: cheaper than a (blocks, lanes) one)
        changes = v[1:] != v[:-1]
        changes[bl - 1::bl] = False
        if changes.any():
            raise self.fail(f"the {what} of a block-level instruction must be uniform across the "
                            f"block", site)
        col = v[::bl]
        return col[0] if (col == col[0]).all() else col

    def fill(self, dst_b: Any, dst_o: Any, value: Any, count: Any, mask: Any, site: int) -> None:
        self._require_all_lanes(mask, site, "pto.fill")
        if dst_b.stride:  # batch mode: one copy of the buffer per block
            self._fill_blocks(dst_b, dst_o, value, int(count), site)
            return
        if isinstance(value, np.ndarray):
            raise self.fail("pto.fill's value must be uniform across the block", site)
        view, region = self._region(dst_b, dst_o, 1, int(count), int(count), site,
                                    "destination")
        if dst_b.watched() or self.inflight:
            self._check_region(dst_b, region, site, "write")
        view[...] = value
        if dst_b.init is not None:
            self._mark_init(dst_b, region)

    def _fill_blocks(self, buf: Any, off: Any, value: Any, n: int, site: int) -> None:
        offs = self._per_block(off, site, "destination offset")
        vals = self._per_block(value, site, "value")
        blocks = buf.blocks
        grid = buf.grid()
        init = buf.init_grid() if buf.init is not None else None
        starts = np.broadcast_to(np.asarray(offs, dtype=np.int64), (blocks,))
        if starts.min() < 0 or starts.max() + n > buf.count:
            which = int(np.argmin(starts)) if starts.min() < 0 else int(np.argmax(starts))
            bad = int(starts[which]) if starts.min() < 0 else int(starts[which]) + n - 1
            raise self.oob_region(buf, bad, site, "destination", which)
        vals = np.broadcast_to(np.asarray(vals, dtype=buf.data.dtype), (blocks,))
        uniform = bool((starts == starts[0]).all())
        lazy = self.inflight.lazy
        if uniform and uniform_fill.Decision in self.decisions and n > 0 and \
                (vals == vals[0]).all():
            # every block fills the same elements with one value: a lazy fill, which replaces
            # lazy work on exactly these bytes and moves what overlaps them partly
            fill = LazyFill(buf, int(starts[0]), n, vals[0])
            if self.inflight.fresh is not None:
                self.inflight.fresh.overwrite(fill.span)
            lazy[:] = [lz for lz in lazy if lz.key[0] != fill.key[0]]
            if lazy:
                self._settle(fill.span)
            lazy.append(fill)
            if init is not None:
                init[:, fill.start:fill.start + n] = True
            return
        if lazy or self.inflight.fresh is not None:
            if self.inflight.fresh is not None and uniform:
                isz = buf.data.itemsize
                self.inflight.fresh.overwrite(Region(buf.offset + int(starts[0]) * isz, 1,
                                                     n * isz, n * isz))
            self._settle(_buffer_span(buf))
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
        self._require_all_lanes(mask, site, "pto.mma")
        blocks = max(_blocks_of(x) for x in (c_b, a_b, b_b))
        if blocks == 1:
            self._mma_one(c_b, c_o, a_b, a_o, b_b, b_o, m, n, k, site)
            return
        offs = [self._per_block(o, site, "operand") if isinstance(o, np.ndarray) else o
                for o in (c_o, a_o, b_o)]
        if batched_mma.Decision in self.decisions and \
                not any(isinstance(o, np.ndarray) for o in offs) and \
                self._mma_batched(blocks, (c_b, a_b, b_b), offs, m, n, k):
            return
        if self.inflight.lazy or self.inflight.fresh is not None:
            self._settle()
        for b in range(blocks):
            cb, ab, bb = (_BlockSlice(x, b) for x in (c_b, a_b, b_b))
            co, ao, bo = (o[b] if isinstance(o, np.ndarray) else o for o in offs)
            self._mma_one(cb, co, ab, ao, bb, bo, m, n, k, site, b)

    def _mma_batched(self, blocks: int, bufs: tuple[Any, Any, Any], offs: list[Any], m: int,
                     n: int, k: int) -> bool:
        """Batch mode, every block's tiles at the same offsets: one batched matmul over
        (blocks, rows, cols) views of the arena, accumulated into C in place. The per-tile
        products are the BLAS calls `_mma_one` makes (same shapes and strides), so the bits are
        the general path's. Returns False, having changed nothing, when a check would fail (the
        general path then reports it)."""
        key = ("mma", _geometry_key(bufs[0]), _geometry_key(bufs[1]), _geometry_key(bufs[2]),
               int(offs[0]), int(offs[1]), int(offs[2]), m, n, k)
        plans = self.arena.plans
        plan = plans.get(key)
        if plan is None or plan.bufs[0].data.base is not bufs[0].data.base:
            plan = _MmaPlan.of(blocks, bufs, [int(o) for o in offs], ((m, n), (m, k), (k, n)))
            if plan is None:
                return False
            if len(plans) >= 64:
                plans.clear()
            plans[key] = plan
        for buf, (o, size) in zip(bufs, plan.extents):
            if buf.init is not None and not buf.init_grid()[:, o:o + size].all():
                return False
        regions = plan.regions
        if len(self.inflight):  # copies in flight (not the lazy loads)
            if any(_l1_in_flight(self.inflight, r, "read") for r in regions) or \
                    _l1_in_flight(self.inflight, regions[0], "write"):
                return False
        views = plan.views
        start = None
        if self.inflight.lazy or self.inflight.fresh is not None:
            start, views = self._mma_lazy_views(plan)
        c, a, b = views
        if start is None:
            _mma_accumulate(c, a, b)
        else:  # C is a lazy fill: its value + the products, straight into C
            np.add(start, a @ b, out=c)
        if bufs[0].init is not None:
            o = int(offs[0])
            bufs[0].init_grid()[:, o:o + m * n] = True
        return True

    def _mma_lazy_views(self, plan: _MmaPlan) -> tuple[Any, list[np.ndarray]]:
        """(C's lazy fill value or None, the operands) of a batched mma with lazy work pending:
        an A or B tile that is exactly a lazy load's bytes is read from HBM in place, as an
        (n1, n2, rows, cols) stack over the load's block grid (C and the other operand are
        reshaped to that stack); a C tile that is exactly a lazy fill of a float32 C with
        float32 operands is not read (the caller adds the products to the value); any other
        overlap with lazy work (C's tile, a part of a loaded tile) does that work first."""
        regions = plan.regions
        lazy = self.inflight.lazy
        start = None
        key_c = (plan.keys[0], plan.dtypes[0])
        fill = next((lz for lz in lazy if lz.key == key_c and isinstance(lz, LazyFill)), None)
        if fill is not None and plan.dtypes[0] == plan.dtypes[1] == plan.dtypes[2] == \
                np.float32 and not regions[0].overlaps(regions[1]) and \
                not regions[0].overlaps(regions[2]):
            lazy.remove(fill)  # the mma writes every element of it and reads none
            start = fill.value
        self._settle(regions[0])  # C is read and written
        found: dict[int, batch_copy.LazyLoad] = {}
        for i in (1, 2):
            key = (plan.keys[i], plan.dtypes[i])
            lz = next((lz for lz in lazy
                       if lz.key == key and isinstance(lz, batch_copy.LazyLoad)), None)
            if lz is None:
                self._settle(regions[i])
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
                self._settle(regions[i])
        if hbm[1] is None and hbm[2] is None:
            return start, plan.views
        stacked = plan.stacked(grid)
        return start, [stacked[i] if hbm[i] is None else hbm[i] for i in range(3)]

    def _mma_one(self, c_b: Any, c_o: Any, a_b: Any, a_o: Any, b_b: Any, b_o: Any, m: int,
                 n: int, k: int, site: int, block: int = 0) -> None:
        c, c_region = self._region(c_b, c_o, m, n, n, site, "C", block)
        a, a_region = self._region(a_b, a_o, m, k, k, site, "A", block)
        b, b_region = self._region(b_b, b_o, k, n, n, site, "B", block)
        for buf, region in ((a_b, a_region), (b_b, b_region), (c_b, c_region)):
            if buf.watched() or self.inflight:
                self._check_region(buf, region, site, "read")
        if c_b.watched() or self.inflight:
            self._check_region(c_b, c_region, site, "write")
        _mma_accumulate(c, a, b)
        if c_b.init is not None:
            self._mark_init(c_b, c_region)

    # atomics ----------------------------------------------------------------------------------

    def atomic_add(self, buf: Any, off: Any, value: Any, mask: Any, site: int,
                   need_old: bool = True) -> Any:
        """Serialised in lane order: each lane sees the lower lanes' additions in `old`.

        `need_old=False` (the atomics strategy's `totals_only`: the result has no use, the
        element an integer) on an integer buffer: only the totals matter, and wrap-around integer
        addition is associative and commutative, so the additions are applied in any order
        (`np.add.at`); the result is then None. Floats keep the lane order, whose rounding the
        totals depend on."""
        data = buf.data
        if not need_old and data.dtype.kind in "iu":
            self._atomic_totals(buf, off, value, mask, site)
            return None
        found = self._atomic_lanes(buf, off, value, mask, site)
        if isinstance(found, np.ndarray):
            return found  # no lane active
        lanes, idx, vals, old = found
        return atomics.serialised_add(data, idx, vals, lanes, old,
                                      self.decisions.get(atomics.Decision))

    def _atomic_lanes(self, buf: Any, off: Any, value: Any, mask: Any, site: int) -> Any:
        """The active lanes of an atomic, their element indices (bounds-checked, in the
        block's copy of L1 in batch mode), their values and the zeroed old values; or those
        old values alone when no lane is active. Atomics do not race with each other: only
        the in-flight and uninitialised checks apply."""
        data = buf.data
        n = self.count
        offs = np.broadcast_to(off, (n,)) if not isinstance(off, np.ndarray) else off
        vals = np.broadcast_to(np.asarray(value, dtype=data.dtype), (n,))
        lanes = np.nonzero(mask)[0] if mask is not None else np.arange(n)
        old = np.zeros(n, dtype=data.dtype)
        if lanes.size == 0:
            return old
        idx = offs[lanes].astype(np.int64)
        if idx.min() < 0 or idx.max() >= buf.count:
            full = np.full(n, 0, dtype=np.int64)
            full[lanes] = idx
            sel = np.zeros(n, dtype=bool)
            sel[lanes] = True
            raise self.oob(buf, full, sel, site)
        if buf.stride:  # batch mode: each lane's block has its own copy of L1
            idx = idx + self.lane_block[lanes] * buf.stride  # type: ignore[attr-defined]
        self.check_read(buf, idx, None, site, race=False)
        self.check_write(buf, idx, None, site, race=False)
        return lanes, idx, vals[lanes], old

    def atomic_rmw(self, kind: str, buf: Any, off: Any, value: Any, compare: Any, mask: Any,
                   site: int) -> Any:
        """`pto.atomic_<kind>` (max, min, and, or, xor, exch, cas): serialised in lane order
        as `atomic_add` is, with the same bounds, in-flight and uninitialised checks (atomics
        do not race with each other); the updates are `atomic_rmw.serialised`'s."""
        data = buf.data
        found = self._atomic_lanes(buf, off, value, mask, site)
        if isinstance(found, np.ndarray):
            return found  # no lane active
        lanes, idx, vals, old = found
        cmp = None if compare is None else \
            np.broadcast_to(np.asarray(compare, dtype=data.dtype), (self.count,))[lanes]
        return atomic_rmw.serialised(kind, data, idx, vals, cmp, lanes, old)

    def _atomic_totals(self, buf: Any, off: Any, value: Any, mask: Any, site: int) -> None:
        """An integer atomic_add whose `old` values are not used: the same bounds, in-flight
        and uninitialised checks on the same indices (active lanes in lane order) as the
        serialised path, then every addition at once."""
        if mask is False:
            return
        if isinstance(mask, np.ndarray) and isinstance(off, np.ndarray) and buf.init is None \
                and not self.inflight and self._atomic_totals_masked(buf, off, value, mask):
            return
        offs = off if isinstance(off, np.ndarray) else np.broadcast_to(off, (self.count,))
        idx = self._checked(buf, offs, mask, site)  # type: ignore[attr-defined]
        if idx.size == 0:
            return
        self.check_read(buf, idx, None, site, race=False)
        self.check_write(buf, idx, None, site, race=False)
        vals = np.asarray(value, dtype=buf.data.dtype)
        if vals.ndim and mask is not None:
            vals = vals[mask]
        np.add.at(buf.data, idx, vals)

    def _atomic_totals_masked(self, buf: Any, off: np.ndarray, value: Any,
                              mask: np.ndarray) -> bool:
        """`_atomic_totals` under a mask, with nothing to check but bounds: inactive lanes add
        0 to element 0 of their block's copy (no change to an integer) instead of selecting
        the active lanes twice. False (nothing done) when an active lane is out of bounds: the
        general path reports it."""
        safe = np.where(mask, off, 0)
        if outside(safe, buf.count):
            return False
        if buf.stride:  # batch mode, L1: each lane's block has its own copy
            safe = safe + self.block_base(buf.stride)  # type: ignore[attr-defined]
        dtype = buf.data.dtype
        vals = np.where(mask, np.asarray(value, dtype=dtype), dtype.type(0))
        np.add.at(buf.data, safe, vals)
        return True

    # misc -------------------------------------------------------------------------------------

    def loop_range(self, lb: Any, ub: Any, step: Any, site: int) -> range:
        if isinstance(lb, np.ndarray) or isinstance(ub, np.ndarray):
            raise self.fail("loop bounds differ between lanes; they must be uniform", site)
        if isinstance(step, np.ndarray) or not step:
            shown = "different on different lanes" if isinstance(step, np.ndarray) else int(step)
            raise self.fail(f"the loop step is {shown}: it must be a non-zero integer, the same "
                            f"on every lane (a zero step never ends)", site)
        return range(int(lb), int(ub), int(step))

    def float_to_int(self, x: Any, dtype: np.dtype, mask: Any, site: int) -> Any:
        """Truncation toward zero; NaN or out-of-range values on active lanes are an error."""
        arr = np.asarray(x, dtype=np.float64)
        bad = ~exact.float_in_int_range(np.trunc(arr), dtype)
        if mask is not None and mask is not False and arr.ndim:
            bad &= mask
        if np.any(bad):
            value = arr[bad].flat[0] if arr.ndim else float(arr)
            raise self.fail(f"pto.cast of {value} to {dtype} is out of range (or NaN)", site)
        if isinstance(x, np.ndarray):
            return np.trunc(arr).astype(dtype)
        return dtype.type(np.trunc(arr))

    def printf(self, fmt: str, values: tuple[Any, ...], mask: Any, site: int) -> None:
        lanes = range(self.count) if mask is None else np.nonzero(mask)[0]
        out = []
        for pos in lanes:
            row = tuple(_py(v[pos] if isinstance(v, np.ndarray) else v) for v in values)
            block, lane = self.describe_lane(int(pos))
            try:
                text = (fmt[:-1] if fmt.endswith("\n") else fmt) % row  # C's final newline
            except (TypeError, ValueError, OverflowError) as exc:
                raise self.fail(f"pto.printf format {fmt!r} cannot print {row}: {exc}",
                                site) from None
            out.append(f"[block {block} lane {lane}] {text}")
        if out:
            sys.stdout.write("\n".join(out) + "\n")


def _mma_result(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C + A @ B in the accumulator type (f16/bf16 inputs widened exactly; f16 accumulators
    computed in f32 and rounded once). Works on single tiles and on stacks of tiles."""
    acc = c.dtype
    if acc == np.float16:
        return (c.astype(np.float32) + a.astype(np.float32) @ b.astype(np.float32)).astype(acc)
    if a.dtype != acc:
        a, b = a.astype(acc), b.astype(acc)
    return c + a @ b


def _mma_accumulate(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """C += A @ B into the view `c` (one tile or a stack of tiles): the bits of
    `c[...] = _mma_result(c, a, b)`, without the temporaries of `c + a @ b` and the copy back
    when A, B and C share one element type (the common float32 case)."""
    if a.dtype == b.dtype == c.dtype and c.dtype != np.float16:
        np.add(c, a @ b, out=c)
    else:
        c[...] = _mma_result(c, a, b)


def _py(v: Any) -> Any:
    if isinstance(v, np.floating) or (hasattr(v, "dtype") and v.dtype.name == "bfloat16"):
        return float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _first_index(idx: Any, ok: Any) -> int:
    if isinstance(idx, np.ndarray):
        return int(idx[~np.asarray(ok)].flat[0])
    if isinstance(idx, slice):
        return (idx.start or 0) + int(np.argmin(ok))
    return int(idx)


def _bytes(buf: Any, idx: Any) -> Any:
    """Block-local L1 byte addresses of element indices (an int, slice or index array)."""
    if isinstance(idx, slice):
        idx = np.arange(idx.start, idx.stop)
    return buf.byte_of(idx)


__all__ = ["BlockMemory", "InFlight"]
