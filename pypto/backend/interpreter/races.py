"""The dynamic race detector: shadow state per L1 element, by warp and barrier epoch.

Model (as compute-sanitizer's racecheck, specialised to the PTO machine): lanes are grouped in
warps of 32; a warp runs in lockstep, so lanes of one warp never race. The block's *epoch*
advances at every `pto.barrier_block` and every tile instruction (a block-level collective), and
orders everything before it against everything after it. `pto.barrier()` orders only its own warp
and does not advance the epoch. Two accesses to one L1 element in the same epoch, by different
warps, at least one a write, are a race — whatever order the warps happened to run in, so the
detector finds races in lockstep execution as well as under any warp schedule.

Per L1 element the shadow keeps, for the current epoch only (it is cleared lazily when the epoch
moves on): the warp that last wrote it, the first warp that read it and whether a second warp
read it too, and for each the instruction and lane (packed in one int64) so a report names *both*
accesses. All checks are a handful of vectorised NumPy operations per access.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.errors import RaceError

_LANE_BITS = 24  # packed (instruction << 24) | vector position


class Shadow:
    """Shadow state of one L1 buffer for one epoch."""

    __slots__ = ("epoch", "w_warp", "r_warp", "r_multi", "writes", "reads")

    def __init__(self, count: int):
        self.epoch = -1
        # This epoch's accesses, (instruction, element index, vector positions, warps), kept
        # only to name the earlier access of a race when one is found (the rare path), so the
        # common path stores no per-element instruction or lane.
        self.writes: list[tuple[int, Any, np.ndarray, np.ndarray]] = []
        self.reads: list[tuple[int, Any, np.ndarray, np.ndarray]] = []
        self.w_warp = np.full(count, -1, dtype=np.int16)
        self.r_warp = np.full(count, -1, dtype=np.int16)
        self.r_multi = np.zeros(count, dtype=bool)

    def at_epoch(self, epoch: int) -> Shadow:
        if self.epoch != epoch:
            self.epoch = epoch
            if self.writes:
                self.w_warp.fill(-1)
            if self.reads:
                self.r_warp.fill(-1)
                self.r_multi.fill(False)
            self.writes = []
            self.reads = []
        return self


class RaceChecker:
    """Race checks of one lane vector; mixed into `LaneContext` (uses its ids and sites)."""

    # provided by LaneContext / BlockMemory
    count: int
    counters: dict[str, int]
    sites: list[Any]
    kernel: str
    local_base: int

    def _lanes_and_warps(self, mask: Any) -> tuple[np.ndarray, np.ndarray]:
        """Vector positions of the active lanes and their warps (within their block)."""
        cached = getattr(self, "_race_lanes", None)
        if cached is None:
            pos = np.arange(self.count, dtype=np.int64)
            local = (pos + self.first_lane) % self.block_lanes  # type: ignore[attr-defined]
            cached = (pos, (local // 32).astype(np.int16))
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
        """(positions, warps, element index, shadow at this epoch) of an access, or None when
        no lane is active."""
        lanes, warps = self._lanes_and_warps(mask)
        if lanes.size == 0:
            return None
        return (lanes, warps, self._index(idx, lanes.size),
                buf.shadow.at_epoch(self.counters["epoch"]))

    def _against_writes(self, buf: Any, sh: Shadow, index: Any, lanes: np.ndarray,
                        warps: np.ndarray, site: int, kind: str, what: str) -> None:
        """Report an element this access touches that another warp wrote in this epoch."""
        if not sh.writes:
            return
        writer = sh.w_warp[index]
        bad = (writer >= 0) & (writer != warps)
        if bad.any():
            k = int(np.argmax(bad))
            e = _element(index, k)
            self._report(kind, buf, e, _find(sh.writes, e, int(warps[k])), "written",
                         (site << _LANE_BITS) | int(lanes[k]), what)

    def race_read(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "RAW", "read")
        first = sh.r_warp[index] if sh.reads else None
        sh.reads.append((site, index, lanes, warps))
        sh.r_warp[index] = warps  # the last reader; a second reading warp sets r_multi
        other = sh.r_warp[index] != warps  # two warps read one element in this instruction
        if first is not None:
            other |= (first >= 0) & (first != warps)
        if other.any():
            if isinstance(index, slice):
                sh.r_multi[index][other] = True
            else:
                sh.r_multi[index[other]] = True

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        access = self._access(buf, idx, mask)
        if access is None:
            return
        lanes, warps, index, sh = access
        self._against_writes(buf, sh, index, lanes, warps, site, "WAW", "written again")
        if sh.reads:
            reader = sh.r_warp[index]
            war = ((reader >= 0) & (reader != warps)) | sh.r_multi[index]
            if war.any():
                k = int(np.argmax(war))
                e = _element(index, k)
                self._report("WAR", buf, e, _find(sh.reads, e, int(warps[k])), "read",
                             (site << _LANE_BITS) | int(lanes[k]), "written")
        sh.writes.append((site, index, lanes, warps))
        sh.w_warp[index] = warps
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
        site1, pos1 = first >> _LANE_BITS, first & mask
        site2, pos2 = second >> _LANE_BITS, second & mask
        lane1, warp1 = self._lane_warp(pos1)
        lane2, warp2 = self._lane_warp(pos2)
        block, _ = self.describe_lane(pos2)  # type: ignore[attr-defined]
        element %= buf.count
        s1, s2 = self.sites[site1], self.sites[site2]
        msg = (f"{kind} race on L1 buffer '{buf.name}' element {element} in block {block}: "
               f"{what1} by lane {lane1} (warp {warp1}) at {s1.location} (pto.{s1.op}), "
               f"then {what2} by lane {lane2} (warp {warp2}) at {s2.location} "
               f"(pto.{s2.op}) with no pto.barrier_block() in between (pto.barrier() orders "
               f"only its own warp); use pto.barrier_block()")
        raise RaceError(msg, kernel=self.kernel, location=s2.location)

    def _lane_warp(self, pos: int) -> tuple[Any, int]:
        """A lane's printable id: its linear local id when the block is 1-D, else (x, y, z)."""
        _, lane = self.describe_lane(pos)  # type: ignore[attr-defined]
        bx, by, _ = self.block  # type: ignore[attr-defined]
        linear = lane[0] + lane[1] * bx + lane[2] * bx * by
        return (linear if by * self.block[2] == 1 else lane), linear // 32  # type: ignore


def _find(log: list[tuple[int, Any, np.ndarray, np.ndarray]], element: int,
          other_than_warp: int) -> int:
    """The latest logged access to `element` by a warp other than `other_than_warp`, packed as
    (instruction << _LANE_BITS) | vector position."""
    for site, index, lanes, warps in reversed(log):
        hit = np.flatnonzero(_positions(index, element, lanes.size))
        for i in hit[::-1]:
            if int(warps[i]) != other_than_warp:
                return (site << _LANE_BITS) | int(lanes[i])
    return 0  # pragma: no cover - the shadow says such an access exists


def _element(index: Any, k: int) -> int:
    if isinstance(index, slice):
        return index.start + k
    return int(index[k])


def _positions(index: Any, element: int, n: int) -> np.ndarray:
    if isinstance(index, slice):
        return np.arange(index.start, index.start + n) == element
    return np.asarray(index) == element
