"""The dynamic race detector: shadow state per L1 element, by warp and barrier epoch.

Model (as compute-sanitizer's racecheck, specialised to the PTO machine): lanes are grouped in
warps (the target's `warp_size`, 32 by default); a warp runs in lockstep, so lanes of one warp
never race. The block's *epoch* advances at every `pto.barrier_block` and every tile instruction (a block-level collective), and
orders everything before it against everything after it. `pto.barrier()` orders only its own warp
and does not advance the epoch. Two accesses to one L1 element in the same epoch, by different
warps, at least one a write, are a race — whatever order the warps happened to run in, so the
detector finds races in lockstep execution as well as under any warp schedule.

The shadow follows L1 addresses, not buffer names: it is kept per granule of the block's L1 arena
(see l1.py), so two buffers placed over the same bytes are checked against each other. Per
element it keeps, for the current epoch only (it is cleared lazily when the epoch
moves on): the warp that last wrote it, the first warp that read it and whether a second warp
read it too, and for each the instruction and lane (packed in one int64) so a report names *both*
accesses. All checks are a handful of vectorised NumPy operations per access.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from numpy.lib.stride_tricks import as_strided

from pypto.errors import RaceError

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


class Races(Protocol):
    """What the rest of the lane context asks of its race checker (`ctx.races`)."""

    def race_read(self, buf: Any, idx: Any, mask: Any, site: int) -> None: ...

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None: ...

    def race_rows(self, buf: Any, base: int, lo: int, hi: int, active: Any, site: int,
                  write: bool) -> None: ...

    def race_pattern(self, buf: Any, pattern: tuple[Any, ...], site: int, write: bool,
                     key: Any = None) -> bool: ...

    def race_pattern_masked(self, buf: Any, pattern: tuple[Any, ...], order: np.ndarray,
                            mask: np.ndarray, site: int, write: bool,
                            key: Any = None) -> bool: ...


class RaceChecker:
    """Race checks of one lane vector: a part of its `lanes.LaneContext` (`ctx.races`), which
    gives it the vector's ids, sites and L1 (`ctx`)."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    @staticmethod
    def _index(idx: Any, n: int) -> Any:
        """A slice (contiguous, one element per lane) or an index array, one entry per lane."""
        if isinstance(idx, slice):
            return idx
        arr = np.asarray(idx)
        if arr.ndim == 0:
            return np.full(n, int(arr), dtype=np.int64)
        return arr

    def _access(self, buf: Any, idx: Any, mask: Any) -> Any:
        """(lanes, warps, element index, shadow at this epoch) of an access, or None when
        no lane is active."""
        lanes, warps = self.ctx._lanes_and_warps(mask)
        if lanes.size == 0:
            return None
        sh = buf.shadow.at_epoch(self.ctx.counters["epoch"])
        self._materialise(sh.arena)
        return lanes, warps, self._index(idx, lanes.size), sh

    def _against_writes(self, buf: Any, sh: ShadowView, index: Any, lanes: np.ndarray,
                        warps: np.ndarray, site: int, kind: str, what: str) -> None:
        """Report an element this access touches that another warp wrote in this epoch."""
        if not sh.writes:
            return
        writer = sh.w_warp[index]
        written = writer >= 0
        if not written.any():  # none of these elements written yet this epoch (common)
            return
        bad = written & (writer != warps)
        if bad.any():
            k = int(np.argmax(bad))
            e = _element(index, k)
            self._report(kind, buf, e, _find(sh.writes, buf, e, int(warps[k])), "written",
                         (site << _LANE_BITS) | int(lanes[k]), what)

    def race_read(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "RAW", "read")
        kept = sh.arena.keep(index)
        sh.reads.append((site, buf, kept, lanes, warps))
        sh.arena.deferred.append((sh.r_warp, sh.r_multi, kept, warps))

    @staticmethod
    def _settle_reads(arena: Shadow) -> None:
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

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "WAW", "written again")
        if sh.arena.deferred:
            self._settle_reads(sh.arena)
        if sh.reads:
            reader = sh.r_warp[index]
            war = ((reader >= 0) & (reader != warps)) | sh.r_multi[index]
            if war.any():
                k = int(np.argmax(war))
                e = _element(index, k)
                self._report("WAR", buf, e, _find(sh.reads, buf, e, int(warps[k])), "read",
                             (site << _LANE_BITS) | int(lanes[k]), "written")
        sh.writes.append((site, buf, sh.arena.keep(index), lanes, warps))
        sh.arena.dirty = True
        sh.w_warp[index] = warps
        if _injective(index):
            return  # no element twice: two warps cannot have written one in this instruction
        clash = sh.w_warp[index] != warps  # two warps wrote one element in this instruction
        if clash.any():
            k = int(np.argmax(clash))
            e = _element(index, k)
            at = np.flatnonzero(_positions(index, e, lanes.size))
            first = next(int(i) for i in at if warps[i] != warps[at[-1]])
            self._report("WAW", buf, e, (site << _LANE_BITS) | int(lanes[first]), "written",
                         (site << _LANE_BITS) | int(lanes[at[-1]]),
                         "written by the same instruction")

    def race_rows(self, buf: Any, base: int, lo: int, hi: int, active: Any, site: int,
                  write: bool) -> None:
        """The race checks of a row access (strategies/rows.py `load_rows` / `store_rows`): lane k of
        every block touches element `base + k` of its block's copy, for the columns lo..hi
        (`active`: which of those lanes are active, None for all). First against the epoch's
        summary (`_summarised`), per column of one block; else the same checks as
        `race_read` / `race_write` on 2-D slices of the shadow. An access that touches each
        element once cannot race with itself, so the checks for two warps in one instruction
        are not needed. When a race is found the general path runs, to report it exactly as
        it would."""
        sh = buf.shadow
        arena = sh.arena
        epoch = self.ctx.counters["epoch"]
        if arena.epoch != epoch:
            arena.at_epoch(epoch)
        if arena.deferred:
            self._settle_reads(arena)
        ws = self.ctx.warp_size
        if active is not None and not arena.dirty:
            narrow = _narrowed(self.ctx, active)
            if narrow is not None:
                # the same lanes in every block (`if tid < s` inside a window): fewer columns
                if narrow[0] == narrow[1]:
                    return
                lo, hi, active = lo + narrow[0], lo + narrow[1], None
        if not arena.dirty:
            # the summary check ignores which lanes are active (a masked access is summarised
            # as if every lane of the columns made it; the pending list keeps the mask for
            # the arrays), so its outcome is the unmasked access's: the same key
            key = (buf.gran, buf.count, base, lo, hi, write)
            if active is None and not arena.pending and \
                    (not arena.rowq or (arena.state, key) in arena.trie or
                     _rows_clear(arena, buf, base, lo, hi, write, ws)):
                (arena.writes if write else arena.reads).append(
                    (site, buf, _ROWS, (base, lo, hi, None), ws))
                arena.rowq.append((buf, base, lo, hi, write))
                _advance(arena, key)
                return
            if arena.rowq:
                _lift(arena, ws, self.ctx.cache)
            warps = _row_warps(self.ctx.cache, base, lo, hi, ws)
            if self._summarised(buf, slice(lo, hi), warps, warps, active, write, True, key):
                (arena.writes if write else arena.reads).append(
                    (site, buf, _ROWS, (base, lo, hi, active), ws))
                return
        warps = _row_warps(self.ctx.cache, base, lo, hi, ws)
        self._materialise(arena)
        arena.dirty = True  # this access goes into the arrays
        w_rows, r_rows, m_rows = _shadow_rows(buf)
        cols = slice(lo, hi)
        w_warp = w_rows[:, cols]
        bad = None
        if sh.writes:
            bad = (w_warp >= 0) & (w_warp != warps)
        if write and sh.reads:
            r_warp = r_rows[:, cols]
            war = ((r_warp >= 0) & (r_warp != warps)) | m_rows[:, cols]
            bad = war if bad is None else bad | war
        if bad is not None:
            if active is not None:
                bad &= active
            if bad.any():
                mask = self._rows_mask(base, lo, hi, active)
                idx = self.ctx.local_id(0) + np.int64(base)  # type: ignore[attr-defined]
                idx = self.ctx._checked(buf, idx, mask, site)  # type: ignore[attr-defined]
                (self.race_write if write else self.race_read)(buf, idx, mask, site)
                raise AssertionError("race_rows: the general path found no race")  # pragma: no cover
        log = sh.writes if write else sh.reads
        earlier_reads = bool(sh.reads)
        log.append((site, buf, _ROWS, (base, lo, hi, active), ws))
        target = w_warp if write else r_rows[:, cols]
        if not write and earlier_reads:
            # a second warp reading an element this epoch: remember it for a later write
            other = (target >= 0) & (target != warps)
            if active is not None:
                other &= active
            if other.any():
                multi = m_rows[:, cols]
                multi |= other
        if active is None:
            target[...] = warps
        else:
            np.copyto(target, np.broadcast_to(warps, target.shape), where=active)

    def race_pattern(self, buf: Any, pattern: tuple[Any, ...], site: int,
                     write: bool, key: Any = None) -> bool:
        """The race checks of a planned access (views.py) in which every block of a batch-mode
        vector touches the same elements of its copy with the same lanes: lane `lanes[j]`
        touches element `local[j]` of its block's copy, every lane active. Per element the
        touching warps are summarised once per pattern (the lowest and highest warp), so the
        checks run per element of one block against the epoch's summary (`_summarised`), or
        else on 2-D slices of (blocks, distinct elements) of the shadow — for a broadcast
        read (every lane reads one element) one column per block. Writes reach here only when
        no two lanes write one element. Returns False when it found a race: the caller then
        runs the general check, which reports it exactly as it would."""
        sh = buf.shadow
        arena = sh.arena
        epoch = self.ctx.counters["epoch"]
        if arena.epoch != epoch:
            arena.at_epoch(epoch)
        ws = self.ctx.warp_size
        local, lanes, elems, wmin, wmax = pattern
        if arena.rowq and not arena.dirty:
            _lift(arena, ws, self.ctx.cache)
        if not arena.dirty and not arena.deferred and \
                self._summarised(buf, elems, wmin, wmax, None, write, wmin is wmax,
                                 None if key is None else (buf.gran, key, write)):
            (sh.writes if write else sh.reads).append(
                (site, buf, _PATTERN, (local, lanes, None), ws))
            return True
        self._materialise(arena)
        if arena.deferred:
            self._settle_reads(arena)
        w_rows, r_rows, m_rows = _shadow_rows(buf)
        multi = wmin != wmax
        if sh.writes:
            w = w_rows[:, elems]
            bad = (w >= 0) & ((w != wmin) | multi)
            if bad.any():
                return False
        if write and sh.reads:
            r = r_rows[:, elems]
            if (((r >= 0) & (r != wmin)) | m_rows[:, elems]).any():
                return False
        log = sh.writes if write else sh.reads
        earlier_reads = bool(sh.reads)
        log.append((site, buf, _PATTERN, (local, lanes, None), ws))
        arena.dirty = True
        if write:
            w_rows[:, elems] = wmin
            return True
        if earlier_reads or multi.any():
            r = r_rows[:, elems]
            other = ((r >= 0) & (r != wmin)) | multi
            if other.any():
                m_rows[:, elems] |= other
        r_rows[:, elems] = wmax
        return True

    def race_pattern_masked(self, buf: Any, pattern: tuple[Any, ...], order: np.ndarray,
                            mask: np.ndarray, site: int, write: bool, key: Any = None) -> bool:
        """`race_pattern` of a planned access whose mask keeps different lanes in different
        blocks (bounds checks at a grid's edges): each element is touched by one lane
        (`order[j]`: the lane position of element j), `mask` the vector's (blocks, lanes)
        active lanes. Checked against the epoch's summary as if every block were active (so
        the outcome does not depend on the mask: remembered under `key`, the unmasked
        access's, as in `race_pattern`); False when that is not conclusive (the caller then
        runs the general check)."""
        sh = buf.shadow
        arena = sh.arena
        epoch = self.ctx.counters["epoch"]
        if arena.epoch != epoch:
            arena.at_epoch(epoch)
        if arena.dirty or arena.deferred:
            return False
        ws = self.ctx.warp_size
        if arena.rowq:
            _lift(arena, ws, self.ctx.cache)
        local, lanes, elems, wmin, wmax = pattern
        active = mask if order is None else mask[:, order]
        if not self._summarised(buf, elems, wmin, wmax, active, write, wmin is wmax,
                                None if key is None else (buf.gran, key, write)):
            return False
        (sh.writes if write else sh.reads).append((site, buf, _PATTERN, (local, lanes, mask), ws))
        return True

    def _summarised(self, buf: Any, elems: Any, wlo: np.ndarray, whi: np.ndarray,
                    active: Any, write: bool, single: bool, key: Any = None) -> bool:
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

    def _materialise(self, arena: Shadow) -> None:
        """Write the pending (summarised) accesses of this epoch into the shadow arrays, in
        order (the arrays are then this epoch's whole record; none of them races with
        another, `_summarised` made sure). `dirty` says the arrays hold something: set here,
        by a general write and by settled reads, so an epoch (or a reused arena) whose
        accesses never reached them needs no clearing."""
        if arena.rowq:
            _lift(arena, self.ctx.warp_size, self.ctx.cache)
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

    def _rows_mask(self, base: int, lo: int, hi: int, active: Any) -> Any:
        """The lane mask of a row access, for the general path."""
        width = self.ctx.row_width  # type: ignore[attr-defined]
        if active is None and hi - lo == width:
            return None
        mask = np.zeros((self.ctx.count // width, width), dtype=bool)
        j = lo - base - self.ctx.local_base
        mask[:, j:j + hi - lo] = True if active is None else active
        return mask.reshape(-1)

    def _report(self, kind: str, buf: Any, element: int, first: int, what1: str, second: int,
                what2: str) -> None:
        mask = (1 << _LANE_BITS) - 1
        site1, lane1 = first >> _LANE_BITS, first & mask
        site2, lane2 = second >> _LANE_BITS, second & mask
        block = self.ctx.block_of_element(buf, element)  # type: ignore[attr-defined]
        element = buf.local_element(element)
        s1, s2 = self.ctx.sites[site1], self.ctx.sites[site2]
        msg = (f"{kind} race on L1 buffer '{buf.name}' element {element} in block {block}: "
               f"{what1} by lane {self._lane_name(lane1)} (warp {lane1 // self.ctx.warp_size}) at "
               f"{s1.location} (pto.{s1.op}), then {what2} by lane {self._lane_name(lane2)} "
               f"(warp {lane2 // self.ctx.warp_size}) at {s2.location} (pto.{s2.op}) with no "
               f"pto.barrier_block() in between (pto.barrier() orders only its own warp); "
               f"use pto.barrier_block()")
        raise RaceError(msg, kernel=self.ctx.kernel, location=s2.location)

    def _lane_name(self, linear: int) -> Any:
        """A lane's printable id: its linear local id when the block is 1-D, else (x, y, z)."""
        bx, by, bz = self.ctx.block  # type: ignore[attr-defined]
        if by * bz == 1:
            return linear
        return (linear % bx, (linear // bx) % by, linear // (bx * by))


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
