"""The dynamic race detector: shadow state per L1 element, by warp and barrier epoch.

Model (as compute-sanitizer's racecheck, specialised to the PTO machine): lanes are grouped in
warps (the target's `warp_size`, 32 by default); a warp runs in lockstep, so lanes of one warp
never race. The block's *epoch* advances at every `pto.barrier_block` and every block-level
collective except the tile vector instructions (copies, waits, `fill`, `mma`), and orders
everything before it against everything after it. A tile vector instruction is not a barrier:
its accesses are the vector unit's, one more agent in the epoch (`race_tile`). `pto.barrier()`
orders only its own warp and does not advance the epoch. Two accesses to one L1 element in the
same epoch, by different warps, at least one a write, are a race — whatever order the warps
happened to run in, so the detector finds races in lockstep execution as well as under any warp
schedule.

The shadow follows L1 addresses, not buffer names: it is kept per granule of the block's L1 arena
(see l1.py), so two buffers placed over the same bytes are checked against each other. Per
element it keeps, for the current epoch only (it is cleared lazily when the epoch
moves on): the warp that last wrote it, the first warp that read it and whether a second warp
read it too, and for each the instruction and lane (packed in one int64) so a report names *both*
accesses. All checks are a handful of vectorised NumPy operations per access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from pypto.backend.interpreter.shadow import (_LANE_BITS, _PATTERN, _ROWS, VECTOR_LANE,
                                              VECTOR_WARP, Shadow, ShadowView, _advance,
                                              _element, _find, _injective, _lift, _narrowed,
                                              _positions, _row_warps, _rows_clear, _shadow_rows,
                                              materialise, pattern_summary, settle_reads,
                                              summarised)
from pypto.errors import RaceError

if TYPE_CHECKING:
    from pypto.backend.interpreter.parts import Vector

__all__ = ["RaceChecker", "Races", "Shadow", "ShadowView", "pattern_summary"]


@runtime_checkable
class Races(Protocol):
    """What the rest of the lane context asks of its race checker (`ctx.races`)."""

    def race_read(self, buf: Any, idx: Any, mask: Any, site: int) -> None: ...

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None: ...

    def race_rows(self, buf: Any, base: int, lo: int, hi: int, active: Any, site: int,
                  write: bool) -> None: ...

    def race_tile(self, buf: Any, index: np.ndarray, site: int, write: bool,
                  stable: bool = False) -> None: ...

    def race_pattern(self, buf: Any, pattern: tuple[Any, ...], site: int, write: bool,
                     key: Any = None) -> bool: ...

    def race_pattern_masked(self, buf: Any, pattern: tuple[Any, ...], order: np.ndarray,
                            mask: np.ndarray, site: int, write: bool,
                            key: Any = None) -> bool: ...


class RaceChecker:
    """Race checks of one lane vector: a part of its `lanes.LaneContext` (`ctx.races`), which
    gives it the vector's ids, sites and L1 (`ctx`)."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Vector) -> None:
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
        lanes, warps = self.ctx.lanes_and_warps(mask)
        if lanes.size == 0:
            return None
        sh = buf.shadow.at_epoch(self.ctx.counters["epoch"])
        materialise(sh.arena, self.ctx.warp_size, self.ctx.cache)
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

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "WAW", "written again")
        if sh.arena.deferred:
            settle_reads(sh.arena)
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

    def race_tile(self, buf: Any, index: np.ndarray, site: int, write: bool,
                  stable: bool = False) -> None:
        """The race checks of a tile vector instruction's operand (tile_ops.py): it reads
        (writes) elements `index` of `buf` (indexed like the buffer's data, every block's copy;
        increasing) through the vector unit, which does not wait for the lanes' L1 accesses
        nor they for it (docs/barriers.md#tile-vector-instructions). The vector unit is one
        more agent in the epoch, `VECTOR_WARP`: any lane access of these elements in the same
        epoch (since the last `pto.barrier_block()`), at least one a write, is a race, before
        the instruction or after it; two tile instructions never race (the vector unit runs
        them in order). A tile instruction does not advance the epoch: it is not a barrier.
        `stable`: `index` is never changed (tile_ops.py caches it), so the logs keep it as is."""
        n = index.size
        if n == 0:
            return
        sh = buf.shadow.at_epoch(self.ctx.counters["epoch"])
        arena = sh.arena
        materialise(arena, self.ctx.warp_size, self.ctx.cache)
        me = (site << _LANE_BITS) | VECTOR_LANE
        if sh.writes:
            writer = sh.w_warp[index]
            bad = (writer >= 0) & (writer != VECTOR_WARP)
            if bad.any():
                e = int(index[int(np.argmax(bad))])
                self._report("WAW" if write else "RAW", buf, e,
                             _find(sh.writes, buf, e, VECTOR_WARP), "written", me,
                             "written again" if write else "read")
        kept = index if stable else arena.keep(index)
        lanes = np.broadcast_to(np.int64(VECTOR_LANE), (n,))
        warps = np.broadcast_to(np.int16(VECTOR_WARP), (n,))
        if not write:
            sh.reads.append((site, buf, kept, lanes, warps))
            arena.deferred.append((sh.r_warp, sh.r_multi, kept, warps))
            return
        if arena.deferred:
            settle_reads(arena)
        if sh.reads:
            reader = sh.r_warp[index]
            war = ((reader >= 0) & (reader != VECTOR_WARP)) | sh.r_multi[index]
            if war.any():
                e = int(index[int(np.argmax(war))])
                self._report("WAR", buf, e, _find(sh.reads, buf, e, VECTOR_WARP), "read", me,
                             "written")
        sh.writes.append((site, buf, kept, lanes, warps))
        arena.dirty = True
        sh.w_warp[index] = VECTOR_WARP

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
            settle_reads(arena)
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
            if summarised(buf, slice(lo, hi), warps, warps, active, write, True, key):
                (arena.writes if write else arena.reads).append(
                    (site, buf, _ROWS, (base, lo, hi, active), ws))
                return
        warps = _row_warps(self.ctx.cache, base, lo, hi, ws)
        materialise(arena, self.ctx.warp_size, self.ctx.cache)
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
                idx = self.ctx.lanes.checked(buf, idx, mask, site)  # type: ignore[attr-defined]
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
                summarised(buf, elems, wmin, wmax, None, write, wmin is wmax,
                                 None if key is None else (buf.gran, key, write)):
            (sh.writes if write else sh.reads).append(
                (site, buf, _PATTERN, (local, lanes, None), ws))
            return True
        materialise(arena, self.ctx.warp_size, self.ctx.cache)
        if arena.deferred:
            settle_reads(arena)
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
        if not summarised(buf, elems, wmin, wmax, active, write, wmin is wmax,
                                None if key is None else (buf.gran, key, write)):
            return False
        (sh.writes if write else sh.reads).append((site, buf, _PATTERN, (local, lanes, mask), ws))
        return True


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
        if VECTOR_LANE in (lane1, lane2):
            msg = (f"{kind} race on L1 tile '{buf.name}' element {element} in block {block}: "
                   f"{what1} {self._agent(lane1, s1)}, then {what2} {self._agent(lane2, s2)} "
                   f"with no pto.barrier_block() in between (a tile vector instruction is not "
                   f"a barrier: the vector unit does not wait for the lanes' L1 accesses, nor "
                   f"they for it); put pto.barrier_block() between them")
            raise RaceError(msg, kernel=self.ctx.kernel, location=s2.location)
        msg = (f"{kind} race on L1 buffer '{buf.name}' element {element} in block {block}: "
               f"{what1} by lane {self._lane_name(lane1)} (warp {lane1 // self.ctx.warp_size}) at "
               f"{s1.location} (pto.{s1.op}), then {what2} by lane {self._lane_name(lane2)} "
               f"(warp {lane2 // self.ctx.warp_size}) at {s2.location} (pto.{s2.op}) with no "
               f"pto.barrier_block() in between (pto.barrier() orders only its own warp); "
               f"use pto.barrier_block()")
        raise RaceError(msg, kernel=self.ctx.kernel, location=s2.location,
                        called_from=s2.called_from)

    def _agent(self, lane: int, site: Any) -> str:
        """Who made an access, for a report: a lane (and its warp) or the vector unit."""
        if lane == VECTOR_LANE:
            return f"by pto.{site.op} (the vector unit) at {site.location}"
        return (f"by lane {self._lane_name(lane)} (warp {lane // self.ctx.warp_size}) at "
                f"{site.location} (pto.{site.op})")

    def _lane_name(self, linear: int) -> Any:
        """A lane's printable id: its linear local id when the block is 1-D, else (x, y, z)."""
        bx, by, bz = self.ctx.block  # type: ignore[attr-defined]
        if by * bz == 1:
            return linear
        return (linear % bx, (linear // bx) % by, linear // (bx * by))
