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

from typing import Any

import numpy as np

from pypto.backend.interpreter.patterns import lane_pattern
from pypto.errors import RaceError

_LANE_BITS = 24  # packed (instruction << 24) | block-local lane id


# Arrays of Shadows that are gone, for the next Shadow of the same size: (w_warp, r_warp,
# r_multi, log), the first three clean (no access recorded). Reusing them keeps the detector's
# memory warm in the caches from one lane vector (batch of blocks) to the next instead of
# touching fresh memory every time.
_SPARE: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []


class Shadow:
    """Shadow state of one block arena of L1 (per granule, see l1.py) for one epoch."""

    __slots__ = ("epoch", "w_warp", "r_warp", "r_multi", "writes", "reads", "pending", "log",
                 "log_used")

    def __init__(self, count: int):
        self.epoch = -1
        # This epoch's accesses, (instruction, the buffer's granule mapping `Buffer.gran`,
        # index, block-local lane ids, warps), kept only to name the earlier access of a race
        # when one is found (the rare path), so the common path stores no per-element
        # instruction or lane. Nothing here refers back to the Shadow (no Buffer, no
        # ShadowView): without a reference cycle the Shadow and its arena are freed as soon
        # as their lane vector is done, and their memory is reused while still in cache.
        self.writes: list[tuple[int, Any, Any, np.ndarray, np.ndarray]] = []
        self.reads: list[tuple[int, Any, Any, np.ndarray, np.ndarray]] = []
        # Reads whose r_warp / r_multi updates are deferred: only a write consults those, so
        # they are applied, in order, at the epoch's next write (see RaceChecker._settle_reads)
        # and dropped if the epoch ends first. An epoch that only reads pays nothing for them.
        self.pending: list[tuple[np.ndarray, np.ndarray, Any, np.ndarray]] = []
        spare = next((k for k, a in enumerate(_SPARE) if a[0].size == count), None)
        if spare is not None:
            self.w_warp, self.r_warp, self.r_multi, self.log = _SPARE.pop(spare)
        else:
            self.w_warp = np.full(count, -1, dtype=np.int16)
            self.r_warp = np.full(count, -1, dtype=np.int16)
            self.r_multi = np.zeros(count, dtype=bool)
            self.log = np.empty(0, dtype=np.int64)
        self.log_used = 0

    def __del__(self) -> None:
        if len(_SPARE) < 4:  # nothing else can refer to these arrays once the Shadow is gone
            self._clean()
            _SPARE.append((self.w_warp, self.r_warp, self.r_multi, self.log))

    def _clean(self) -> None:
        """Reset what this epoch recorded: w_warp if anything was written, r_warp / r_multi
        if deferred reads were applied (reads still pending never touched them)."""
        if self.writes:
            self.w_warp.fill(-1)
        if len(self.reads) > len(self.pending):
            self.r_warp.fill(-1)
            self.r_multi.fill(False)

    def keep(self, index: Any) -> Any:
        """A copy of an access's element indices for this epoch's logs, in memory the Shadow
        reuses epoch after epoch (and passes on, see `_SPARE`): holding on to the access's own
        index array instead would keep every logged array alive until the epoch ends, and the
        kernel's next temporaries would land in fresh, cold memory (measured: 2-4x slower
        element-wise ops in the generated code)."""
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

    def at_epoch(self, epoch: int) -> None:
        if self.epoch != epoch:
            self.epoch = epoch
            self._clean()
            self.writes = []
            self.reads = []
            self.pending = []
            self.log_used = 0


class ShadowView:
    """One buffer's window on its arena's shadow, indexed like the buffer's data. Buffers that
    share bytes share shadow granules, so an access through either is seen by both."""

    __slots__ = ("arena", "w_warp", "r_warp", "r_multi")

    def __init__(self, arena: Shadow, w_warp: np.ndarray, r_warp: np.ndarray,
                 r_multi: np.ndarray):
        self.arena = arena
        self.w_warp = w_warp
        self.r_warp = r_warp
        self.r_multi = r_multi

    @property
    def writes(self) -> list[Any]:
        return self.arena.writes

    @property
    def reads(self) -> list[Any]:
        return self.arena.reads

    def at_epoch(self, epoch: int) -> ShadowView:
        self.arena.at_epoch(epoch)
        return self


class RaceChecker:
    """Race checks of one lane vector; mixed into `LaneContext` (uses its ids and sites)."""

    # provided by LaneContext / BlockMemory
    count: int
    counters: dict[str, int]
    sites: list[Any]
    kernel: str
    local_base: int
    warp_size: int

    def _lanes_and_warps(self, mask: Any) -> tuple[np.ndarray, np.ndarray]:
        """Block-local linear ids of the active lanes and their warps. (Block-local ids, not
        vector positions: in warp mode each warp is its own lane vector, and a report names
        an access another warp made.)"""
        cached = getattr(self, "_race_lanes", None)
        if cached is None:
            # one block's pattern repeated (a tile, not a `%` over every lane), shared by every
            # vector of this shape
            bl: int = self.block_lanes  # type: ignore[attr-defined]
            start = self.first_lane % bl  # type: ignore[attr-defined]
            reps = (start + self.count - 1) // bl + 1
            pattern = np.arange(bl, dtype=np.int64)
            key = (bl, start, self.count, self.warp_size)
            local = lane_pattern(("race_lanes",) + key,
                                 lambda: np.tile(pattern, reps)[start:start + self.count])
            warps = lane_pattern(("race_warps",) + key, lambda: np.tile(
                (pattern // self.warp_size).astype(np.int16), reps)[start:start + self.count])
            cached = (local, warps)
            self._race_lanes = cached
        if mask is None or mask is True:
            return cached
        return (self.masked("race_pos", cached[0], mask),  # type: ignore[attr-defined]
                self.masked("race_warps", cached[1], mask))  # type: ignore[attr-defined]

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
        lanes, warps = self._lanes_and_warps(mask)
        if lanes.size == 0:
            return None
        return (lanes, warps, self._index(idx, lanes.size),
                buf.shadow.at_epoch(self.counters["epoch"]))

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
        sh.reads.append((site, buf.gran, kept, lanes, warps))
        sh.arena.pending.append((sh.r_warp, sh.r_multi, kept, warps))

    @staticmethod
    def _settle_reads(sh: ShadowView) -> None:
        """Apply the deferred reads of this epoch to r_warp (the last reading warp) and
        r_multi (a second warp read the element too), in the order they happened."""
        pending = sh.arena.pending
        first_of_epoch = len(sh.reads) == len(pending)  # r_warp is all -1 before the first
        for k, (r_warp, r_multi, index, warps) in enumerate(pending):
            first = r_warp[index] if k or not first_of_epoch else None
            r_warp[index] = warps  # the last reader; a second reading warp sets r_multi
            if _injective(index):
                other = None
            else:  # two warps read one element in this instruction
                other = r_warp[index] != warps
            if first is not None:
                earlier = (first >= 0) & (first != warps)
                other = earlier if other is None else (other | earlier)
            if other is not None and other.any():
                if isinstance(index, slice):
                    r_multi[index][other] = True
                else:
                    r_multi[index[other]] = True
        sh.arena.pending = []

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "WAW", "written again")
        if sh.arena.pending:
            self._settle_reads(sh)
        if sh.reads:
            reader = sh.r_warp[index]
            war = ((reader >= 0) & (reader != warps)) | sh.r_multi[index]
            if war.any():
                k = int(np.argmax(war))
                e = _element(index, k)
                self._report("WAR", buf, e, _find(sh.reads, buf, e, int(warps[k])), "read",
                             (site << _LANE_BITS) | int(lanes[k]), "written")
        sh.writes.append((site, buf.gran, sh.arena.keep(index), lanes, warps))
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

    def _report(self, kind: str, buf: Any, element: int, first: int, what1: str, second: int,
                what2: str) -> None:
        mask = (1 << _LANE_BITS) - 1
        site1, lane1 = first >> _LANE_BITS, first & mask
        site2, lane2 = second >> _LANE_BITS, second & mask
        block = self.block_of_element(buf, element)  # type: ignore[attr-defined]
        element = buf.local_element(element)
        s1, s2 = self.sites[site1], self.sites[site2]
        msg = (f"{kind} race on L1 buffer '{buf.name}' element {element} in block {block}: "
               f"{what1} by lane {self._lane_name(lane1)} (warp {lane1 // self.warp_size}) at "
               f"{s1.location} (pto.{s1.op}), then {what2} by lane {self._lane_name(lane2)} "
               f"(warp {lane2 // self.warp_size}) at {s2.location} (pto.{s2.op}) with no "
               f"pto.barrier_block() in between (pto.barrier() orders only its own warp); "
               f"use pto.barrier_block()")
        raise RaceError(msg, kernel=self.kernel, location=s2.location)

    def _lane_name(self, linear: int) -> Any:
        """A lane's printable id: its linear local id when the block is 1-D, else (x, y, z)."""
        bx, by, bz = self.block  # type: ignore[attr-defined]
        if by * bz == 1:
            return linear
        return (linear % bx, (linear // bx) % by, linear // (bx * by))


def _find(log: list[tuple[int, Any, Any, np.ndarray, np.ndarray]], buf: Any, element: int,
          other_than_warp: int) -> int:
    """The latest logged access to the memory of `buf[element]` (through any buffer) by a
    warp other than `other_than_warp`, packed as (instruction << _LANE_BITS) | lane id."""
    target = buf.granule_of(element)
    for site, gran, index, lanes, warps in reversed(log):
        hit = np.flatnonzero(_granules(gran, index, lanes.size) == target)
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


def _granules(gran: tuple[int, int], index: Any, n: int) -> np.ndarray:
    """Arena granules of a logged access (as `Buffer.granule_of` with the logged mapping)."""
    if isinstance(index, slice):
        index = np.arange(index.start, index.start + n)
    return gran[0] + np.asarray(index, dtype=np.int64) * gran[1]
