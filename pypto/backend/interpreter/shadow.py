"""The race detector's shadow state (races.py): per granule of a block's L1 arena, the warps that
wrote and read it in the current epoch, the logs that name an earlier access in a report, and the
summary of block-uniform accesses (row and pattern accesses) checked per element of one block.
The functions here keep that bookkeeping; the checks that use it and the reports are
races.py's `RaceChecker` (docs/interpreter.md#the-race-detector).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

_LANE_BITS = 24  # packed (instruction << 24) | block-local lane id


class Shadow:
    """Shadow state of one block arena of L1 (per granule, see l1.py) for one epoch."""

    __slots__ = ("epoch", "w_warp", "r_warp", "r_multi", "writes", "reads", "pending", "dirty",
                 "deferred", "log", "log_used", "rowq", "u_wlo", "u_whi", "u_rlo", "u_rhi", "u_dirty",
                 "u_applied", "state", "trie", "n_states")

    def __init__(self, count: int, per_block: int | None = None):
        self.epoch = -1
        # This epoch's accesses, (instruction, buffer, index, block-local lane ids, warps), kept
        # only to name the earlier access of a race when one is found (the rare path), so the
        # common path stores no per-element instruction or lane.
        self.writes: list[tuple[int, Any, Any, np.ndarray, np.ndarray]] = []
        self.reads: list[tuple[int, Any, Any, np.ndarray, np.ndarray]] = []
        self.w_warp = np.full(count, -1, dtype=np.int16)
        self.r_warp = np.full(count, -1, dtype=np.int16)
        self.r_multi = np.zeros(count, dtype=bool)
        # Accesses that touch the same elements of every block's copy with the same lanes
        # (row accesses, RaceChecker.race_rows, and planned patterns, race_pattern) are
        # checked per element of one block against a summary of this epoch's others: per
        # granule of one block arena, the lowest and highest writing warp (u_wlo, u_whi) and
        # reading warp (u_rlo, u_rhi) in any block. Two accesses whose warps all agree cannot
        # race; anything else (or an access of another kind) writes the pending ones into
        # the arrays above, where the exact per-block check runs. `pending` lists them in
        # order: (buf, elements, lowest warp, highest warp, active blocks mask, write).
        self.pending: list[tuple[Any, Any, Any, Any, Any, bool]] = []
        # Before that, while an epoch has only row accesses of every lane of a window (the
        # tree reductions), they are checked against each other per column by plain Python
        # (`_rows_clear`) and queued here, (buf, base, lo, hi, write): no array work at all.
        self.rowq: list[tuple[Any, int, int, int, bool]] = []
        per_block = count if per_block is None else per_block
        self.u_wlo = np.full(per_block, _NO_WARP, dtype=np.int16)
        self.u_whi = np.full(per_block, -1, dtype=np.int16)
        self.u_rlo = np.full(per_block, _NO_WARP, dtype=np.int16)
        self.u_rhi = np.full(per_block, -1, dtype=np.int16)
        self.u_dirty = False  # the summary holds accesses of this epoch
        self.u_applied = 0  # pending[:u_applied] are in the summary arrays
        # Every lane vector of a launch (and every launch) runs the same accesses: the
        # outcome of a summary check depends only on the epoch's accesses so far and the new
        # one, so it is remembered. `state` numbers the sequence of this epoch's block-uniform
        # accesses (0: none yet; None: one depended on data, nothing is remembered), `trie`
        # maps (state, access) to the state after it, for accesses found race-free: then the
        # check (and the summary update, applied later if a check needs it) is skipped.
        self.state: int | None = 0
        self.trie: dict[tuple[int, Any], int] = {}
        self.n_states = 0
        self.dirty = False  # the arrays hold accesses of this epoch
        # General reads whose r_warp / r_multi updates wait for something that consults those
        # arrays (a write, a row access): RaceChecker._settle_reads applies them. An epoch
        # that only reads pays one check against the writes per read and nothing more.
        self.deferred: list[tuple[np.ndarray, np.ndarray, Any, np.ndarray]] = []
        # Memory for the index arrays the logs keep (see `keep`), reused epoch after epoch.
        self.log = np.empty(0, dtype=np.int64)
        self.log_used = 0

    def keep(self, index: Any) -> Any:
        """A copy of an access's element indices for this epoch's logs, in memory the Shadow
        reuses: holding on to the access's own index array instead would keep every logged
        array alive until the epoch ends, and the kernel's next temporaries would land in
        fresh, cold memory (measured on the transpose: 2-4x slower element-wise ops)."""
        if not isinstance(index, np.ndarray):
            return index  # a slice
        n = index.size
        if self.log_used + n > self.log.size:  # earlier entries keep the old array alive
            self.log = np.empty(max(2 * self.log.size, n, 1 << 16), dtype=np.int64)
            self.log_used = 0
        kept = self.log[self.log_used:self.log_used + n]
        kept[...] = index
        self.log_used += n
        return kept

    def reset(self) -> None:
        """No access recorded (new blocks in a reused arena)."""
        self.epoch = -1
        if self.dirty:
            self.w_warp.fill(-1)
            self.r_warp.fill(-1)
            self.r_multi.fill(False)
            self.dirty = False
        self.writes, self.reads, self.pending, self.deferred = [], [], [], []
        self.rowq = []
        self.log_used = 0
        self._clear_summary()

    def _clear_summary(self) -> None:
        if self.u_dirty:
            self.u_wlo.fill(_NO_WARP)
            self.u_whi.fill(-1)
            self.u_rlo.fill(_NO_WARP)
            self.u_rhi.fill(-1)
            self.u_dirty = False
        self.u_applied = 0
        self.state = 0

    def at_epoch(self, epoch: int) -> None:
        if self.epoch != epoch:
            self.epoch = epoch
            if self.dirty:
                if self.writes:
                    self.w_warp.fill(-1)
                if self.reads:
                    self.r_warp.fill(-1)
                    self.r_multi.fill(False)
                self.dirty = False
            self.writes = []
            self.reads = []
            self.pending = []
            self.rowq = []
            self.deferred = []
            self.log_used = 0
            self._clear_summary()


class ShadowView:
    """One buffer's window on its arena's shadow, indexed like the buffer's data. Buffers that
    share bytes share shadow granules, so an access through either is seen by both."""

    __slots__ = ("arena", "w_warp", "r_warp", "r_multi", "rows", "summary")

    def __init__(self, arena: Shadow, w_warp: np.ndarray, r_warp: np.ndarray,
                 r_multi: np.ndarray):
        self.arena = arena
        self.w_warp = w_warp
        self.r_warp = r_warp
        self.r_multi = r_multi
        self.rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see race_rows
        self.summary: tuple[np.ndarray, ...] | None = None  # see RaceChecker._summarised

    @property
    def writes(self) -> list[Any]:
        return self.arena.writes

    @property
    def reads(self) -> list[Any]:
        return self.arena.reads

    def at_epoch(self, epoch: int) -> ShadowView:
        self.arena.at_epoch(epoch)
        return self



def settle_reads(arena: Shadow) -> None:
    """Apply the deferred general reads of this epoch to r_warp (the last reading warp)
    and r_multi (a second warp read the element too). Their order among themselves and the
    row accesses does not change the outcome: r_multi is set for an element as soon as
    two different warps' reads of it have been applied, whichever came first."""
    for r_warp, r_multi, index, warps in arena.deferred:
        first = r_warp[index] if arena.dirty else None
        r_warp[index] = warps  # the last reader; a second reading warp sets r_multi
        arena.dirty = True
        other = None if _injective(index) else r_warp[index] != warps  # same instruction
        if first is not None:
            earlier = (first >= 0) & (first != warps)
            other = earlier if other is None else (other | earlier)
        if other is not None and other.any():
            if isinstance(index, slice):
                r_multi[index][other] = True
            else:
                r_multi[index[other]] = True
    arena.deferred = []


def summarised(buf: Any, elems: Any, wlo: np.ndarray, whi: np.ndarray, active: Any, write: bool,
               single: bool, key: Any = None) -> bool:
    """Check an access that touches elements `elems` of every block's copy (a slice or
    sorted distinct indices) with warps `wlo[j]..whi[j]` on element j (the same in every
    block; `active`: None, or a (blocks, elements) mask of the blocks where it happens;
    `single`: wlo equals whi) against this epoch's summary, per element of one block: the
    summary keeps the lowest and highest warp that wrote (read) each element in any block.
    Where every warp involved is one and the same, no two warps touched the element; then
    the access is recorded in the summary (as if in every block) and `pending` (exactly),
    and True is returned. Otherwise, or when an element was touched by more than one warp,
    False: the caller writes the pending accesses into the arrays and checks per block.
    O(elements of one block), whatever the number of blocks; nothing at all when this
    access after the same ones was found race-free before (`key`: what identifies it,
    None when it depends on data; see Shadow.trie)."""
    arena = buf.shadow.arena
    if len(arena.pending) >= _PENDING_MAX:
        return False
    state = arena.state
    if key is not None and state is not None:
        nxt = arena.trie.get((state, key))
        if nxt is not None:
            arena.state = nxt
            arena.pending.append((buf, elems, wlo, whi, active, write))
            return True
    if not single and write:
        return False  # two warps write one element (stores with collisions do not come)
    if arena.u_applied < len(arena.pending):
        _apply(arena)
    u_wlo, u_whi, u_rlo, u_rhi = _summary_views(buf)
    if arena.u_dirty:
        if not _agree(u_wlo[elems], u_whi[elems], wlo, whi, single):
            return False
        if write and not _agree(u_rlo[elems], u_rhi[elems], wlo, whi, single):
            return False
    arena.pending.append((buf, elems, wlo, whi, active, write))
    _apply(arena)
    if key is None:
        arena.state = None
    else:
        _advance(arena, key)
    return True


def materialise(arena: Shadow, ws: int, cache: Any) -> None:
    """Write the pending (summarised) accesses of this epoch into the shadow arrays, in
    order (the arrays are then this epoch's whole record; none of them races with
    another, `_summarised` made sure). `dirty` says the arrays hold something: set here,
    by a general write and by settled reads, so an epoch (or a reused arena) whose
    accesses never reached them needs no clearing."""
    if arena.rowq:
        _lift(arena, ws, cache)
    if not arena.pending:
        return
    for buf, elems, wlo, whi, active, write in arena.pending:
        w_rows, r_rows, m_rows = _shadow_rows(buf)
        if write:
            if active is None:
                w_rows[:, elems] = wlo
            else:
                w = w_rows[:, elems]
                np.copyto(w, np.broadcast_to(wlo, w.shape), where=active)
                w_rows[:, elems] = w
            continue
        r = r_rows[:, elems]
        other = (r >= 0) & (r != wlo)
        if wlo is not whi:
            other |= wlo != whi
        if active is not None:
            other &= active
        if other.any():
            m = m_rows[:, elems]
            m |= other
            m_rows[:, elems] = m
        if active is None:
            r_rows[:, elems] = whi
        else:
            np.copyto(r, np.broadcast_to(whi, r.shape), where=active)
            r_rows[:, elems] = r
    arena.pending = []
    arena.u_applied = 0
    arena.dirty = True


def _find(log: list[tuple[int, Any, Any, np.ndarray, np.ndarray]], buf: Any, element: int,
          other_than_warp: int) -> int:
    """The latest logged access to the memory of `buf[element]` (through any buffer) by a
    warp other than `other_than_warp`, packed as (instruction << _LANE_BITS) | lane id."""
    target = buf.granule_of(element)
    for site, lbuf, index, lanes, warps in reversed(log):
        if index is _ROWS:  # a row access: expanded only now, on the rare reporting path
            index, lanes, warps = _expand_rows(lbuf, *lanes, warps)
        elif index is _PATTERN:
            index, lanes, warps = _expand_pattern(lbuf, *lanes, warps)
        hit = np.flatnonzero(_granules(lbuf, index, lanes.size) == target)
        for i in hit[::-1]:
            if int(warps[i]) != other_than_warp:
                return (site << _LANE_BITS) | int(lanes[i])
    return 0  # pragma: no cover - the shadow says such an access exists


def _injective(index: Any) -> bool:
    """Does no element occur twice in `index`? Known for a slice; for an array, checked in one
    cheap pass when it is strictly increasing (lane-ordered accesses usually are), else the
    callers fall back to their gather-after-scatter test."""
    if isinstance(index, slice):
        return True
    return index.size < 2 or bool((index[1:] > index[:-1]).all())


def _element(index: Any, k: int) -> int:
    if isinstance(index, slice):
        return index.start + k
    return int(index[k])


def _positions(index: Any, element: int, n: int) -> np.ndarray:
    if isinstance(index, slice):
        return np.arange(index.start, index.start + n) == element
    return np.asarray(index) == element


def _granules(buf: Any, index: Any, n: int) -> np.ndarray:
    if isinstance(index, slice):
        index = np.arange(index.start, index.start + n)
    return buf.granule_of(np.asarray(index, dtype=np.int64))


def _rows_clear(arena: Shadow, buf: Any, base: int, lo: int, hi: int, write: bool,
                ws: int) -> bool:
    """Can a row access of every lane (columns lo..hi, lane = column - base) be queued
    (Shadow.rowq)? Yes when it races with none of the queued ones: where two touch one column,
    at least one writing, the lanes doing so are in one warp. Only row accesses are queued, so
    each compares per column (the same in every block), not per element. A different buffer
    over the same bytes, or a long queue, goes through the summary instead."""
    if len(arena.rowq) >= 16:
        return False
    for pbuf, pbase, plo, phi, pwrite in arena.rowq:
        if not (write or pwrite):
            continue
        if pbuf is not buf:
            size = buf.data.itemsize
            if pbuf.offset < buf.offset + buf.count * size and \
                    buf.offset < pbuf.offset + pbuf.count * pbuf.data.itemsize:
                return False
            continue
        a, b = max(lo, plo), min(hi, phi)
        if a < b and base != pbase:
            cols = np.arange(a, b)
            if ((cols - base) // ws != (cols - pbase) // ws).any():
                return False
    return True


def _narrowed(ctx: Any, active: np.ndarray) -> tuple[int, int] | None:
    """For a (blocks, columns) mask that keeps the same columns a..b-1 of every block (and no
    others): (a, b); else None. Worked out once per branch mask (`active` is a view of it)."""
    row = active[0]
    if active.shape[0] > 1 and not (active[-1] == row).all():
        return None  # a mask computed from data: its last block differs (found at once)
    owner = active.base if active.base is not None else active
    cache = getattr(ctx, "_narrow_cache", None)  # one mask at a time, as LaneContext.mask_facts
    if cache is None or cache[0] is not owner:
        cache = ctx._narrow_cache = (owner, {})
    facts = cache[1]
    key = (active.shape, active.strides, active.__array_interface__["data"][0])
    if key in facts:
        return facts[key]  # type: ignore[no-any-return]
    result = None
    if active.shape[0] == 1 or not (active != row).any():
        cols = np.flatnonzero(row)
        if cols.size == 0:
            result = (0, 0)
        elif int(cols[-1]) + 1 - int(cols[0]) == cols.size:
            result = (int(cols[0]), int(cols[-1]) + 1)
    facts[key] = result
    return result


def _lift(arena: Shadow, ws: int, cache: Any) -> None:
    """Move the queued row accesses (Shadow.rowq, consistent with each other) to the pending
    list, in order (applied to the summary when a check needs it)."""
    for buf, base, lo, hi, write in arena.rowq:
        warps = _row_warps(cache, base, lo, hi, ws)
        arena.pending.append((buf, slice(lo, hi), warps, warps, None, write))
    arena.rowq = []


def _apply(arena: Shadow) -> None:
    """Bring the summary arrays up to date with the pending accesses."""
    pending = arena.pending
    for i in range(arena.u_applied, len(pending)):
        buf, elems, wlo, whi, _, write = pending[i]
        u_wlo, u_whi, u_rlo, u_rhi = _summary_views(buf)
        if write:
            u_wlo[elems] = wlo
            u_whi[elems] = whi
        elif isinstance(elems, slice):
            np.minimum(u_rlo[elems], wlo, out=u_rlo[elems])
            np.maximum(u_rhi[elems], whi, out=u_rhi[elems])
        else:
            u_rlo[elems] = np.minimum(u_rlo[elems], wlo)
            u_rhi[elems] = np.maximum(u_rhi[elems], whi)
        arena.u_dirty = True
    arena.u_applied = len(pending)


def _advance(arena: Shadow, key: Any) -> None:
    """The epoch's state after a block-uniform access found race-free (see Shadow.trie)."""
    state = arena.state
    if state is None:
        return
    trie = arena.trie
    nxt = trie.get((state, key))
    if nxt is None:
        if len(trie) >= _TRIE_MAX:
            trie.clear()  # ids keep growing: a state from before is simply not found
        arena.n_states += 1
        nxt = trie[(state, key)] = arena.n_states
    arena.state = nxt


def _row_warps(cache: Any, base: int, lo: int, hi: int, ws: int) -> np.ndarray:
    """The warp of the lane touching each column lo..hi of a row access."""
    return cache.geometry(("row_warps", lo - base, hi - base, ws),
                          lambda: (np.arange(lo - base, hi - base) // ws).astype(np.int16))


def _shadow_rows(buf: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(blocks, count) views of a buffer's shadow arrays, made once per buffer."""
    sh = buf.shadow
    if sh.rows is None:
        sh.rows = (_rows_view(sh.w_warp, buf), _rows_view(sh.r_warp, buf),
                   _rows_view(sh.r_multi, buf))
    return sh.rows


def _rows_view(array: np.ndarray, buf: Any) -> np.ndarray:
    """(blocks, count) view of a shadow array indexed like `buf`'s data (see Buffer.grid)."""
    step = array.strides[0]
    return as_strided(array, shape=(buf.blocks, buf.count), strides=(buf.stride * step, step),
                      writeable=True)


def _summary_views(buf: Any) -> tuple[np.ndarray, ...]:
    """The arena's summary arrays (Shadow.u_*, one block's granules) indexed like one block's
    copy of `buf`, made once per buffer."""
    sh = buf.shadow
    if sh.summary is None:
        arena = sh.arena
        first, step = buf.gran
        sh.summary = tuple(
            as_strided(a[first:], shape=(buf.count,), strides=(step * a.itemsize,),
                       writeable=True)
            for a in (arena.u_wlo, arena.u_whi, arena.u_rlo, arena.u_rhi))
    return sh.summary


def _agree(lo: np.ndarray, hi: np.ndarray, wlo: Any, whi: Any, single: bool) -> bool:
    """Did only the access's own warp touch these elements (per element: nothing recorded,
    or the recorded warps lo..hi and the access's warps are all one warp)?"""
    seen = hi >= 0
    if not seen.any():
        return True
    if single:
        return not ((lo != wlo) | (hi != wlo))[seen].any()
    return not ((lo != wlo) | (hi != wlo) | (wlo != whi))[seen].any()


_NO_WARP = np.iinfo(np.int16).max
VECTOR_WARP = _NO_WARP - 1
"""The 'warp' of the vector unit's accesses (tile vector instructions, `race_tile`): another
agent than every lane warp, the same for every tile instruction."""
VECTOR_LANE = 1 << (_LANE_BITS - 1)
"""The 'lane' logged for a vector-unit access (no lane id is that large)."""
_PENDING_MAX = 64
_TRIE_MAX = 4096
"""Summarised accesses an epoch keeps pending at most (then the arrays take over)."""


_ROWS = object()
"""Marks a logged row access: (site, buf, _ROWS, (base, lo, hi, active), warp size), expanded
to per-lane element indices, lanes and warps only when a race report names it."""


def _expand_rows(buf: Any, base: int, lo: int, hi: int, active: Any,
                 ws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A logged row access's element indices, block-local lanes and warps, lane by lane."""
    cols = np.arange(lo, hi, dtype=np.int64)
    index = np.arange(buf.blocks, dtype=np.int64)[:, None] * buf.stride + cols[None, :]
    lanes = np.broadcast_to(cols - base, index.shape)
    if active is not None:  # masks are never changed in place: holding it is enough
        index, lanes = index[active], lanes[active]
    else:
        index, lanes = index.reshape(-1), lanes.reshape(-1)
    return index, lanes, (lanes // ws).astype(np.int16)


_PATTERN = object()
"""Marks a logged pattern access (RaceChecker.race_pattern): (site, buf, _PATTERN, (local
elements, lanes, mask or None), warp size), expanded lane by lane only when a race report
names it."""


def pattern_summary(local: np.ndarray, lanes: np.ndarray,
                    ws: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The distinct elements of a pattern (a slice when they are a range) and, per element,
    the lowest and highest warp among the lanes touching it."""
    warps = (lanes // ws).astype(np.int16)
    elems, inverse = np.unique(local, return_inverse=True)
    wmin = np.full(elems.size, np.iinfo(np.int16).max, dtype=np.int16)
    wmax = np.full(elems.size, -1, dtype=np.int16)
    np.minimum.at(wmin, inverse, warps)
    np.maximum.at(wmax, inverse, warps)
    if np.array_equal(wmin, wmax):
        wmax = wmin  # one warp per element: `wmin is wmax` says so (RaceChecker._summarised)
    if elems.size and int(elems[-1]) - int(elems[0]) + 1 == elems.size:
        return slice(int(elems[0]), int(elems[-1]) + 1), wmin, wmax  # a range: views, not gathers
    return elems, wmin, wmax


def _expand_pattern(buf: Any, local: np.ndarray, lanes: np.ndarray, mask: Any,
                    ws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A logged pattern access's element indices, block-local lanes and warps, lane by lane
    (`mask`: (blocks, lanes) active lanes, None for all)."""
    index = np.arange(buf.blocks, dtype=np.int64)[:, None] * buf.stride + local[None, :]
    lanes2 = np.broadcast_to(lanes, index.shape)
    if mask is not None:
        index, lanes2 = index[mask], lanes2[mask]
    else:
        index, lanes2 = index.reshape(-1), lanes2.reshape(-1)
    return index, lanes2, (lanes2 // ws).astype(np.int16)
