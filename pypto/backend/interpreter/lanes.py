"""The runtime half of the interpreter: what generated kernel code calls.

A kernel is executed on a *lane vector*: a set of lanes (the whole grid, one block, or one warp)
whose per-lane values are NumPy arrays of equal length, while uniform values stay NumPy scalars.
`LaneContext` describes one such vector (its ids, its masks, how to name a lane in an error) and
holds the parts that run instructions on it (docs/interpreter.md#the-lane-context-and-its-parts):
`memory` (the block state and bulk copies, tiles.py), `lanes` (loads, stores, atomics,
lane_memory.py), `tiles` (fill, mma, tile vector instructions, tile_unit.py), `races` (races.py)
and `planned` (views.py), each behind its protocol in parts.py. The module-level helpers below
(masks, `ramp_compare`, `merge`, ...) are what generated code calls directly.

Masks: `None` means every lane of the vector is active, `False` means none is, otherwise a bool
array. Keeping "all active" as `None` is what lets the common case run on contiguous slices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.caches import RunCache
from pypto.backend.interpreter.affine import Box, same_outcome, vector_box
from pypto.backend.interpreter import lane_ops
from pypto.backend.interpreter.lane_memory import LaneMemory
from pypto.backend.interpreter.parts import LaneAccess, Memory, Tiles
from pypto.backend.interpreter.races import RaceChecker, Races
from pypto.backend.interpreter.strategies import whole_blocks
from pypto.backend.interpreter.structured import COMPARE
from pypto.backend.interpreter.tile_unit import TileUnit
from pypto.backend.interpreter.tiles import NO_COPIES, BlockMemory, CopyState
from pypto.backend.interpreter.views import PlannedViews
from pypto.errors import KernelError

Mask = Any  # None | False | np.ndarray[bool]



@dataclass(frozen=True)
class Site:
    """Where an instruction came from, for error messages."""

    op: str
    location: str  # "file.py:12:8" (or "<unknown>")
    called_from: tuple[str, ...] = ()  # inlined from helpers: the calls, innermost first


_SMALL_MASK = 1 << 14
"""Up to this many lanes one `count_nonzero` pass (~0.3 us at 1024 lanes) decides "no lane" /
"every lane" faster than `any()` and `all()` (two reductions, ~1.4 us); on longer masks the
two reductions win because they stop at the first lane that decides."""


def _none_or_all(r: np.ndarray, whole: bool) -> Mask:
    """`False` when no lane of `r` is set, `None` when every lane is and `whole` (the result
    covers the vector), else `r`."""
    if r.size <= _SMALL_MASK:
        active = np.count_nonzero(r)
        if not active:
            return False
        return None if whole and active == r.size else r
    if not r.any():
        return False
    if whole and r.all():
        return None
    return r


def mask_and(m: Mask, c: Any, cache: RunCache | None = None) -> Mask:
    """Active lanes of the `then` side of a branch on `c`. `cache` (the Executable's
    caches.RunCache; generated code gets it bound) recognises its all-True / all-False masks
    and remembers the outcome for shared read-only masks (LaneContext.local_cmp), which
    every lane vector of a launch shape reuses."""
    return mask_and_cached(cache, m, c)


def mask_and_cached(cache: RunCache | None, m: Mask, c: Any) -> Mask:
    """`mask_and(m, c, cache)`, with the cache first: what generated code calls, as a method
    bound to its Executable's cache (types.MethodType: no dict of keywords per call, as a
    `functools.partial` with `cache=` would build)."""
    if isinstance(c, np.ndarray):
        if cache is not None:
            full = cache.full.get(c.size)
            if full is not None:  # a comparison that held on no lane / every lane (ramp_compare)
                if c is full[0]:
                    return False
                if c is full[1] and m is None:
                    return None
            if m is None and not c.flags.writeable:  # decided once
                table = cache.outcomes
                entry = table.get(id(c))
                if entry is not None and entry[0] is c:
                    return entry[1]
                outcome = _none_or_all(c, True)
                cache.remember(table, c, outcome)
                return outcome
        return _none_or_all(c if m is None else (m & c), m is None)
    return m if c else False


def mask_andnot(m: Mask, c: Any, cache: RunCache | None = None) -> Mask:
    """Active lanes of the `else` side of a branch on `c`."""
    return mask_andnot_cached(cache, m, c)


def mask_andnot_cached(cache: RunCache | None, m: Mask, c: Any) -> Mask:
    """`mask_andnot(m, c, cache)` with the cache first, bound for generated code as
    `mask_and_cached` is."""
    if isinstance(c, np.ndarray):
        full = cache.full.get(c.size) if cache is not None else None
        if full is not None:
            if c is full[1]:
                return False
            if c is full[0] and m is None:
                return None
        return _none_or_all(~c if m is None else (m & ~c), m is None)
    return False if c else m


def ramp_compare(cache: RunCache, ramp_: np.ndarray, op: str, u: Any, base: Any) -> np.ndarray:
    """`(ramp + base) OP u` for a uniform `u`, as `ramp OP (u - base)` (codegen emits this for
    an affine lane value compared with a uniform one: no array for the affine side is made;
    generated code gets it bound to its Executable's `cache`). `u - base` is computed as the
    int64 subtraction it stands for (wrapping like NumPy's), then clamped to int32 (`bound32`).
    When the outcome is the same on every lane (the bounds check `i < n` of a launch that
    covers exactly n lanes) it returns the cache's read-only all-True / all-False mask, which
    `mask_and` recognises without looking at the lanes."""
    bound = int(u) - int(base)
    if not -(2**63) <= bound < 2**63:
        bound = (bound + 2**63) % 2**64 - 2**63  # NumPy's int64 wrap-around
    n = ramp_.size
    if n and ramp_ is cache.ramps.get(n):  # lanes 0..n-1 (`cache.ramp(n)`)
        if op == "<" and bound > n - 1:  # the bounds check `i < n` of a launch of n lanes
            full = cache.full.get(n)
            return full[1] if full is not None else cache.uniform_masks(n)[True]
        outcome = same_outcome(op, 0, n - 1, bound)
        if outcome is not None:
            return cache.uniform_masks(n)[outcome]
    return COMPARE[op](ramp_, bound32(bound))


_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1




def bound32(x: Any) -> np.int32:
    """A uniform bound to compare the int32 lane ramp with, clamped to int32: the ramp lies in
    [0, 2^31 - 2], so every comparison gives the same answer as with the exact int64 value, and
    the comparison runs on int32 instead of promoting the whole ramp to int64."""
    v = int(x)
    return np.int32(_I32_MIN if v < _I32_MIN else _I32_MAX if v > _I32_MAX else v)


def addptr(p: Any, off: Any) -> Any:
    """`pto.addptr`: an element offset (int64) plus a sign-extended offset. An int32 offset
    array is widened first and then added in int64, about twice as fast as NumPy's mixed
    int64 + int32 add (which casts in small buffered chunks); the same values. A zero base
    (every pointer argument and L1 buffer starts at offset 0) is the widening alone."""
    if isinstance(off, np.ndarray) and off.dtype != np.int64:
        wide = off.astype(np.int64)
        if not isinstance(p, np.ndarray) and p == 0:
            return wide
        return np.add(p, wide, out=wide)
    return p + off


def select(c: Any, a: Any, b: Any) -> Any:
    if isinstance(c, np.ndarray):
        return np.where(c, a, b)
    return a if c else b


def merge(c: Any, a: Any, b: Any, dtype: np.dtype, then: Mask = False,
          other: Mask = False, view_ok: bool = False) -> Any:
    """Join the values a branch yields: lanes where `c` held take `a`. `then` / `other` are
    the two sides' masks: None when every lane of the vector took that side, whose value is
    then the result (copied if it may be a view of memory, unless `view_ok`: codegen found
    every use of the result before any write to memory)."""
    if then is None or other is None:
        v = a if then is None else b
        if isinstance(v, np.ndarray) and v.dtype == dtype:
            return v if v.flags.owndata or view_ok else v.copy()
    if isinstance(c, np.ndarray):
        out = np.where(c, a, b)
        return out if out.dtype == dtype else out.astype(dtype)
    return a if c else b


def cast(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return dtype.type(x)


class LaneContext:
    """One lane vector of one launch: ids, memory access, error reporting.

    `flat` maps vector position -> linear lane number in the launch (block-major, x fastest),
    which is what errors report. Subclasses / modes only differ in how ids are computed.
    """

    ins: Any = None  # the attached instrument (instrumented code variants only)
    whole_vector = True  # a vector of whole blocks' lanes (False: a windows.WindowContext)
    row_runs = True  # each block's lanes are one run of columns (False: a warp window)
    # the variant's strategy decisions by kind (strategies/: ids from per-block patterns,
    # sparse masked gathers, batched copies, ...); empty: the general path only
    decisions: dict[type, Any] = {}

    def __init__(self, *, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 first_lane: int, count: int, sites: list[Site], target: Any, layout: Any,
                 check_uninitialized: bool = False, share_block_with: LaneContext | None = None,
                 race_check: bool = False, warp_index: int | None = None,
                 cache: RunCache | None = None):
        self.kernel = kernel
        self.cache = RunCache() if cache is None else cache  # the Executable's (caches.py)
        self.target = target
        self.layout = layout  # l1.L1Layout: where each alloc_local lives
        self.warp_size = target.warp_size
        self.check_uninitialized = check_uninitialized
        self.race_check = race_check
        self.warp_index = warp_index  # warp mode: the warp this vector is; else None
        self.warp_mode = warp_index is not None
        # the block state, a part (tiles.py): L1, the copies in flight, the race epoch; the
        # warps of one block (warp mode) share it. `inflight` and `counters` are its state,
        # named here too because every lane access's fast path tests `ctx.inflight`. Made at
        # first use (`memory`), as the other parts: most small launches never touch L1, copies
        # or barriers, and making it was ~0.4 us of every lane vector; until then `inflight`
        # is the empty `NO_COPIES` (no copy can be in flight before the state exists).
        if share_block_with is None:
            self.inflight: CopyState = NO_COPIES
        else:
            memory = self.memory = BlockMemory(self, share_block_with.memory)
            self.inflight = memory.inflight
            self.counters = memory.counters
        self.grid = grid
        self.block = block
        self.block_lanes = block[0] * block[1] * block[2]
        self.first_lane = first_lane  # linear launch lane of vector position 0
        self.count = count
        self.sites = sites
        r = self.cache.ramps.get(count)  # cache.ramp(count), the common case inline
        self.ramp = r if r is not None else self.cache.ramp(count)
        self._ids: dict[str, Any] = {}
        self._mask_cache: tuple[Any, dict[str, np.ndarray]] | None = None

    # ids ------------------------------------------------------------------------------------

    def _linear(self) -> np.ndarray:
        return self.ramp + np.int64(self.first_lane) if self.first_lane else self.ramp

    @property
    def in_one_block(self) -> bool:
        return self.first_lane // self.block_lanes == \
            (self.first_lane + self.count - 1) // self.block_lanes

    @property
    def local_base(self) -> int:
        """Local (in-block) linear id of vector position 0."""
        return self.first_lane % self.block_lanes

    def _block_linear_and_local(self) -> tuple[Any, Any]:
        """(block index, local linear id) per lane; computed once per lane vector."""
        cached = self._ids.get("block_local")
        if cached is None:
            cached = self._ids["block_local"] = self._compute_block_local()
        return cached

    def _compute_block_local(self) -> tuple[Any, Any]:
        lin = self._linear()
        if self.in_one_block:
            # one block (or one warp of it): the block id is uniform
            block_start = self.first_lane - self.local_base
            return np.int64(self.first_lane // self.block_lanes), lin - block_start
        return lin // self.block_lanes, lin % self.block_lanes

    def _whole_blocks(self) -> bool:
        """The vector holds whole blocks (grid and batch modes): ids are per-block patterns."""
        return whole_blocks.applies(self.decisions.get(whole_blocks.Decision), self.first_lane,
                                    self.count, self.block_lanes)

    def _block_coords(self, dim: int) -> np.ndarray:
        """Coordinate `dim` of each block of the vector (one entry per block)."""
        b0 = self.first_lane // self.block_lanes
        blin = np.arange(b0, b0 + self.count // self.block_lanes, dtype=np.int64)
        gx, gy, _ = self.grid
        return (blin % gx, (blin // gx) % gy, blin // (gx * gy))[dim]

    def _local_pattern(self, dim: int) -> np.ndarray:
        """Coordinate `dim` of each lane of one block (x fastest)."""
        loc = np.arange(self.block_lanes, dtype=np.int64)
        bx, by, _ = self.block
        return (loc % bx, (loc // bx) % by, loc // (bx * by))[dim]

    def local_id(self, dim: int) -> Any:
        key = f"l{dim}"
        if key not in self._ids and self._whole_blocks():
            # one block's pattern repeated: a single pass instead of // and % over every lane
            self._ids[key] = self.cache.geometry(
                ("local", dim, self.block, self.count),
                lambda: np.tile(self._local_pattern(dim).astype(np.int32),
                                self.count // self.block_lanes))
        if key not in self._ids:
            _, local = self._block_linear_and_local()
            bx, by, _ = self.block
            if dim == 0:
                v = local % bx if by * self.block[2] > 1 else local
            elif dim == 1:
                v = (local // bx) % by
            else:
                v = local // (bx * by)
            self._ids[key] = _i32(v)
        return self._ids[key]

    def block_id(self, dim: int) -> Any:
        key = f"b{dim}"
        if key not in self._ids and self._whole_blocks():
            self._ids[key] = np.repeat(_i32(self._block_coords(dim)), self.block_lanes)
        if key not in self._ids:
            blin, _ = self._block_linear_and_local()
            gx, gy, _ = self.grid
            if dim == 0:
                v = blin % gx
            elif dim == 1:
                v = (blin // gx) % gy
            else:
                v = blin // (gx * gy)
            self._ids[key] = _i32(v)
        return self._ids[key]

    def global_id(self, dim: int) -> Any:
        key = f"g{dim}"
        if key not in self._ids and self._whole_blocks() and \
                not (dim == 0 and self.grid[1] * self.grid[2] == 1 and
                     self.block[1] * self.block[2] == 1):
            # block coordinate * block size + the local pattern, broadcast: one pass
            start = self._block_coords(dim) * self.block[dim]
            pattern = self._local_pattern(dim)
            if int(start.max()) + int(pattern.max()) < 2**31:  # int32 throughout when it fits
                start, pattern = start.astype(np.int32), pattern.astype(np.int32)
            ids = start[:, None] + pattern[None, :]
            self._ids[key] = _i32(ids.reshape(-1))
        if key not in self._ids:
            if dim == 0 and self.grid[1] * self.grid[2] == 1 and self.block[1] * self.block[2] == 1:
                v = _i32(self._linear())
            else:
                v = _i32(self.block_id(dim).astype(np.int64) * self.block[dim]
                         + self.local_id(dim))
            self._ids[key] = v
        return self._ids[key]

    def block_dim(self, dim: int) -> Any:
        return np.int32(self.block[dim])

    def grid_dim(self, dim: int) -> Any:
        return np.int32(self.grid[dim])

    def warp_id(self) -> Any:
        return self._warp_or_lane("w")

    def lane_id(self) -> Any:
        return self._warp_or_lane("n")

    def same_mask(self, outcome: bool) -> np.ndarray:
        """The cached read-only all-True / all-False mask of this vector's length, which
        `mask_and` / `mask_andnot` recognise by identity (see `ramp_compare`)."""
        return self.cache.uniform_masks(self.count)[outcome]

    def _warp_or_lane(self, key: str) -> Any:
        """Warp number (`w`) or lane in the warp (`n`) per lane, once per vector; for vectors
        of whole blocks one block's pattern repeated, shared by every vector of the shape."""
        value = self._ids.get(key)
        if value is None:
            ws = self.warp_size
            if self._whole_blocks():
                lanes = self.block_lanes
                value = self.cache.geometry(
                    ("warp_lane", key, lanes, ws, self.count),
                    lambda: np.tile((np.arange(lanes, dtype=np.int32) // ws if key == "w" else
                                     np.arange(lanes, dtype=np.int32) % ws),
                                    self.count // lanes))
            else:
                _, local = self._block_linear_and_local()
                value = _i32(local // ws if key == "w" else local % ws)
            self._ids[key] = value
        return value

    def vector_warps(self) -> np.ndarray:
        """Per vector position, a warp number unique within the vector."""
        w = self._ids.get("vector_warps")
        if w is None:
            lin = self._linear()
            per_block = -(-self.block_lanes // self.warp_size)
            w = (lin // self.block_lanes) * per_block + (lin % self.block_lanes) // self.warp_size
            self._ids["vector_warps"] = w
        return w

    def lanes_and_warps(self, mask: Any) -> tuple[np.ndarray, np.ndarray]:
        """Block-local linear ids of the active lanes and their warps. (Block-local ids, not
        vector positions: in warp mode each warp is its own lane vector, and a report names
        an access another warp made.)"""
        cached = getattr(self, "_race_lanes", None)
        if cached is None:
            lanes, ws, base = self.block_lanes, self.warp_size, self.local_base  # type: ignore

            def make() -> tuple[np.ndarray, np.ndarray]:
                local = (np.arange(self.count, dtype=np.int64) + base) % lanes
                return local, (local // ws).astype(np.int16)
            cached = self.cache.geometry(("race_lanes", self.count, lanes, base, ws), make)
            self._race_lanes = cached
        if mask is None or mask is True:
            return cached
        return (self.masked("race_pos", cached[0], mask),  # type: ignore[attr-defined]
                self.masked("race_warps", cached[1], mask))  # type: ignore[attr-defined]

    # the vector's box (planned accesses: views.py) --------------------------------------------

    @cached_property
    def memory(self) -> Memory:
        """The block state, a part (tiles.py), made at first use (see `__init__`); from then on
        `inflight` and `counters` are its."""
        memory = BlockMemory(self)
        self.inflight = memory.inflight
        self.__dict__["counters"] = memory.counters
        return memory

    @cached_property
    def counters(self) -> dict[str, int]:
        """The block's token and race-epoch counters (`memory`'s)."""
        return self.memory.counters

    @cached_property
    def races(self) -> Races:
        """The race checks, a part (races.py), made at first use."""
        return RaceChecker(self)

    @cached_property
    def planned(self) -> PlannedViews:
        """The planned accesses of this vector, a part (views.py)."""
        return PlannedViews(self)

    @cached_property
    def lanes(self) -> LaneAccess:
        """The lanes' loads, stores and atomics and their checks, a part (lane_memory.py)."""
        return LaneMemory(self)

    @cached_property
    def tiles(self) -> Tiles:
        """Fill, mma and the tile vector instructions on `memory`'s tiles, a part
        (tile_unit.py)."""
        return TileUnit(self)

    def plan_box(self) -> Box | None:
        """The vector's lanes as a box (see the module docstring), computed once per vector;
        None when they are not one (the general path runs)."""
        box = self._ids.get("box", False)
        if box is False:
            box = self._ids["box"] = self._make_box()
        return box

    def _make_box(self) -> Box | None:
        return vector_box(self.first_lane, self.count, self.grid, self.block)

    # block-local rows (the rows kind's geometry, strategies/rows.py) --------------------------

    def row_span(self, buf: Buffer, base: Any, mask: Mask) -> tuple[int, int, Any] | None:
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
        cache = self.cache  # the Executable's (caches.py)
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


    # errors ---------------------------------------------------------------------------------

    def describe_lane(self, pos: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        lin = self.first_lane + int(pos)
        b, l_ = divmod(lin, self.block_lanes)
        bx, by, _ = self.block
        lane = (l_ % bx, (l_ // bx) % by, l_ // (bx * by))
        return self.block_coords(b), lane

    def block_coords(self, b: int) -> tuple[int, int, int]:
        """(x, y, z) of linear block `b`."""
        gx, gy, _ = self.grid
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def block_of_element(self, buf: Buffer, idx: int) -> tuple[int, int, int]:
        """The block whose copy of L1 buffer `buf` element index `idx` lies in."""
        b = self.first_lane // self.block_lanes
        if buf.stride:
            b += int(idx) // buf.stride
        return self.block_coords(b)

    def fail(self, message: str, site_index: int, cls: type[KernelError] = KernelError) -> KernelError:
        site = self.sites[site_index]
        return cls(message, kernel=self.kernel, location=site.location,
                   called_from=site.called_from)

    def block_base(self, stride: int) -> np.ndarray:
        """Per vector position, `lane_block * stride`: where its block's copy of an L1 buffer
        with `stride` elements per block starts (batch mode); computed once per stride."""
        return self.cache.geometry(("base", stride, self.count, self.block_lanes, self.local_base),
                        lambda: self.lane_block * stride)

    def mask_facts(self, mask: np.ndarray) -> dict[str, Any]:
        """What has been worked out about `mask` (the current branch's mask object): the
        accesses of one branch all use it, so each fact is computed once per branch."""
        cache = self._mask_cache
        if cache is None or cache[0] is not mask:
            cache = (mask, {})
            self._mask_cache = cache
        return cache[1]

    def sparse(self, mask: np.ndarray) -> bool:
        """At most a quarter of the lanes active (counted once per mask object)?"""
        facts = self.mask_facts(mask)
        value = facts.get("sparse")
        if value is None:
            value = facts["sparse"] = 4 * int(np.count_nonzero(mask)) <= mask.size
        return value  # type: ignore[return-value]

    def masked(self, key: str, array: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """`array[mask]`, cached for the current mask object: the accesses of one branch all
        use the same mask, so the selection is computed once per branch."""
        facts = self.mask_facts(mask)
        value = facts.get(key)
        if value is None:
            value = facts[key] = array[mask]
        return value

    @property
    def lane_block(self) -> np.ndarray:
        """Per vector position, the index of its block within the vector (batch mode)."""
        return self.cache.geometry(("lane_block", self.count, self.block_lanes, self.local_base),
                        lambda: (self.ramp + np.int64(self.local_base)) // self.block_lanes)

    # synchronisation (lane_ops.py) ---------------------------------------------------------------

    def barrier_warp(self, mask: Mask, site: int) -> None:
        """`pto.barrier()`: the check that every lane of each warp reaches it (lane_ops.py);
        a lane window (windows.py) checks the lanes it cuts on its outer vector."""
        lane_ops.barrier_warp(self, mask, site)



def _i32(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v if v.dtype == np.int32 else v.astype(np.int32)
    return np.int32(v)
