"""The lanes' own memory instructions: `pto.load`, `pto.store` and the atomics, with their
bounds checks, per-lane masking and hazard checks (in-flight copies, uninitialised L1, races).

`LaneMemory` is a part of the lane context (lanes.py's `LaneContext`, `ctx.lanes`): each lane
vector (and each lane window, windows.py) has its own, which names lanes with the vector's ids
and reports races through the vector's `ctx.races`; the block state it checks against (L1, the
copies in flight) is `ctx.memory`'s (tiles.py). The access kinds (strategies/) call
`check_read` / `check_write` when they take their checked route. See
docs/interpreter.md#the-lane-context-and-its-parts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter import atomic_rmw
from pypto.backend.interpreter.buffers import Buffer, outside
from pypto.backend.interpreter.parts import Memory, Vector
from pypto.backend.interpreter.strategies import atomics, sparse_gather
from pypto.errors import MemoryAccessError

Mask = Any  # None | False | np.ndarray[bool] (lanes.py)


class LaneMemory:
    """Loads, stores and atomics of one lane vector: a part of its `lanes.LaneContext`
    (`ctx.lanes`)."""

    __slots__ = ("ctx", "memory", "inflight")

    def __init__(self, ctx: Vector) -> None:
        self.ctx = ctx
        self.memory: Memory = ctx.memory  # the block state (tiles.BlockMemory)
        self.inflight = ctx.memory.inflight  # its copies in flight: the gate of every check

    def oob(self, buf: Buffer, offsets: Any, mask: Mask, site_index: int) -> MemoryAccessError:
        site = self.ctx.sites[site_index]
        size = buf.count
        if isinstance(offsets, np.ndarray):
            bad = (offsets < 0) | (offsets >= size)
            if mask is not None and mask is not False:
                bad &= mask
            pos = int(np.argmax(bad))
            address = int(offsets[pos])
        else:
            pos = 0 if mask is None else int(np.argmax(mask))
            address = int(offsets)
        block, lane = self.ctx.describe_lane(pos)
        space = "HBM" if buf.space == "global" else "L1"
        msg = (f"out-of-bounds {site.op} of {space} buffer '{buf.name}' at element {address} "
               f"(valid elements 0..{size - 1}, {size} x {buf.data.dtype}) by block {block}, "
               f"lane {lane}{self.memory.neighbour(buf, address)}")
        return MemoryAccessError(msg, kernel=self.ctx.kernel, location=site.location,
                                 called_from=site.called_from, block=block,
                                 lane=lane, address=address, bounds=(0, size), buffer=buf.name)

    def checked(self, buf: Buffer, off: Any, mask: Mask, site: int) -> Any:
        """Element indices of the active lanes, bounds-checked against the block's view of the
        buffer; in batch mode L1 offsets are moved to each lane's own block copy."""
        size = buf.count
        if isinstance(off, np.ndarray):
            if mask is None:
                if off.size and outside(off, size):
                    raise self.oob(buf, off, mask, site)
                active = off
            else:
                active = off[mask]
                if active.size and outside(active, size):
                    raise self.oob(buf, off, mask, site)
        elif not 0 <= off < size:
            raise self.oob(buf, off, mask, site)
        else:
            active = off
        if buf.stride:  # batch mode, L1
            base = self.ctx.block_base(buf.stride)
            return active + (base if mask is None else
                             self.ctx.masked(f"base{buf.stride}", base, mask))
        return active

    def load(self, buf: Buffer, off: Any, mask: Mask, site: int) -> Any:
        data = buf.data
        if mask is not None and isinstance(off, np.ndarray):
            if sparse_gather.Decision in self.ctx.decisions and self.ctx.sparse(mask):
                # few active lanes: select them, gather those, scatter back (zeros elsewhere;
                # an inactive lane's value is never used)
                idx = self.checked(buf, off, mask, site)
                if buf.watched() or self.inflight:
                    self.check_read(buf, idx, mask, site)
                out = np.zeros(self.ctx.count, dtype=data.dtype)
                out[mask] = data[idx]
                return out
            # Gather for every lane with inactive lanes pointed at element 0 (their values are
            # never used): cheaper than selecting the active lanes and scattering back.
            safe = np.where(mask, off, 0)
            if outside(safe, buf.count):
                raise self.oob(buf, off, mask, site)
            if buf.stride:  # batch mode, L1
                safe = safe + self.ctx.block_base(buf.stride)
            if buf.watched() or self.inflight:
                self.check_read(buf, safe[mask], mask, site)
            return data[safe]
        if isinstance(off, np.ndarray) or buf.stride:
            idx = self.checked(buf, off, mask, site)
            if buf.watched() or self.inflight:
                self.check_read(buf, idx, mask, site)
            if mask is None:
                return data[idx]
            out = np.zeros(self.ctx.count, dtype=data.dtype)
            out[mask] = data[idx]
            return out
        self.checked(buf, off, mask, site)
        if buf.watched() or self.inflight:
            self.check_read(buf, off, mask, site)
        value = data[off]
        if mask is None:
            return value  # a uniform address loads a uniform value
        return np.full(self.ctx.count, value, dtype=data.dtype)

    def store(self, buf: Buffer, off: Any, value: Any, mask: Mask, site: int) -> None:
        data = buf.data
        idx = self.checked(buf, off, mask, site)
        if buf.watched() or self.inflight:
            self.check_write(buf, idx, mask, site)
        if mask is not None and isinstance(value, np.ndarray):
            value = value[mask]
        if isinstance(idx, np.ndarray) or not isinstance(value, np.ndarray):
            data[idx] = value
        else:
            data[idx] = value[-1]  # every lane stores to one address: the last lane wins

    # hazard bookkeeping -----------------------------------------------------------------------

    def check_read(self, buf: Any, idx: Any, mask: Any, site: int, race: bool = True) -> None:
        """A lane read of `buf` at `idx` (offsets of the active lanes, a slice or an int): in
        flight, uninitialised, or racing with another warp? A lane access first moves every
        lazy load into L1 (the fast paths, which skip these checks, then run again)."""
        if self.inflight.lazy or self.inflight.fresh is not None:
            self.memory.settle()
        if buf.space == "local":
            if race and buf.shadow is not None:
                self.ctx.races.race_read(buf, idx, mask, site)
            if self.inflight:
                self._l1_in_flight(buf, idx, site, "read")
            if buf.init is not None:
                ok = buf.init[idx]
                if not np.all(ok):
                    first = _first_index(idx, ok)
                    raise self.ctx.fail(f"read of uninitialised L1: '{buf.name}'[{first}] was "
                                        f"never written (check_uninitialized=True)", site)
        elif self.inflight:
            for copy in self.inflight.values():
                if copy.kind == "async_store" and copy.hbm is buf and copy.hbm_hits(idx):
                    self.memory.hazard_in_flight(buf, copy.token, site, "read")

    def check_write(self, buf: Any, idx: Any, mask: Any, site: int, race: bool = True) -> None:
        if self.inflight.lazy or self.inflight.fresh is not None:  # lazy loads move first
            self.memory.settle()
        if buf.space == "local":
            if race and buf.shadow is not None:
                self.ctx.races.race_write(buf, idx, mask, site)
            if self.inflight:
                self._l1_in_flight(buf, idx, site, "write")
            if buf.init is not None:
                buf.init[idx] = True

    def _l1_in_flight(self, buf: Any, idx: Any, site: int, access: str) -> None:
        """Report a lane access of L1 elements `idx` that a copy in flight covers: a read
        hits a load's destination, a write any copy's L1 side."""
        byte = _bytes(buf, idx)
        for copy in list(self.inflight.values()):
            if (access == "write" or copy.kind == "async_load") and copy.l1_hits(byte):
                self.memory.hazard_in_flight(buf, copy.token, site, access)

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
                                      self.ctx.decisions.get(atomics.Decision))

    def _atomic_lanes(self, buf: Any, off: Any, value: Any, mask: Any, site: int) -> Any:
        """The active lanes of an atomic, their element indices (bounds-checked, in the
        block's copy of L1 in batch mode), their values and the zeroed old values; or those
        old values alone when no lane is active. Atomics do not race with each other: only
        the in-flight and uninitialised checks apply."""
        data = buf.data
        n = self.ctx.count
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
            idx = idx + self.ctx.lane_block[lanes] * buf.stride
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
            np.broadcast_to(np.asarray(compare, dtype=data.dtype), (self.ctx.count,))[lanes]
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
        offs = off if isinstance(off, np.ndarray) else np.broadcast_to(off, (self.ctx.count,))
        idx = self.checked(buf, offs, mask, site)
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
            safe = safe + self.ctx.block_base(buf.stride)
        dtype = buf.data.dtype
        vals = np.where(mask, np.asarray(value, dtype=dtype), dtype.type(0))
        np.add.at(buf.data, safe, vals)
        return True


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
