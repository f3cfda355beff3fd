"""Structured lane accesses: addresses whose shape across a lane vector is known, done as
slices instead of per-lane gathers (see docs/interpreter.md, "Speed").

A mixin of `lanes.LaneContext` (it uses the context's ids, masks, memory and race checks):
- block-local rows (batch mode, 1-D blocks): `buf + tid + u` in L1 as a 2-D slice of the blocks'
  copies (`load_rows`, `store_rows`, `rows_op`), lane windows of masks (`lane_window`) and the
  shared block-local comparison masks (`local_cmp`);
Addresses of any other affine shape (2-D and 3-D launches, strides, broadcasts) are the access
planner's (plan.py, views.py).
Each falls back to the general path (`load` / `store`) whenever its preconditions fail, so
errors are reported exactly as there. The planner (planning.py) decides which op takes which;
codegen emits none of them when the plan is empty (fast paths off).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.strategies import ramp

Mask = Any  # None | False | np.ndarray[bool] (see lanes.py)

COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
           "==": np.equal, "!=": np.not_equal}


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def masked_copy(dst: np.ndarray, value: Any, where: np.ndarray) -> None:
    """`np.copyto(dst, value, casting="unsafe", where=where)`, bit for bit. NumPy's masked copy
    branches on every element, which a mask computed from data (`if b < a`, about half the
    lanes at random) makes several times slower than a predictable one; such a mask (many
    changes between neighbours) selects bit operations instead: `dst ^= (dst ^ value) & m`
    with m all ones where the mask holds."""
    u = _UINT.get(dst.dtype.itemsize)
    if u is None or where.size < 4096 or where.shape != dst.shape or \
            np.count_nonzero(where.reshape(-1)[1:] != where.reshape(-1)[:-1]) * 16 < where.size:
        np.copyto(dst, value, casting="unsafe", where=where)
        return
    new = np.asarray(value)
    if new.dtype != dst.dtype:
        new = new.astype(dst.dtype)  # the unsafe cast copyto makes
    ones = where.view(np.uint8).astype(u)
    np.negative(ones, out=ones)
    bits = dst.view(u)
    diff = np.bitwise_xor(bits, np.broadcast_to(new, dst.shape).view(u))
    diff &= ones
    bits ^= diff


class StructuredAccess:
    """Structured loads and stores of a lane vector; mixed into `LaneContext`."""

    whole_vector = True  # a vector of whole blocks' lanes (False: a windows.WindowContext)

    # provided by LaneContext and its other mixins
    races: Any  # races.Races: the lane context's race checker (a part)
    count: int
    block: tuple[int, int, int]
    block_lanes: int
    grid: tuple[int, int, int]
    first_lane: int
    inflight: dict[int, Any]
    local_base: int
    cache: Any  # caches.RunCache (the Executable's)

    def _rows(self, buf: Buffer, base: Any, mask: Mask) -> tuple[int, int, Any] | None:
        """For an access where lane k of every block touches element `base + k` of its
        block's copy of L1 buffer `buf` (batch mode): (lo, hi, active) — the columns lo..hi of
        the block's copy that active lanes touch and, unless every lane of those columns is
        active, their (blocks, hi - lo) mask — or None when the general path must run (fast
        paths off, initialisation or in-flight tracking on, or an active lane out of bounds,
        which the general path reports). Copies in flight are checked on the columns
        (`rows_inflight`): their regions are block-local bytes."""
        if not (buf.stride and buf.init is None and
                mask is not False and self.local_base == 0):
            return None
        base = int(base)
        first, last = 0, self.block_lanes  # the lanes of a block that may be active
        if mask is not None:
            first, last, dense = self.lane_window(mask)
        lo, hi = base + first, base + last
        if lo < 0 or hi > buf.count:
            return None
        if mask is None or dense:
            return lo, hi, None
        return lo, hi, mask.reshape(-1, self.block_lanes)[:, first:last]

    def rows_inflight(self, buf: Buffer, lo: int, hi: int, active: Any, site: int,
                      write: bool) -> None:
        """The in-flight copy checks of a row access (columns lo..hi of every block's copy,
        `active`: (blocks, columns) mask or None): copies' L1 regions are block-local bytes,
        so the columns any block touches are checked once, as the general path would check
        every lane (its report names no lane)."""
        cols = np.arange(lo, hi, dtype=np.int64) if active is None else \
            lo + np.flatnonzero(active.any(axis=0))
        if cols.size:
            if write:
                self.check_write(buf, cols, None, site, race=False)  # type: ignore[attr-defined]
            else:
                self.check_read(buf, cols, None, site, race=False)  # type: ignore[attr-defined]

    @property
    def row_width(self) -> int:
        """Lanes of one block in the vector (batch mode: a row of the (blocks, lanes) view)."""
        return self.block_lanes

    def local_cmp(self, op: str, bound: np.int32) -> Any:
        """`local_id(0) op bound` (1-D blocks): one block's comparison repeated, shared by
        every lane vector of this shape (and its lane window computed once)."""
        if not self.whole_vector or not self._whole_blocks() or self.block[1] * \
                self.block[2] != 1:
            return COMPARE[op](self.local_id(0), bound)
        lanes = self.block_lanes
        return self.cache.geometry(("local_cmp", op, int(bound), lanes, self.count),
                        lambda: np.tile(COMPARE[op](np.arange(lanes, dtype=np.int32), bound),
                                        self.count // lanes))

    def lane_window(self, mask: np.ndarray) -> tuple[int, int, bool]:
        """(first, last, dense): the block-local lanes first..last-1 hold every active lane of
        every block, and `dense` says whether all of them are active. Branches such as
        `if tid < s` keep a prefix of each block active; accesses then touch only those
        columns. Computed once per mask object."""
        shared = not mask.flags.writeable  # a shared mask (local_cmp): its window is too
        cache = self.cache  # type: ignore[attr-defined]  # the Executable's (caches.py)
        if shared:
            known = cache.known(cache.windows, mask)
            if known is not None:
                return known  # type: ignore[no-any-return]
        facts = self.mask_facts(mask)
        window = facts.get("window")
        if window is None:
            rows = mask.reshape(-1, self.block_lanes)
            cols = np.flatnonzero(rows.any(axis=0))
            if cols.size == 0:
                window = (0, 0, True)
            else:
                first, last = int(cols[0]), int(cols[-1]) + 1
                dense = np.count_nonzero(mask) == rows.shape[0] * (last - first)
                window = (first, last, bool(dense))
            facts["window"] = window
            if shared:
                cache.remember(cache.windows, mask, window)
        return window  # type: ignore[return-value]

    def load_rows(self, buf: Buffer, base: Any, mask: Mask, site: int) -> Any:
        """Load where lane k of each block reads element `base + k` of its block's copy of an
        L1 buffer (batch mode: block-local ids plus a uniform offset, as `buf + tid + s`): a
        2-D slice with one row per block instead of a gather."""
        cols = self._rows(buf, base, mask)
        if cols is None:
            if not buf.stride and self.local_base == 0 and self.count == self.block_lanes:
                return ramp.load(self, buf, base, mask, site)  # one block: the ramp itself
            width = self.row_width
            lo = int(base) + self.local_base
            if buf.space == "global" and not self.inflight and \
                    mask is not False and self.count % width == 0 and 0 <= lo and \
                    lo + width <= buf.count:
                # HBM: every block reads the same elements (as gamma[c0 + tid])
                return np.tile(buf.data[lo:lo + width], self.count // width)
            return self.load(buf, self.local_id(0) + np.int64(base), mask, site)
        lo, hi, active = cols
        base = int(base)
        if buf.shadow is not None:
            self.races.race_rows(buf, base, lo, hi, active, site, write=False)
        if self.inflight:
            self.rows_inflight(buf, lo, hi, active, site, write=False)
        rows = buf.grid()[:, lo:hi]
        width = self.row_width
        if hi - lo == width:
            return rows.reshape(-1)  # a copy: the rows are not contiguous in the arena
        out = np.zeros((rows.shape[0], width), dtype=buf.data.dtype)
        j = lo - base - self.local_base  # lanes outside are inactive: their value is unused
        out[:, j:j + hi - lo] = rows
        return out.reshape(-1)

    def rows_op(self, dst: Buffer, base: Any, ufunc: Any, a: Buffer, base_a: Any, b: Buffer,
                base_b: Any, mask: Mask, site_a: int, site_b: int, site: int,
                a_first: bool = True) -> None:
        """`store_rows(dst, base, ufunc(load_rows(a, base_a), load_rows(b, base_b)))` computed
        straight from the two rows into the stored rows, one pass without temporaries (ufuncs
        handle operands that overlap the output as if copied first); the two reads and the
        write are checked in program order (`a_first`: a's load comes before b's). Anything
        unusual (fast paths off, a mask with holes,
        a row out of bounds, another result type) takes the three steps."""
        ca, cb, cd = (self._rows(a, base_a, mask), self._rows(b, base_b, mask),
                      self._rows(dst, base, mask))
        if ca is None or cb is None or cd is None or ca[2] is not None or \
                cb[2] is not None or cd[2] is not None or \
                np.result_type(a.data.dtype, b.data.dtype) != dst.data.dtype:
            if a_first:
                va = self.load_rows(a, base_a, mask, site_a)
                vb = self.load_rows(b, base_b, mask, site_b)
            else:
                vb = self.load_rows(b, base_b, mask, site_b)
                va = self.load_rows(a, base_a, mask, site_a)
            self.store_rows(dst, base, ufunc(va, vb), mask, site)
            return
        reads = ((a, base_a, ca, site_a, False), (b, base_b, cb, site_b, False))
        for buf, at, cols, s, write in (reads if a_first else reads[::-1]) + \
                ((dst, base, cd, site, True),):
            if buf.shadow is not None:
                self.races.race_rows(buf, int(at), cols[0], cols[1], None, s, write=write)
            if self.inflight:
                self.rows_inflight(buf, cols[0], cols[1], None, s, write=write)
        ufunc(a.grid()[:, ca[0]:ca[1]], b.grid()[:, cb[0]:cb[1]],
              out=dst.grid()[:, cd[0]:cd[1]])

    def store_rows(self, buf: Buffer, base: Any, value: Any, mask: Mask, site: int) -> None:
        """Store where lane k of each block writes element `base + k` of its block's copy (see
        `load_rows`): one 2-D slice assignment, masked lanes left untouched."""
        cols = self._rows(buf, base, mask)
        if cols is None:
            if not buf.stride and self.local_base == 0 and self.count == self.block_lanes:
                ramp.store(self, buf, base, value, mask, site)
                return
            self.store(buf, self.local_id(0) + np.int64(base), value, mask, site)
            return
        lo, hi, active = cols
        base = int(base)
        if buf.shadow is not None:
            self.races.race_rows(buf, base, lo, hi, active, site, write=True)
        if self.inflight:
            self.rows_inflight(buf, lo, hi, active, site, write=True)
        rows = buf.grid()[:, lo:hi]
        if isinstance(value, np.ndarray):
            j = lo - base - self.local_base
            value = value.reshape(-1, self.row_width)[:, j:j + hi - lo]
        if active is None:
            rows[...] = value
        else:
            masked_copy(rows, value, active)
