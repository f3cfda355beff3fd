"""The dynamic race detector: shadow state per L1 element, by warp and barrier epoch.

Model (as compute-sanitizer's racecheck, specialised to the PTO machine): lanes are grouped in
warps of 32; a warp runs in lockstep, so lanes of one warp never race. The block's *epoch*
advances at every `pto.barrier_block` and every tile instruction (a block-level collective), and
orders everything before it against everything after it. `pto.barrier()` orders only its own warp
and does not advance the epoch. Two accesses to one L1 element in the same epoch, by different
warps, at least one a write, are a race — whatever order the warps happened to run in, so the
detector finds races in lockstep execution as well as under any warp schedule.

Per L1 element the shadow keeps the last writer (warp, lane, instruction, epoch) and the set of
warps that read it in the reader epoch (a 32-bit mask: blocks have at most 32 warps) with the
last reader's lane and instruction, which is enough to name *both* accesses in the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.errors import RaceError


class Shadow:
    """Shadow state of one L1 buffer."""

    __slots__ = ("w_warp", "w_epoch", "w_site", "w_lane", "r_epoch", "r_mask", "r_site",
                 "r_lane")

    def __init__(self, count: int):
        self.w_warp = np.full(count, -1, dtype=np.int16)
        self.w_epoch = np.full(count, -1, dtype=np.int32)
        self.w_site = np.zeros(count, dtype=np.int32)
        self.w_lane = np.zeros(count, dtype=np.int32)
        self.r_epoch = np.full(count, -1, dtype=np.int32)
        self.r_mask = np.zeros(count, dtype=np.uint32)
        self.r_site = np.zeros(count, dtype=np.int32)
        self.r_lane = np.zeros(count, dtype=np.int32)


def _as_index(idx: Any, lanes: np.ndarray) -> np.ndarray:
    """Element indices per accessing lane (a uniform address is broadcast to every lane)."""
    if isinstance(idx, slice):
        return np.arange(idx.start, idx.stop, dtype=np.int64)
    arr = np.asarray(idx, dtype=np.int64)
    if arr.ndim == 0:
        return np.full(lanes.size, int(arr), dtype=np.int64)
    return arr


class RaceChecker:
    """Race checks of one lane vector; mixed into `LaneContext` (uses its ids and sites)."""

    # provided by LaneContext / BlockMemory
    count: int
    counters: dict[str, int]
    sites: list[Any]
    kernel: str
    local_base: int

    def active_lanes(self, mask: Any) -> np.ndarray:
        """Local linear ids of the active lanes of this vector."""
        lanes = np.arange(self.count, dtype=np.int64) + self.local_base
        return lanes if mask is None or mask is True else lanes[np.asarray(mask)]

    def race_read(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        sh: Shadow = buf.shadow
        lanes = self.active_lanes(mask)
        index = _as_index(idx, lanes)
        if index.size == 0:
            return
        warps = (lanes // 32).astype(np.int16)
        epoch = self.counters["epoch"]
        writer = sh.w_warp[index]
        bad = (sh.w_epoch[index] == epoch) & (writer >= 0) & (writer != warps)
        if bad.any():
            k = int(np.argmax(bad))
            e = int(index[k])
            self._report("RAW", buf, e, (int(sh.w_lane[e]), int(sh.w_site[e]), "written"),
                         (int(lanes[k]), site, "read"))
        stale = sh.r_epoch[index] != epoch
        if stale.any():
            sh.r_mask[index[stale]] = 0
        sh.r_epoch[index] = epoch
        np.bitwise_or.at(sh.r_mask, index, (np.uint32(1) << warps.astype(np.uint32)))
        sh.r_site[index] = site
        sh.r_lane[index] = lanes

    def race_write(self, buf: Any, idx: Any, mask: Any, site: int) -> None:
        sh: Shadow = buf.shadow
        lanes = self.active_lanes(mask)
        index = _as_index(idx, lanes)
        if index.size == 0:
            return
        warps = (lanes // 32).astype(np.int16)
        epoch = self.counters["epoch"]
        writer = sh.w_warp[index]
        waw = (sh.w_epoch[index] == epoch) & (writer >= 0) & (writer != warps)
        if waw.any():
            k = int(np.argmax(waw))
            e = int(index[k])
            self._report("WAW", buf, e, (int(sh.w_lane[e]), int(sh.w_site[e]), "written"),
                         (int(lanes[k]), site, "written again"))
        bits = np.uint32(1) << warps.astype(np.uint32)
        war = (sh.r_epoch[index] == epoch) & ((sh.r_mask[index] & ~bits) != 0)
        if war.any():
            k = int(np.argmax(war))
            e = int(index[k])
            self._report("WAR", buf, e, (int(sh.r_lane[e]), int(sh.r_site[e]), "read"),
                         (int(lanes[k]), site, "written"))
        if index.size > 1:  # two warps writing one element in this very instruction
            order = np.argsort(index, kind="stable")
            si, sw = index[order], warps[order]
            clash = (si[1:] == si[:-1]) & (sw[1:] != sw[:-1])
            if clash.any():
                k = int(np.argmax(clash))
                first, second = order[k], order[k + 1]
                self._report("WAW", buf, int(si[k]), (int(lanes[first]), site, "written"),
                             (int(lanes[second]), site, "written by the same instruction"))
        sh.w_warp[index] = warps
        sh.w_epoch[index] = epoch
        sh.w_site[index] = site
        sh.w_lane[index] = lanes

    def _report(self, kind: str, buf: Any, element: int, first: tuple[int, int, str],
                second: tuple[int, int, str]) -> None:
        block, _ = self.describe_lane(0)  # type: ignore[attr-defined]
        (lane1, site1, what1), (lane2, site2, what2) = first, second
        s1, s2 = self.sites[site1], self.sites[site2]
        msg = (f"{kind} race on L1 buffer '{buf.name}' element {element} in block {block}: "
               f"{what1} by lane {lane1} (warp {lane1 // 32}) at {s1.location} (pto.{s1.op}), "
               f"then {what2} by lane {lane2} (warp {lane2 // 32}) at {s2.location} "
               f"(pto.{s2.op}) with no pto.barrier_block() in between (pto.barrier() orders "
               f"only its own warp); use pto.barrier_block()")
        raise RaceError(msg, kernel=self.kernel, location=s2.location)
