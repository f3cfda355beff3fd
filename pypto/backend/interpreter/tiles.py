"""The block's memory: L1 buffers, the copies in flight, bulk copies and their waits.

`BlockMemory` is a part of `LaneContext` (lanes.py), `ctx.memory`: in block mode one context is
one block, so the state it owns (L1 buffers, in-flight copies, the race epoch) is per block, as
on the device; the warps of one block (warp mode) share it. The tile compute instructions that
read and write these tiles (`fill`, `mma`, the tile vector instructions) are the context's
`ctx.tiles` (tile_ops.py); the lanes' own accesses and their checks are `ctx.lanes`
(lane_memory.py). See docs/interpreter.md#the-lane-context-and-its-parts.

Asynchronous copies move their data when issued, and the destination (for loads) or source (for
stores) region is marked *in flight* until the `wait` of its token. Reading an in-flight load
destination, writing an in-flight region, or reading HBM that an in-flight store is writing is a
`RaceError` naming both instructions — so a kernel that forgets a `wait` fails loudly instead of
reading whatever happened to be there.

In batch mode a load whose blocks' HBM tiles form an affine grid is *lazy*
(`strategies.batch_copy.LazyLoad`): its tiles stay in HBM, and `mma` multiplies them there
(strategies/batched_mma.py: each block's product is still one BLAS call of the tile's shape, on
a view with the HBM row stride instead of the L1 one). Anything else that touches the loaded L1
bytes, or writes HBM, first moves the tiles into L1 as the eager copy would have
(`BlockMemory.settle`), so every other reader sees L1 as the semantics say.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.copies import NO_TOKEN as _NO_TOKEN
from pypto.backend.interpreter.copies import InFlight, Region
from pypto.backend.interpreter.copies import byte_region as _byte_region
from pypto.backend.interpreter.copies import distinct as _distinct
from pypto.backend.interpreter.copies import l1_in_flight as _l1_in_flight
from pypto.backend.interpreter.l1 import L1Arena
from pypto.backend.interpreter.parts import Vector
from pypto.backend.interpreter.shadow import ShadowView
from pypto.backend.interpreter.strategies import batch_copy, lazy_l1
from pypto.backend.interpreter.strategies.lazy_l1 import FreshL1
from pypto.errors import DeadlockError, MemoryAccessError, RaceError

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


class _NoCopies(CopyState):
    """`NO_COPIES`: the copies of a lane vector whose block state is not made yet (lanes.py
    `LaneContext.memory`): empty, and read-only so that a write meant for a block's state
    cannot land in this shared one unseen."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.lazy = ()  # type: ignore[assignment]  # (a tuple: nothing appends to it)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("pypto internal error: a copy registered before the block state "
                           "was made (use ctx.memory.inflight)")

    __setitem__ = __delitem__ = update = setdefault = _refuse  # type: ignore[assignment]


NO_COPIES: CopyState = _NoCopies()


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
    """L1, the copies in flight and the bulk copies of a lane vector's block(s): a part of its
    `lanes.LaneContext` (`ctx.memory`), which gives it the vector's shape, sites and errors."""

    __slots__ = ("ctx", "l1_buffers", "inflight", "counters", "arenas")

    def __init__(self, ctx: Vector, share_with: BlockMemory | None = None) -> None:
        """Fresh block state, or the state of `share_with` (the warps of one block share it)."""
        self.ctx = ctx
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
        decision = self.ctx.decisions.get(lazy_l1.Decision)
        for arena in self.arenas:
            lazy = lazy_l1.applies(decision, arena.blocks, arena.layout.tile_only)
            arena.reset(poison=not lazy)
            if lazy:
                self.inflight.fresh = FreshL1(arena)

    @property
    def arena(self) -> L1Arena:
        if not self.arenas:
            ctx = self.ctx
            blocks = ctx.count // ctx.block_lanes if ctx.count > ctx.block_lanes else 1
            self.arenas.append(L1Arena(ctx.layout, blocks, track_init=ctx.check_uninitialized,
                                       race_check=ctx.race_check))
        return self.arenas[0]

    # helpers ----------------------------------------------------------------------------------

    def require_all_lanes(self, mask: Any, site: int, what: str) -> None:
        """Every tile instruction starts here: all lanes must be present, and as a block-level
        collective it orders lane accesses before it against those after (a new race epoch)."""
        if mask is not None:
            raise self.ctx.fail(f"{what} is a block-level instruction but not every lane of the "
                            f"block reached it", site, DeadlockError)
        self.counters["epoch"] += 1

    def _site_text(self, site: int) -> str:
        s = self.ctx.sites[site]
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
        slot = self.ctx.layout.slots[key]
        data, stride = arena.view(slot)
        g = self.ctx.layout.granule
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
        if buf.space != "local" or self.ctx.layout is None:
            return ""
        byte = buf.offset + int(address) * buf.data.itemsize
        other = self.ctx.layout.slot_at(byte, other_than=None)
        if other is None or other.name == buf.name and other.offset == buf.offset:
            return ""
        last = buf.offset + buf.count * buf.data.itemsize - 1
        return (f"; that address is L1 byte {byte}, inside buffer '{other.name}' (bytes "
                f"{other.offset}..{other.end - 1}, allocated at {other.location}): the access "
                f"overruns '{buf.name}' (bytes {buf.offset}..{last}) into its neighbour")

    # lazy loads ---------------------------------------------------------------------------------

    def settle(self, span: Region | None = None, hbm: np.ndarray | None = None) -> None:
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
            self.settle()
    def hazard_in_flight(self, buf: Any, token: int, site: int, access: str) -> None:
        copy = self.inflight[token]
        space = "L1" if buf.space == "local" else "HBM"
        raise self.ctx.fail(
            f"hazard: {access} of {space} buffer '{buf.name}' while the "
            f"{self._site_text(copy.site)} that {'writes' if copy.kind == 'async_load' else 'reads'}"
            f" it is still in flight; call pto.wait(token) or pto.wait_all() before this "
            f"{access}", site, RaceError)

    # bulk copies ------------------------------------------------------------------------------

    def region(self, buf: Any, base: Any, rows: int, row_len: int, stride: int, site: int,
                what: str, block: int = 0) -> tuple[np.ndarray, Region]:
        """A (rows, row_len) view of `buf` from element `base`, rows `stride` apart; checked
        (an error names `block`, the index of the block in the lane vector)."""
        base = int(base)
        data = buf.data[:buf.count]
        region = Region(base, rows, row_len, stride)
        if rows == 0 or row_len == 0:
            return data[0:0].reshape(0, 0), region
        if stride < row_len and rows > 1:
            raise self.ctx.fail(f"a row stride of {stride} elements is shorter than the row "
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
        s = self.ctx.sites[site]
        size = buf.count  # one block's view (batch mode keeps a copy per block back to back)
        space = "HBM" if buf.space == "global" else "L1"
        block, _ = self.ctx.describe_lane(block_index * self.ctx.block_lanes)
        return MemoryAccessError(
            f"out-of-bounds {s.op} {what}: {space} buffer '{buf.name}' element {address} "
            f"(valid elements 0..{size - 1}) in block {block}"
            f"{self.neighbour(buf, address)}", kernel=self.ctx.kernel,
            location=s.location, called_from=s.called_from, block=block, lane=None,
            address=address, bounds=(0, size), buffer=buf.name)

    def copy(self, kind: str, dst_b: Any, dst_o: Any, src_b: Any, src_o: Any, nbytes: Any,
             rows: Any, src_stride: Any, dst_stride: Any, mask: Any, site: int) -> Any:
        self.require_all_lanes(mask, site, f"pto.{kind}")
        blocks = max(_blocks_of(dst_b), _blocks_of(src_b))
        if blocks == 1:
            for v in (dst_o, src_o, nbytes, rows, src_stride, dst_stride):
                if isinstance(v, np.ndarray):
                    raise self.ctx.fail(f"pto.{kind} operands must be uniform across the block",
                                        site)
            regions = [self._copy_one(kind, dst_b, dst_o, src_b, src_o, nbytes, rows,
                                      src_stride, dst_stride, site)]
        else:  # batch mode: every block of the vector copies its own tile
            raw = (dst_o, src_o, nbytes, rows, src_stride, dst_stride)
            decision = self.ctx.decisions.get(batch_copy.Decision)  # the plan selects it
            if decision is not None:
                fast = batch_copy.copy_again(decision, self, kind, dst_b, src_b, raw, blocks,
                                             site)
                if fast is not None:
                    return None if fast is _NO_TOKEN else fast
            ops = [self.per_block(v, site, "operand") if isinstance(v, np.ndarray) else v
                   for v in raw]
            if decision is not None:
                fast = batch_copy.copy_blocks(decision, self, kind, blocks, dst_b, src_b, ops,
                                              site, raw)
                if fast is not None:
                    return None if fast is _NO_TOKEN else fast
            if self.inflight.lazy or self.inflight.fresh is not None:
                self.settle()
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
            raise self.ctx.fail(f"pto.{kind}: nbytes={nbytes} is not a whole number of {rows} "
                            f"row(s) of {itemsize}-byte elements", site)
        row_len = nbytes // (rows * itemsize)
        src_view, src_region = self.region(src_b, src_o, rows, row_len, int(src_stride), site,
                                            "source", block)
        dst_view, dst_region = self.region(dst_b, dst_o, rows, row_len, int(dst_stride), site,
                                            "destination", block)
        # the copy reads its source and writes its destination: check both against in-flight
        if src_b.watched() or dst_b.watched() or self.inflight:
            self.check_region(src_b, src_region, site, "read")
            self.check_region(dst_b, dst_region, site, "write")
        dst_view[...] = src_view
        if dst_b.init is not None:
            self.mark_init(dst_b, dst_region)
        return dst_region, src_region

    def mark_init(self, buf: Any, region: Region) -> None:
        init = buf.init
        for r in range(region.rows):
            start = region.base + r * region.stride
            init[start:start + region.row_len] = True

    def check_region(self, buf: Any, region: Region, site: int, access: str) -> None:
        if region.rows == 0 or region.row_len == 0:
            return
        if buf.space == "local":
            if self.inflight:
                hit = _l1_in_flight(self.inflight, _byte_region(buf, region), access)
                if hit is not None:
                    self.hazard_in_flight(buf, hit.token, site, access)
            if access == "read" and buf.init is not None:
                for r in range(region.rows):
                    start = region.base + r * region.stride
                    if not buf.init[start:start + region.row_len].all():
                        raise self.ctx.fail(f"read of uninitialised L1 in '{buf.name}' "
                                        f"(check_uninitialized=True)", site)
        else:
            for copy in list(self.inflight.values()):
                if copy.kind == "async_store" and copy.hbm is buf and \
                        any(r.overlaps(region) for r in copy.hbm_regions):
                    self.hazard_in_flight(buf, copy.token, site, access)

    def wait(self, token: Any, mask: Any, site: int) -> None:
        self.require_all_lanes(mask, site, "pto.wait")
        if token is None:
            raise self.ctx.fail("pto.wait on a token whose copy was never issued (it would wait "
                            "forever)", site, DeadlockError)
        self.inflight.pop(int(token), None)

    def wait_all(self, mask: Any, site: int) -> None:
        self.require_all_lanes(mask, site, "pto.wait_all")
        self.inflight.clear()
    # tile compute -----------------------------------------------------------------------------

    def per_block(self, v: Any, site: int, what: str) -> Any:
        """Batch mode: the value each block gives a block-level operand (a scalar if the same
        for all). It must be uniform within each block."""
        if not isinstance(v, np.ndarray):
            return v
        if type(v).__name__ == "PerBlock":  # one value per block already (views.block_offset)
            return v.view(np.ndarray)
        bl = self.ctx.block_lanes
        # uniform within each block <=> every lane equals its left neighbour, except at the
        # first lane of a block (one contiguous compare: cheaper than a (blocks, lanes) one)
        changes = v[1:] != v[:-1]
        changes[bl - 1::bl] = False
        if changes.any():
            raise self.ctx.fail(f"the {what} of a block-level instruction must be uniform "
                                f"across the block", site)
        col = v[::bl]
        return col[0] if (col == col[0]).all() else col


__all__ = ["BlockMemory", "InFlight"]
