"""The runtime half of the interpreter: what generated kernel code calls.

A kernel is executed on a *lane vector*: a set of lanes (the whole grid, one block, or one warp)
whose per-lane values are NumPy arrays of equal length, while uniform values stay NumPy scalars.
`LaneContext` describes one such vector (its ids, its memory, how to name a lane in an error) and
implements the memory instructions with bounds checks and per-lane masking.

Masks: `None` means every lane of the vector is active, `False` means none is, otherwise a bool
array. Keeping "all active" as `None` is what lets the common case run on contiguous slices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.buffers import Buffer, outside
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.geometry import geometry
from pypto.backend.interpreter.races import RaceChecker
from pypto.backend.interpreter.tiles import BlockMemory
from pypto.errors import DeadlockError, KernelError, MemoryAccessError

Mask = Any  # None | False | np.ndarray[bool]



@dataclass(frozen=True)
class Site:
    """Where an instruction came from, for error messages."""

    op: str
    location: str  # "file.py:12:8" (or "<unknown>")


_RAMP_CACHE: dict[int, np.ndarray] = {}


def ramp(n: int) -> np.ndarray:
    """`arange(n)` as int32, cached: lane indices are needed by every launch of that size."""
    r = _RAMP_CACHE.get(n)
    if r is None:
        if len(_RAMP_CACHE) > 64:
            _RAMP_CACHE.clear()
        r = np.arange(n, dtype=np.int32)
        r.flags.writeable = False
        _RAMP_CACHE[n] = r
    return r


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


def mask_and(m: Mask, c: Any) -> Mask:
    """Active lanes of the `then` side of a branch on `c`."""
    if isinstance(c, np.ndarray):
        full = _FULL.get(c.size)
        if full is not None:  # a comparison that held on no lane / every lane (ramp_compare)
            if c is full[0]:
                return False
            if c is full[1] and m is None:
                return None
        if m is None and not c.flags.writeable:  # a shared mask (local_cmp): decided once
            known = _SHARED_OUTCOMES.get(id(c))
            if known is None:
                if len(_SHARED_OUTCOMES) > 64:
                    _SHARED_OUTCOMES.clear()
                known = _SHARED_OUTCOMES[id(c)] = (c, _none_or_all(c, True))  # holds c: id unique
            return known[1]
        return _none_or_all(c if m is None else (m & c), m is None)
    return m if c else False


_SHARED_OUTCOMES: dict[int, tuple[np.ndarray, Mask]] = {}
"""`mask_and(None, c)` of shared read-only masks (LaneContext.local_cmp), by mask identity."""


def mask_andnot(m: Mask, c: Any) -> Mask:
    """Active lanes of the `else` side of a branch on `c`."""
    if isinstance(c, np.ndarray):
        full = _FULL.get(c.size)
        if full is not None:
            if c is full[1]:
                return False
            if c is full[0] and m is None:
                return None
        return _none_or_all(~c if m is None else (m & ~c), m is None)
    return False if c else m


_FULL: dict[int, tuple[np.ndarray, np.ndarray]] = {}
"""Per lane count, read-only all-False and all-True masks: what `ramp_compare` returns when the
comparison's outcome is the same on every lane, recognised by identity in `mask_and`."""


def uniform_masks(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(all False, all True) bool vectors of `n` lanes, cached and read-only."""
    full = _FULL.get(n)
    if full is None:
        if len(_FULL) > 16:
            _FULL.clear()
        no, every = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
        no.flags.writeable = every.flags.writeable = False
        full = _FULL[n] = (no, every)
    return full


def ramp_compare(ramp_: np.ndarray, op: str, u: Any, base: Any) -> np.ndarray:
    """`(ramp + base) OP u` for a uniform `u`, as `ramp OP (u - base)` (codegen emits this for
    an affine lane value compared with a uniform one: no array for the affine side is made).
    `u - base` is computed as the int64 subtraction it stands for (wrapping like NumPy's), then
    clamped to int32 (`bound32`). When the outcome is the same on every lane (the bounds check
    `i < n` of a launch that covers exactly n lanes) it returns a cached read-only all-True /
    all-False mask, which `mask_and` recognises without looking at the lanes."""
    bound = int(u) - int(base)
    if not -(2**63) <= bound < 2**63:
        bound = (bound + 2**63) % 2**64 - 2**63  # NumPy's int64 wrap-around
    n = ramp_.size
    if n and FAST_PATHS.on and ramp_ is _RAMP_CACHE.get(n):  # lanes 0..n-1 (`ramp(n)`)
        outcome = _same_on_every_lane(op, bound, n)
        if outcome is not None:
            return uniform_masks(n)[outcome]
    return _COMPARE[op](ramp_, bound32(bound))


def _same_on_every_lane(op: str, b: int, n: int) -> bool | None:
    """The outcome of `k OP b` if it is the same for every lane k in 0..n-1, else None."""
    last = n - 1
    if op == "<":
        return True if b > last else False if b <= 0 else None
    if op == "<=":
        return True if b >= last else False if b < 0 else None
    if op == ">":
        return True if b < 0 else False if b >= last else None
    if op == ">=":
        return True if b <= 0 else False if b > last else None
    if b < 0 or b > last:
        return op == "!="
    return None


_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}

_WINDOWS: dict[int, tuple[np.ndarray, tuple[int, int, bool]]] = {}
"""Lane windows of shared read-only masks (LaneContext.local_cmp), by mask identity."""


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
        if isinstance(v, np.ndarray) and v.dtype == dtype and FAST_PATHS.on:
            return v if v.flags.owndata or view_ok else v.copy()
    if isinstance(c, np.ndarray):
        out = np.where(c, a, b)
        return out if out.dtype == dtype else out.astype(dtype)
    return a if c else b


def cast(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return dtype.type(x)


class LaneContext(BlockMemory, RaceChecker):
    """One lane vector of one launch: ids, memory access, error reporting.

    `flat` maps vector position -> linear lane number in the launch (block-major, x fastest),
    which is what errors report. Subclasses / modes only differ in how ids are computed.
    """

    ins: Any = None  # the attached instrument (instrumented code variants only)

    def __init__(self, *, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 first_lane: int, count: int, sites: list[Site], target: Any, layout: Any,
                 check_uninitialized: bool = False, share_block_with: LaneContext | None = None,
                 race_check: bool = False, warp_index: int | None = None):
        self.kernel = kernel
        self.target = target
        self.layout = layout  # l1.L1Layout: where each alloc_local lives
        self.warp_size = target.warp_size
        self.check_uninitialized = check_uninitialized
        self.race_check = race_check
        self.warp_index = warp_index  # warp mode: the warp this vector is; else None
        self.warp_mode = warp_index is not None
        self._init_block_memory(share_block_with)
        self.grid = grid
        self.block = block
        self.block_lanes = block[0] * block[1] * block[2]
        self.first_lane = first_lane  # linear launch lane of vector position 0
        self.count = count
        self.sites = sites
        self.ramp = ramp(count)
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
        return FAST_PATHS.on and self.first_lane % self.block_lanes == 0 and \
            self.count % self.block_lanes == 0 and self.count > self.block_lanes

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
            self._ids[key] = geometry(
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
        _, local = self._block_linear_and_local()
        return _i32(local // self.warp_size)

    def lane_id(self) -> Any:
        _, local = self._block_linear_and_local()
        return _i32(local % self.warp_size)

    def vector_warps(self) -> np.ndarray:
        """Per vector position, a warp number unique within the vector."""
        w = self._ids.get("vector_warps")
        if w is None:
            lin = self._linear()
            per_block = -(-self.block_lanes // self.warp_size)
            w = (lin // self.block_lanes) * per_block + (lin % self.block_lanes) // self.warp_size
            self._ids["vector_warps"] = w
        return w

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

    def oob(self, buf: Buffer, offsets: Any, mask: Mask, site_index: int) -> MemoryAccessError:
        site = self.sites[site_index]
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
        block, lane = self.describe_lane(pos)
        space = "HBM" if buf.space == "global" else "L1"
        msg = (f"out-of-bounds {site.op} of {space} buffer '{buf.name}' at element {address} "
               f"(valid elements 0..{size - 1}, {size} x {buf.data.dtype}) by block {block}, "
               f"lane {lane}{self.neighbour(buf, address)}")
        return MemoryAccessError(msg, kernel=self.kernel, location=site.location, block=block,
                                 lane=lane, address=address, bounds=(0, size), buffer=buf.name)

    def fail(self, message: str, site_index: int, cls: type[KernelError] = KernelError) -> KernelError:
        site = self.sites[site_index]
        return cls(message, kernel=self.kernel, location=site.location)

    # memory ---------------------------------------------------------------------------------

    def _checked(self, buf: Buffer, off: Any, mask: Mask, site: int) -> Any:
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
            base = self.block_base(buf.stride)
            return active + (base if mask is None else self.masked(f"base{buf.stride}", base, mask))
        return active

    def block_base(self, stride: int) -> np.ndarray:
        """Per vector position, `lane_block * stride`: where its block's copy of an L1 buffer
        with `stride` elements per block starts (batch mode); computed once per stride."""
        return geometry(("base", stride, self.count, self.block_lanes, self.local_base),
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
        return geometry(("lane_block", self.count, self.block_lanes, self.local_base),
                        lambda: (self.ramp + np.int64(self.local_base)) // self.block_lanes)

    def load(self, buf: Buffer, off: Any, mask: Mask, site: int) -> Any:
        data = buf.data
        if mask is not None and isinstance(off, np.ndarray):
            if FAST_PATHS.on and self.sparse(mask):
                # few active lanes: select them, gather those, scatter back (zeros elsewhere;
                # an inactive lane's value is never used)
                idx = self._checked(buf, off, mask, site)
                if buf.watched() or self.inflight:
                    self.check_read(buf, idx, mask, site)
                out = np.zeros(self.count, dtype=data.dtype)
                out[mask] = data[idx]
                return out
            # Gather for every lane with inactive lanes pointed at element 0 (their values are
            # never used): cheaper than selecting the active lanes and scattering back.
            safe = np.where(mask, off, 0)
            if outside(safe, buf.count):
                raise self.oob(buf, off, mask, site)
            if buf.stride:  # batch mode, L1
                safe = safe + self.block_base(buf.stride)
            if buf.watched() or self.inflight:
                self.check_read(buf, safe[mask], mask, site)
            return data[safe]
        if isinstance(off, np.ndarray) or buf.stride:
            idx = self._checked(buf, off, mask, site)
            if buf.watched() or self.inflight:
                self.check_read(buf, idx, mask, site)
            if mask is None:
                return data[idx]
            out = np.zeros(self.count, dtype=data.dtype)
            out[mask] = data[idx]
            return out
        self._checked(buf, off, mask, site)
        if buf.watched() or self.inflight:
            self.check_read(buf, off, mask, site)
        value = data[off]
        if mask is None:
            return value  # a uniform address loads a uniform value
        return np.full(self.count, value, dtype=data.dtype)

    def load_ramp(self, buf: Buffer, base: Any, mask: Mask, site: int, view: bool = False) -> Any:
        """Load where lane k reads element `base + k`: a contiguous slice when all lanes run.

        `view=True` (decided by codegen: no write can happen while the value is alive) returns
        the slice itself instead of a copy.
        """
        if mask is None and not buf.stride and FAST_PATHS.on:
            base = int(base)
            size = buf.count
            if base < 0 or base + self.count > size:
                raise self.oob(buf, self.ramp + np.int64(base), None, site)
            if buf.watched() or self.inflight:
                self.check_read(buf, slice(base, base + self.count), None, site)
            chunk = buf.data[base:base + self.count]
            return chunk if view else chunk.copy()
        return self.load(buf, self.ramp + np.int64(base), mask, site)

    def _rows(self, buf: Buffer, base: Any, mask: Mask) -> tuple[int, int, Any] | None:
        """For an access where lane k of every block touches element `base + k` of its
        block's copy of L1 buffer `buf` (batch mode): (lo, hi, active) — the columns lo..hi of
        the block's copy that active lanes touch and, unless every lane of those columns is
        active, their (blocks, hi - lo) mask — or None when the general path must run (fast
        paths off, initialisation or in-flight tracking on, or an active lane out of bounds,
        which the general path reports)."""
        if not (FAST_PATHS.on and buf.stride and buf.init is None and not self.inflight and
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
        if type(self) is not LaneContext or not self._whole_blocks() or self.block[1] * \
                self.block[2] != 1:
            return _COMPARE[op](self.local_id(0), bound)
        lanes = self.block_lanes
        return geometry(("local_cmp", op, int(bound), lanes, self.count),
                        lambda: np.tile(_COMPARE[op](np.arange(lanes, dtype=np.int32), bound),
                                        self.count // lanes))

    def lane_window(self, mask: np.ndarray) -> tuple[int, int, bool]:
        """(first, last, dense): the block-local lanes first..last-1 hold every active lane of
        every block, and `dense` says whether all of them are active. Branches such as
        `if tid < s` keep a prefix of each block active; accesses then touch only those
        columns. Computed once per mask object."""
        shared = not mask.flags.writeable  # a shared mask (local_cmp): its window is too
        if shared and id(mask) in _WINDOWS:
            return _WINDOWS[id(mask)][1]
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
                if len(_WINDOWS) > 64:
                    _WINDOWS.clear()
                _WINDOWS[id(mask)] = (mask, window)  # holding the mask keeps its id unique
        return window  # type: ignore[return-value]

    def load_rows(self, buf: Buffer, base: Any, mask: Mask, site: int) -> Any:
        """Load where lane k of each block reads element `base + k` of its block's copy of an
        L1 buffer (batch mode: block-local ids plus a uniform offset, as `buf + tid + s`): a
        2-D slice with one row per block instead of a gather."""
        cols = self._rows(buf, base, mask)
        if cols is None:
            if not buf.stride and self.local_base == 0 and self.count == self.block_lanes:
                return self.load_ramp(buf, base, mask, site)  # one block: the ramp itself
            width = self.row_width
            lo = int(base) + self.local_base
            if FAST_PATHS.on and buf.space == "global" and not self.inflight and \
                    mask is not False and self.count % width == 0 and 0 <= lo and \
                    lo + width <= buf.count:
                # HBM: every block reads the same elements (as gamma[c0 + tid])
                return np.tile(buf.data[lo:lo + width], self.count // width)
            return self.load(buf, self.local_id(0) + np.int64(base), mask, site)
        lo, hi, active = cols
        base = int(base)
        if buf.shadow is not None:
            self.race_rows(buf, base, lo, hi, active, site, write=False)
        rows = buf.grid()[:, lo:hi]
        width = self.row_width
        if hi - lo == width:
            return rows.reshape(-1)  # a copy: the rows are not contiguous in the arena
        out = np.zeros((rows.shape[0], width), dtype=buf.data.dtype)
        j = lo - base - self.local_base  # lanes outside are inactive: their value is unused
        out[:, j:j + hi - lo] = rows
        return out.reshape(-1)

    def _block_rows(self, buf: Buffer, row: Any, base: Any, mask: Mask,
                    write: bool) -> tuple[np.ndarray, bool] | None:
        """For an access where lane k of each block touches element `row_b + base + k` of an
        HBM buffer (`row` is the same for every lane of a block): a (blocks, lanes) view of the
        elements (strided when the rows are evenly spaced, else an index array), or None when
        the general path must run (fast paths off, copies in flight, a row out of bounds — the
        general path reports it — or, for a store, rows that overlap). The flag says which."""
        width = self.row_width
        if not (FAST_PATHS.on and not buf.stride and not self.inflight and mask is not False
                and buf.space == "global" and self.count % width == 0):
            return None
        blocks = self.count // width
        first = int(base) + self.local_base
        if isinstance(row, np.ndarray):
            starts = row[::width].astype(np.int64) + first
        else:
            starts = np.full(blocks, int(row) + first, dtype=np.int64)
        lo, hi = int(starts.min()), int(starts.max()) + width
        if lo < 0 or hi > buf.count:
            return None
        step = int(starts[1] - starts[0]) if blocks > 1 else width
        data = buf.data
        if blocks == 1 or (step >= 0 and np.array_equal(np.diff(starts), np.full(blocks - 1, step))):
            if write and step < width and blocks > 1:
                return None  # overlapping rows: the general path's lane order decides
            s0 = int(starts[0])
            if step >= width and s0 + blocks * step <= data.size:  # plain slicing: cheaper
                return data[s0:s0 + blocks * step].reshape(blocks, step)[:, :width], False
            isz = data.itemsize
            return as_strided(data[s0:], shape=(blocks, width),
                              strides=(step * isz, isz), writeable=write), False
        if write:
            return None
        return starts[:, None] + np.arange(width, dtype=np.int64), True

    def load_block_rows(self, buf: Buffer, row: Any, base: Any, mask: Mask, site: int) -> Any:
        """Load where lane k of each block reads element `row_b + base + k` (batch mode; `row`
        is a pointer the same across each block, as `x + block_id * ncols`): each block's
        lanes read one contiguous row, so the access is a 2-D slice when the rows are evenly
        spaced, instead of a per-lane gather."""
        rows = self._block_rows(buf, row, base, mask, write=False)
        if rows is None:
            return self.load(buf, row + (self.local_id(0) + np.int64(base)), mask, site)
        view, is_index = rows
        if is_index:
            return buf.data[view].reshape(-1)  # uneven rows: one gather of whole rows
        return view.reshape(-1)  # a copy: rows of a strided view

    def store_block_rows(self, buf: Buffer, row: Any, base: Any, value: Any, mask: Mask,
                         site: int) -> None:
        """Store where lane k of each block writes element `row_b + base + k` (see
        `load_block_rows`); rows that do not overlap, else the general path."""
        rows = self._block_rows(buf, row, base, mask, write=True)
        view = None if rows is None else rows[0]
        if view is None:
            self.store(buf, row + (self.local_id(0) + np.int64(base)), value, mask, site)
            return
        if isinstance(value, np.ndarray):
            value = value.reshape(view.shape)
        if mask is None:
            view[...] = value
        else:
            np.copyto(view, value, casting="unsafe", where=mask.reshape(view.shape))

    def _plane(self, buf: Buffer, pitch: Any, offset: Any, mask: Mask,
               write: bool) -> tuple[int, int, int, tuple[int, int, int, int]] | None:
        """For an access where each lane touches element `gy * pitch + gx + offset` of an HBM
        buffer (grid mode, 2-D launch; gx, gy its global ids) and the pitch is the grid's
        width, the lanes of this vector cover rows Y0.. of the (Y, X) plane in row-major
        order: (start, lo, hi, shape) — plane position q is element start + q, positions lo..hi
        are in bounds, and `shape` = (block rows, block height, blocks per row, block width)
        reorders lanes (block after block) into plane order. None: the general path runs
        (fast paths off, copies in flight, another pitch or launch shape, an int32 product
        that could wrap, or an active lane out of bounds — which it reports)."""
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        lanes = self.block_lanes
        if not (FAST_PATHS.on and not buf.stride and buf.space == "global" and
                not self.inflight and mask is not False and gz == 1 and bz == 1):
            return None
        if self.first_lane % (lanes * gx) or self.count % (lanes * gx):
            return None  # not whole rows of blocks
        width = gx * bx
        if int(pitch) != width:
            return None
        y0 = self.first_lane // (lanes * gx) * by
        rows = self.count // width
        if (y0 + rows) * width > 2**31 - 1:
            return None  # gy * pitch + gx would wrap in int32
        start = y0 * width + int(offset)
        total = rows * width
        lo, hi = max(0, -start), min(total, buf.count - start)
        shape = (rows // by, by, gx, bx)
        if lo == 0 and hi == total:
            return start, lo, hi, shape
        if mask is None or lo >= hi:
            return None
        plane = mask.reshape(shape[0], gx, by, bx).transpose(0, 2, 1, 3).reshape(-1)
        if plane[:lo].any() or plane[hi:].any():
            return None
        return start, lo, hi, shape

    def _plane_offsets(self, pitch: Any, offset: Any) -> np.ndarray:
        """The general path's element offsets: `gy * pitch + gx` in int32, then + offset."""
        return (self.global_id(1) * pitch + self.global_id(0)) + np.int64(offset)

    def load_plane(self, buf: Buffer, pitch: Any, offset: Any, mask: Mask, site: int) -> Any:
        """Load at `gy * pitch + gx + offset` (see `_plane`): one contiguous slice of the
        plane, reordered into lane order, instead of a gather."""
        plane = self._plane(buf, pitch, offset, mask, write=False)
        if plane is None:
            return self.load(buf, self._plane_offsets(pitch, offset), mask, site)
        start, lo, hi, shape = plane
        data = buf.data
        if lo == 0 and hi == shape[0] * shape[1] * shape[2] * shape[3]:
            values = data[start:start + hi]
        else:  # lanes outside the buffer are inactive: their value is unused
            values = np.zeros(shape[0] * shape[1] * shape[2] * shape[3], dtype=data.dtype)
            values[lo:hi] = data[start + lo:start + hi]
        return values.reshape(shape).transpose(0, 2, 1, 3).reshape(-1)

    def store_plane(self, buf: Buffer, pitch: Any, offset: Any, value: Any, mask: Mask,
                    site: int) -> None:
        """Store at `gy * pitch + gx + offset` (see `load_plane`)."""
        plane = self._plane(buf, pitch, offset, mask, write=True)
        if plane is None:
            self.store(buf, self._plane_offsets(pitch, offset), value, mask, site)
            return
        start, lo, hi, shape = plane
        blocks_shape = (shape[0], shape[2], shape[1], shape[3])  # lane order
        dst = buf.data[start + lo:start + hi]
        if isinstance(value, np.ndarray):
            value = value.reshape(blocks_shape).transpose(0, 2, 1, 3).reshape(-1)[lo:hi]
        if mask is None:
            dst[...] = value
        else:
            where = mask.reshape(blocks_shape).transpose(0, 2, 1, 3).reshape(-1)[lo:hi]
            np.copyto(dst, value, casting="unsafe", where=where)

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
                self.race_rows(buf, int(at), cols[0], cols[1], None, s, write=write)
        ufunc(a.grid()[:, ca[0]:ca[1]], b.grid()[:, cb[0]:cb[1]],
              out=dst.grid()[:, cd[0]:cd[1]])

    def store_rows(self, buf: Buffer, base: Any, value: Any, mask: Mask, site: int) -> None:
        """Store where lane k of each block writes element `base + k` of its block's copy (see
        `load_rows`): one 2-D slice assignment, masked lanes left untouched."""
        cols = self._rows(buf, base, mask)
        if cols is None:
            if not buf.stride and self.local_base == 0 and self.count == self.block_lanes:
                self.store_ramp(buf, base, value, mask, site)
                return
            self.store(buf, self.local_id(0) + np.int64(base), value, mask, site)
            return
        lo, hi, active = cols
        base = int(base)
        if buf.shadow is not None:
            self.race_rows(buf, base, lo, hi, active, site, write=True)
        rows = buf.grid()[:, lo:hi]
        if isinstance(value, np.ndarray):
            j = lo - base - self.local_base
            value = value.reshape(-1, self.row_width)[:, j:j + hi - lo]
        if active is None:
            rows[...] = value
        else:
            np.copyto(rows, value, casting="unsafe", where=active)

    def store(self, buf: Buffer, off: Any, value: Any, mask: Mask, site: int) -> None:
        data = buf.data
        idx = self._checked(buf, off, mask, site)
        if buf.watched() or self.inflight:
            self.check_write(buf, idx, mask, site)
        if mask is not None and isinstance(value, np.ndarray):
            value = value[mask]
        if isinstance(idx, np.ndarray) or not isinstance(value, np.ndarray):
            data[idx] = value
        else:
            data[idx] = value[-1]  # every lane stores to one address: the last lane wins

    def store_ramp(self, buf: Buffer, base: Any, value: Any, mask: Mask, site: int) -> None:
        if mask is None and not buf.stride and FAST_PATHS.on:
            base = int(base)
            if base < 0 or base + self.count > buf.count:
                raise self.oob(buf, self.ramp + np.int64(base), None, site)
            if buf.watched() or self.inflight:
                self.check_write(buf, slice(base, base + self.count), None, site)
            buf.data[base:base + self.count] = value
            return
        self.store(buf, self.ramp + np.int64(base), value, mask, site)

    def store_ramp_op(self, buf: Buffer, base: Any, ufunc: Any, a: Any, b: Any, mask: Mask,
                      site: int) -> None:
        """`store_ramp(buf, base, ufunc(a, b), ...)` with the result computed straight into the
        stored slice when every lane is active and the result already has the buffer's dtype
        (one pass over memory instead of a temporary and a copy; ufuncs handle operands that
        overlap the output as if they had been copied first)."""
        if mask is None and not buf.stride and FAST_PATHS.on:
            data = buf.data
            if np.result_type(a, b) == data.dtype:
                base = int(base)
                if base < 0 or base + self.count > buf.count:
                    raise self.oob(buf, self.ramp + np.int64(base), None, site)
                if buf.watched() or self.inflight:
                    self.check_write(buf, slice(base, base + self.count), None, site)
                ufunc(a, b, out=data[base:base + self.count])
                return
        self.store_ramp(buf, base, ufunc(a, b), mask, site)

    # arithmetic with failure modes ---------------------------------------------------------------

    def int_div(self, fn: Any, a: Any, b: Any, mask: Mask, site: int) -> Any:
        """Integer `//` or remainder; dividing by zero on an active lane is a KernelError."""
        if isinstance(b, np.ndarray):
            zero = b == 0
            if zero.any():
                active_zero = zero if mask is None else (zero & mask)
                if active_zero.any():
                    block, lane = self.describe_lane(int(np.argmax(active_zero)))
                    raise self.fail(f"integer division by zero in block {block}, lane {lane}",
                                    site)
                b = np.where(zero, b.dtype.type(1), b)  # inactive lanes: any value will do
        elif b == 0:
            if mask is False:
                return a
            raise self.fail("integer division by zero", site)
        return fn(a, b)

    def int_pow(self, a: Any, b: Any, mask: Mask, site: int) -> Any:
        if np.any(np.asarray(b) < 0) and (mask is None or np.any(np.asarray(b)[mask] < 0)):
            raise self.fail("integer '**' with a negative exponent; cast to a float type first",
                            site)
        return np.power(a, np.maximum(b, 0).astype(np.asarray(a).dtype))

    def same_buffer(self, bt: Buffer | None, bf: Buffer | None, cond: Any, mask: Mask = None,
                    site: int | None = None) -> Buffer | None:
        """The buffer of a pointer chosen per lane (a branch or a select): the lanes that are
        active must all pick the same buffer; a per-lane mix of two buffers is an error."""
        if bt is None or bt is bf:
            return bf if bt is None else bt
        if bf is None:
            return bt
        if isinstance(cond, np.ndarray):
            active = cond if not isinstance(mask, np.ndarray) else cond[mask]
            if active.all():
                return bt
            if not active.any():
                return bf
        else:
            return bt if cond else bf
        message = (f"a pointer refers to '{bt.name}' on some lanes and '{bf.name}' on others; "
                   f"a pointer chosen per lane must point into one buffer: choose the loaded "
                   f"values instead (pto.select(c, pto.load(a + i), pto.load(b + i)))")
        if site is None:
            raise KernelError(message, kernel=self.kernel)
        raise self.fail(message, site)

    def tile_entry(self, mask: Mask, site: int) -> None:
        """Warp mode: every lane of this warp must reach a block-level instruction."""
        if mask is not None:
            raise self.fail(f"pto.{self.sites[site].op} is a block-level instruction but not every "
                            f"lane of the warp reached it", site, DeadlockError)

    # synchronisation --------------------------------------------------------------------------

    def barrier_block(self, mask: Mask, site: int) -> None:
        """In lockstep execution every active lane is at the barrier; inactive ones never come."""
        if mask is not None:
            per_block = np.asarray(mask).reshape(-1, min(self.block_lanes, self.count))
            if (per_block.any(axis=1) != per_block.all(axis=1)).any() or self.count <= \
                    self.block_lanes:
                self._divergent_barrier(mask, site, "pto.barrier_block()", "block")
        if not self.warp_mode:  # in warp mode the scheduler advances the epoch once per block
            self.counters["epoch"] += 1

    def barrier_warp(self, mask: Mask, site: int) -> None:
        if mask is None:
            return
        if mask is False:
            return
        lanes = np.asarray(mask)
        ws = self.warp_size
        if self.block_lanes % ws == 0 and self.local_base % ws == 0 and self.count % ws == 0 \
                and self.row_width % ws == 0:
            rows = lanes.reshape(-1, ws)  # whole warps, one per row
            split = rows.any(axis=1) != rows.all(axis=1)
            if split.any():
                row = int(np.argmax(split))
                self._divergent_barrier(mask, site, "pto.barrier()", "warp",
                                        row * ws + int(np.argmin(rows[row])))
        else:  # partial warps: count active lanes per warp
            warps = self.vector_warps()
            warps = warps - warps[0]
            active = np.bincount(warps, weights=lanes)
            size = np.bincount(warps)
            split = (active > 0) & (active < size)
            if split.any():
                missing = np.flatnonzero((warps == int(np.argmax(split))) & ~lanes)[0]
                self._divergent_barrier(mask, site, "pto.barrier()", "warp", int(missing))

    def _divergent_barrier(self, mask: Mask, site: int, what: str, scope: str,
                           missing: int | None = None) -> None:
        """Report a barrier some lanes of its scope miss (`missing`: one of them, by default
        the first inactive lane of the vector)."""
        lanes = np.asarray(mask)
        if missing is None:
            missing = int(np.argmin(lanes)) if lanes.ndim else 0
        block, lane = self.describe_lane(missing)
        raise self.fail(
            f"deadlock: {what} is not reached by every lane of the {scope} (lane {lane} of block "
            f"{block} took another path); a barrier must sit in control flow that is uniform "
            f"across the {scope}", site, DeadlockError)


def _i32(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v if v.dtype == np.int32 else v.astype(np.int32)
    return np.int32(v)


WINDOW_MIN_SAVING = 2
"""Run a branch on a window of lanes only when it holds at most 1/WINDOW_MIN_SAVING of them."""


def window(ctx: LaneContext, mask: Mask) -> tuple[WindowContext, Mask] | None:
    """For a branch of a batch-mode kernel whose active lanes all lie in block-local lanes
    first..last-1 of every block (as under `if tid < s`): a lane vector of just those lanes
    and the branch's mask on it; None to run the branch on the whole vector (fast paths off,
    a wide window, or a vector that is not whole 1-D blocks)."""
    lanes = ctx.block_lanes
    if not (FAST_PATHS.on and isinstance(mask, np.ndarray) and type(ctx) is LaneContext and
            ctx.local_base == 0 and ctx.count % lanes == 0 and ctx.block[1] * ctx.block[2] == 1):
        return None
    first, last, dense = ctx.lane_window(mask)
    if (last - first) * WINDOW_MIN_SAVING > lanes or last == first:
        return None
    sub = WindowContext(ctx, first, last)
    return sub, (None if dense else
                 np.ascontiguousarray(mask.reshape(-1, lanes)[:, first:last]).reshape(-1))


class WindowContext(LaneContext):
    """Block-local lanes first..last-1 of every block of a batch-mode lane vector, as a lane
    vector of their own: a branch that only these lanes take runs on (last - first) lanes per
    block instead of all of them. It shares the parent's memory, L1 and race state; ids,
    lane naming and L1 addressing follow the window. Values flow in narrowed (`narrow`) and
    out widened (`widen`); generated code uses it only for branches without block-level
    instructions, atomics or output (see codegen's windowed branches)."""

    def __init__(self, parent: LaneContext, first: int, last: int):  # noqa: D107
        self.__dict__.update(parent.__dict__)  # shared memory, L1, counters, settings
        self.parent = parent
        self.first = first
        self.width = last - first
        self.blocks = parent.count // parent.block_lanes
        self.count = self.blocks * self.width
        self.ramp = ramp(self.count)
        self._ids = {}
        self._mask_cache = None
        self.__dict__.pop("_race_lanes", None)

    @property
    def arena(self) -> Any:
        return self.parent.arena

    @property
    def local_base(self) -> int:
        return self.first  # block-local id of position 0 (block 0, first lane of the window)

    @property
    def in_one_block(self) -> bool:
        return self.blocks == 1

    def _pos_local(self) -> tuple[np.ndarray, np.ndarray]:
        """(block index within the vector, block-local lane id) per position."""
        return geometry(("window", self.blocks, self.block_lanes, self.first, self.width),
                        lambda: (np.repeat(np.arange(self.blocks, dtype=np.int64), self.width),
                                 np.tile(np.arange(self.first, self.first + self.width,
                                                   dtype=np.int64), self.blocks)))

    def _linear(self) -> np.ndarray:
        b, t = self._pos_local()
        return b * self.block_lanes + t + np.int64(self.parent.first_lane)

    def _compute_block_local(self) -> tuple[Any, Any]:
        lin = self._linear()
        return lin // self.block_lanes, lin % self.block_lanes

    @property
    def row_width(self) -> int:
        return self.width

    def _whole_blocks(self) -> bool:
        return False

    def local_id(self, dim: int) -> Any:
        if dim == 0:
            key = "l0"
            if key not in self._ids:
                self._ids[key] = _i32(self._pos_local()[1])
            return self._ids[key]
        return super().local_id(dim)

    @property
    def lane_block(self) -> np.ndarray:
        return self._pos_local()[0]

    def block_base(self, stride: int) -> np.ndarray:
        return geometry(("wbase", stride, self.blocks, self.block_lanes, self.first, self.width),
                        lambda: self.lane_block * stride)

    def _lanes_and_warps(self, mask: Mask) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_race_lanes", None) is None:
            local = self._pos_local()[1]
            self._race_lanes = (local, (local // self.warp_size).astype(np.int16))
        return super()._lanes_and_warps(mask)

    def describe_lane(self, pos: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        b, t = divmod(int(pos), self.width)
        return self.parent.describe_lane(b * self.block_lanes + self.first + t)

    def lane_window(self, mask: np.ndarray) -> tuple[int, int, bool]:
        return 0, self.width, False  # never narrowed twice

    def _rows(self, buf: Buffer, base: Any, mask: Mask) -> tuple[int, int, Any] | None:
        """Row accesses in the window: lane j of a block touches `base + first + j`."""
        if not (FAST_PATHS.on and buf.stride and buf.init is None and not self.inflight and
                mask is not False):
            return None
        lo = int(base) + self.first
        hi = lo + self.width
        if lo < 0 or hi > buf.count:
            return None
        return lo, hi, None if mask is None else mask.reshape(-1, self.width)

    def narrow(self, value: Any) -> Any:
        """A value of the parent vector, on the window's lanes."""
        if not isinstance(value, np.ndarray):
            return value
        parent = self.parent.block_lanes
        return np.ascontiguousarray(
            value.reshape(-1, parent)[:, self.first:self.first + self.width]).reshape(-1)

    def widen(self, value: Any) -> Any:
        """A value of the window, on the parent's lanes (lanes outside the window get 0: they
        are inactive in the branch, so their value is never used)."""
        if not isinstance(value, np.ndarray):
            return value
        out = np.zeros((self.blocks, self.block_lanes), dtype=value.dtype)
        out[:, self.first:self.first + self.width] = value.reshape(-1, self.width)
        return out.reshape(-1)
