"""L1 accesses and where they land: which lanes of a block touch which elements.

The geometry half of the barrier analysis (`pypto.analysis.barriers`). An access is a *lane
access* (one element per lane: load, store, fma, atomic_add) or a *tile region* (an L1 operand of
a block-level instruction). Under one set of loop values (`Env`) its *footprint* is the buffers
it may point into, its offset (symbolic uniform terms plus a concrete part per lane) and, for
lane accesses, the lanes that may execute it. Two footprints *conflict* when lanes of different
warps may touch one element (or an access touches the region of an in-flight copy).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation

from pypto.analysis.alias import sets_may_alias
from pypto.analysis.lane_values import Affine, Env, LaneModel, LaneSpace
from pypto.dialects.traits import is_block_collective, memory_accesses, tile_footprint

class Kind(enum.Enum):
    READ = "read"
    WRITE = "written"
    ATOMIC = "atomically updated"

    @property
    def writes(self) -> bool:
        return self is not Kind.READ

    @property
    def reads(self) -> bool:
        return self is not Kind.WRITE

@dataclass(frozen=True)


class LaneAccess:
    """One element per lane: pto.load / store / fma / atomic_add."""

    op: Operation
    ptr: SSAValue
    kind: Kind
    space: str

def _kind(kinds: set[str]) -> Kind:
    """A read and a write of one address by one lane instruction is an atomic update
    (`pto.atomic_add`: the only lane instruction declaring both)."""
    if kinds == {"read"}:
        return Kind.READ
    return Kind.WRITE if kinds == {"write"} else Kind.ATOMIC


def _by_operand(op: Operation) -> dict[int, tuple[str, set[str]]]:
    """The op's declared accesses grouped by address operand: space and kinds, in order."""
    grouped: dict[int, tuple[str, set[str]]] = {}
    for access in memory_accesses(op):
        grouped.setdefault(access.operand, (access.space, set()))[1].add(access.kind)
    return grouped


def lane_access(op: Operation) -> LaneAccess | None:
    """The access of a lane instruction (one element per lane), from its declared accesses."""
    if is_block_collective(op):
        return None
    grouped = _by_operand(op)
    if len(grouped) != 1:
        return None
    ((operand, (space, kinds)),) = grouped.items()
    return LaneAccess(op, op.operands[operand], _kind(kinds), space)

@dataclass(frozen=True)


class TileRegion:
    """The L1 region a tile instruction reads or writes through its address operand number
    `operand` (`role` names it in messages)."""

    op: Operation
    ptr: SSAValue
    kind: Kind
    role: str
    operand: int

_ROLES = {"dst": "destination", "src": "source", "a": "operand A", "b": "operand B",
          "c": "accumulator C"}
"""How messages name a tile instruction's address operands (by their IRDL operand name)."""


def tile_regions(op: Operation) -> list[TileRegion]:
    """The L1 regions a block collective reads or writes, from its declared accesses (an
    operand both read and written, like mma's accumulator, counts as written)."""
    if not is_block_collective(op) or not isinstance(op, IRDLOperation):
        return []
    names = [name for name, _ in op.get_irdl_definition().operands]
    return [TileRegion(op, op.operands[operand], Kind.WRITE if "write" in kinds else Kind.READ,
                       _ROLES.get(names[operand], names[operand]), operand)
            for operand, (space, kinds) in _by_operand(op).items() if space == "local"]

def _copy_pattern(rows: int, row_elems: int, stride: int) -> np.ndarray | None:
    if rows <= 0 or row_elems <= 0 or rows * row_elems > 1 << 22:
        return None
    starts = np.arange(rows, dtype=np.int64) * stride
    elements = (starts[:, None] + np.arange(row_elems, dtype=np.int64)[None, :]).ravel()
    if stride >= row_elems:  # rows disjoint and in order: already sorted and unique
        return elements
    return np.unique(elements)

def region_elements(region: TileRegion, model: LaneModel, env: Env) -> np.ndarray | None:
    """The element offsets (relative to `region.ptr`) the region covers; None if unknown.
    The geometry is the op's declared tile footprint, its sizes evaluated under `env`."""
    tiles = tile_footprint(region.op, lambda v: model.scalar(v, env))
    if tiles is None:
        return None
    tile = tiles.get(region.operand)
    if tile is None:
        return None
    return _copy_pattern(tile.rows, tile.row_len, tile.stride)

# --------------------------------------------------------------------------------------------
# Footprints and conflicts
# --------------------------------------------------------------------------------------------

@dataclass


class Footprint:
    """Where an access lands under one Env: buffers, offset, and (for lanes) active lanes."""

    roots: frozenset[SSAValue] | None
    offset: Affine | None
    mask: np.ndarray | None = None  # lane accesses: lanes that may execute it
    elements: np.ndarray | None = None  # tile regions: covered offsets from `offset`
    why: str | None = None  # why the offset is unknown
    summary: tuple[np.ndarray, ...] | None = field(default=None, compare=False, repr=False)
    """`_summary`'s per-address warp ranges, computed once (a footprint is paired with every
    other open access)."""

@dataclass


class Conflict:
    """Evidence that two accesses may touch one element (from lanes of different warps)."""

    exact: bool
    lanes_first: np.ndarray | None  # None: a block-level (tile) access
    lanes_second: np.ndarray | None
    addresses: np.ndarray | None = None  # concrete parts of the conflicting offsets
    terms: frozenset[tuple[object, int]] = frozenset()
    reason: str | None = None
    env_first: Env = field(default_factory=dict)
    env_second: Env = field(default_factory=dict)

def may_alias(a: frozenset[SSAValue] | None, b: frozenset[SSAValue] | None) -> bool:
    """Two root sets may overlap: distinct `alloc_local`s never do; parameters may be anything
    unless marked `pto.noalias` (the one alias query: `pypto.analysis.alias`)."""
    return sets_may_alias(a, b)

def _exact_pair(fx: Footprint, fy: Footprint) -> bool:
    return (fx.roots is not None and fx.roots == fy.roots and len(fx.roots) == 1
            and fx.offset is not None and fy.offset is not None
            and fx.offset.terms == fy.offset.terms)

def _unknown_reason(fx: Footprint, fy: Footprint, first: str, second: str) -> str:
    if fx.roots is None or fy.roots is None:
        return "the buffer an address points into is not known"
    if fx.roots != fy.roots or len(fx.roots) != 1:
        return "the addresses may point into different buffers"
    if fx.offset is None:
        return f"the index of the {first} {fx.why or 'cannot be evaluated'}"
    if fy.offset is None:
        return f"the index of the {second} {fy.why or 'cannot be evaluated'}"
    return "the indices differ by a value that is not known at compile time"

def _full(lanes: np.ndarray, size: int) -> np.ndarray:
    return np.broadcast_to(lanes, (size,))

def _warp_stats(inv: np.ndarray, warps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(k, -1, dtype=np.int64)
    np.minimum.at(lo, inv, warps)
    np.maximum.at(hi, inv, warps)
    return lo, hi

def _summary(space: LaneSpace, fp: Footprint) -> tuple[np.ndarray, ...]:
    """The distinct concrete offsets of `fp`'s active lanes, sorted, with the lowest and the
    highest warp touching each."""
    if fp.summary is None:
        assert fp.offset is not None and fp.mask is not None
        addresses = _full(fp.offset.lanes, space.size)[fp.mask]
        uniq, inv = np.unique(addresses, return_inverse=True)
        lo, hi = _warp_stats(inv, space.warp[fp.mask], len(uniq))
        fp.summary = (uniq, lo, hi)
    return fp.summary


def _may_share(space: LaneSpace, fx: Footprint, fy: Footprint) -> bool:
    """Is there an element both footprints (an exact pair: the same symbolic terms) touch
    from more than one warp in all? Per footprint summaries make this one merge of two sorted
    arrays, where the full check below sorts both footprints' lanes again for every pair:
    the barrier walk pairs each access with every open one (quadratic between two block
    barriers, e.g. a kernel of warp reductions)."""
    ux, xlo, xhi = _summary(space, fx)
    uy, ylo, yhi = _summary(space, fy)
    if not ux.size or not uy.size or ux[-1] < uy[0] or uy[-1] < ux[0]:
        return False
    _, ix, iy = np.intersect1d(ux, uy, assume_unique=True, return_indices=True)
    if not ix.size:
        return False
    lo = np.minimum(xlo[ix], ylo[iy])
    hi = np.maximum(xhi[ix], yhi[iy])
    return bool((lo != hi).any())


def lanes_conflict(space: LaneSpace, fx: Footprint, fy: Footprint, *,
                   same_instruction: bool = False, what: tuple[str, str] = ("first", "second")
                   ) -> Conflict | None:
    """Can lanes of different warps touch one element, one lane through each footprint?"""
    assert fx.mask is not None and fy.mask is not None
    lanes, warp = space.linear, space.warp
    mx, my = fx.mask, fy.mask
    if not mx.any() or not my.any() or not may_alias(fx.roots, fy.roots):
        return None
    if not same_instruction and _exact_pair(fx, fy) and not _may_share(space, fx, fy):
        return None  # no element that lanes of two warps touch (the exact path agrees)
    wx, wy = np.unique(warp[mx]), np.unique(warp[my])
    if len(np.union1d(wx, wy)) <= 1:
        return None  # one warp only: lockstep lanes never race
    if not _exact_pair(fx, fy):
        # Conservative: every active lane pairs with every active lane of another warp.
        cx = mx & ~((len(wy) == 1) & (warp == wy[0]))
        cy = my & ~((len(wx) == 1) & (warp == wx[0]))
        return Conflict(False, lanes[cx], lanes[cy],
                        reason=_unknown_reason(fx, fy, *what))
    assert fx.offset is not None and fy.offset is not None
    ax = _full(fx.offset.lanes, space.size)[mx]
    ay = _full(fy.offset.lanes, space.size)[my]
    xw, yw = warp[mx], warp[my]
    if same_instruction:
        uniq, inv = np.unique(ax, return_inverse=True)
        lo, hi = _warp_stats(inv, xw, len(uniq))
        hit = (lo != hi)[inv]
        if not hit.any():
            return None
        return Conflict(True, lanes[mx][hit], lanes[mx][hit], ax[hit], fx.offset.terms)
    if ax.max() < ay.min() or ay.max() < ax.min():
        return None
    uniq, inv = np.unique(np.concatenate([ax, ay]), return_inverse=True)
    ix, iy = inv[:len(ax)], inv[len(ax):]
    xlo, xhi = _warp_stats(ix, xw, len(uniq))
    ylo, yhi = _warp_stats(iy, yw, len(uniq))
    hit_x = (yhi[ix] >= 0) & ((ylo[ix] != yhi[ix]) | (ylo[ix] != xw))
    if not hit_x.any():
        return None
    hit_y = (xhi[iy] >= 0) & ((xlo[iy] != xhi[iy]) | (xlo[iy] != yw))
    return Conflict(True, lanes[mx][hit_x], lanes[my][hit_y],
                    np.union1d(ax[hit_x], ay[hit_y]), fx.offset.terms)

PAIRWISE_LIMIT = 1 << 22
"""Most lane pairs `lanes_meet_at_multiple` compares (beyond it: conservatively True)."""


def lanes_meet_at_multiple(space: LaneSpace, fx: Footprint, fy: Footprint, m: int) -> bool:
    """Can a lane x of one warp and a lane y of another have concrete offsets differing by a
    non-zero multiple of `m` (two different iterations of a loop whose counter moves the
    address by `m`)? Conservative (True) when too many lane pairs to compare."""
    assert fx.offset is not None and fy.offset is not None
    assert fx.mask is not None and fy.mask is not None
    ax = _full(fx.offset.lanes, space.size)[fx.mask]
    ay = _full(fy.offset.lanes, space.size)[fy.mask]
    if ax.size * ay.size > PAIRWISE_LIMIT:
        return True
    xw, yw = space.warp[fx.mask], space.warp[fy.mask]
    d = ax[:, None] - ay[None, :]
    hit = (d != 0) & (d % m == 0) & (xw[:, None] != yw[None, :])
    return bool(hit.any())


def _sorted_common(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`np.intersect1d(x, y)` of two sorted arrays of unique offsets (`region_elements`'s):
    nothing when their spans are apart (two slots of one buffer), else each element of the
    shorter looked up in the longer by binary search, without the hashing and sorting of a
    general intersection (the barrier check pairs every in-flight copy with every access)."""
    if x.size == 0 or y.size == 0 or x[-1] < y[0] or y[-1] < x[0]:
        return x[:0]
    if x.size > y.size:
        x, y = y, x
    at = np.minimum(np.searchsorted(y, x), y.size - 1)
    return x[y[at] == x]


def region_conflict(space: LaneSpace, fr: Footprint, fo: Footprint,
                    what: tuple[str, str]) -> Conflict | None:
    """Does the region of an in-flight copy (`fr`) overlap an access (`fo`: lanes or region)?"""
    if not may_alias(fr.roots, fo.roots):
        return None
    lane_side = fo.mask is not None
    if lane_side and not fo.mask.any():  # type: ignore[union-attr]
        return None
    exact = _exact_pair(fr, fo) and fr.elements is not None \
        and (lane_side or fo.elements is not None)
    lanes = space.linear
    if not exact:
        return Conflict(False, None, lanes[fo.mask] if lane_side else None,
                        reason=_unknown_reason(fr, fo, *what))
    assert fr.offset is not None and fo.offset is not None and fr.elements is not None
    covered = fr.elements + int(fr.offset.lanes)
    if lane_side:
        addrs = _full(fo.offset.lanes, space.size)[fo.mask]
        hit = np.isin(addrs, covered)
        if not hit.any():
            return None
        return Conflict(True, None, lanes[fo.mask][hit], np.unique(addrs[hit]), fr.offset.terms)
    assert fo.elements is not None
    other = fo.elements + int(fo.offset.lanes)
    common = _sorted_common(covered, other)
    if common.size == 0:
        return None
    return Conflict(True, None, None, common, fr.offset.terms)


__all__ = ["Conflict", "Footprint", "Kind", "LaneAccess", "TileRegion", "lane_access",
           "lanes_conflict", "lanes_meet_at_multiple", "may_alias", "region_conflict", "region_elements", "tile_regions"]
