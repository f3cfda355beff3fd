"""The whole launch: block classes simulated once each, spread over the AI cores, HBM-bound.

A launch costs `launch_cycles` before any block starts, and each block `block_cycles` on its
core before its first instruction. Blocks are handed out in order of their linear id, each to
the core that becomes free first (the first wave: block b on core b), as a hardware block
scheduler does; a core runs its blocks back to back, and the compute time is when the last core
finishes. (Greedy list scheduling: appending blocks never shortens the launch.) Every byte to or from HBM shares the chip's bandwidth, so the launch takes
at least bytes / bandwidth (roofline). The L2 (`l2_bytes`) keeps what a wave of blocks touches:
each tensor's bytes reach HBM once (the compulsory traffic: the tensor, or what was moved of
it, whichever is smaller); the repeats (another block reading the same A band of a matmul) hit
in L2 when the wave's working set fits, and in proportion to how much of it fits otherwise.
An argument no instruction touches has no traffic and so no say.

Each block draws at most peak / (cores in use) of HBM at any moment (`engine.HbmChannel`): a
class whose free-running schedule draws more is simulated again within that share, its copies
stretched (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave). The L2 rule reads each
tensor's footprint, the bytes its accesses touch (footprint.py), when the run measured it.

When the roofline is longer than the cores' compute, the HBM binds: every block is stretched
by the same factor (it waits for its share of the bandwidth), which the timeline, the Chrome
trace (an HBM track per core) and `bubbles()` show. The cost is one simulation per distinct
block behaviour plus O(blocks) integer arithmetic in NumPy: it does not grow with identical
blocks.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.backend.cost_model.engine import BlockSchedule, simulate_block
from pypto.backend.cost_model.facts import OpFacts
from pypto.backend.cost_model.params import ModelParams


@dataclass
class BlockClass:
    blocks: list[int]
    schedule: BlockSchedule


@dataclass
class LaunchResult:
    classes: list[BlockClass]
    n_blocks: int
    cores_used: int
    waves: int
    block_cycles: np.ndarray       # per linear block
    block_start: np.ndarray        # per linear block: start cycle on its core
    compute_cycles: int
    hbm_bytes: int                 # bytes that reach HBM (after the L2 rule)
    roofline_cycles: int
    traffic_bytes: int = 0         # bytes the instructions move to or from global memory
    l2_resident: bool = False      # the wave's working set fits in L2: repeats all hit
    launch_cycles: int = 0         # the launch's fixed cost, before the first block starts
    block_wait: np.ndarray | None = None  # per linear block: cycles it waits for HBM at its end
    block_core: np.ndarray | None = None  # per linear block: the AI core it runs on
    hbm_share: float = 0.0         # HBM bandwidth one block may draw at any moment (B/cycle)
    l2_miss: float = 1.0           # the share of the moved bytes that reach HBM (the L2 rule)
    shared: bool = False           # some block class was re-simulated within its HBM share

    @property
    def total_cycles(self) -> int:
        return self.launch_cycles + max(self.compute_cycles, self.roofline_cycles)

    @property
    def bound(self) -> str:
        """What sets the launch's time: HBM (its roofline; or the share of it each block of a
        wave may draw, when that stretched copies and HBM is busy at least half the cores'
        time: the bandwidth, not the latencies around it, is what the blocks wait for) or the
        cores' compute."""
        if self.roofline_cycles > self.compute_cycles:
            return "HBM bandwidth"
        if self.shared and 2 * self.roofline_cycles >= self.compute_cycles:
            return "HBM bandwidth (each block's share)"
        return "compute"

    @property
    def hbm_stretch(self) -> float:
        """How much longer than their compute the blocks take for HBM (1.0: not HBM-bound)."""
        if self.compute_cycles <= 0 or self.roofline_cycles <= self.compute_cycles:
            return 1.0
        return self.roofline_cycles / self.compute_cycles

    def class_of(self, block: int) -> BlockClass:
        for c in self.classes:
            if block in c.blocks:
                return c
        raise IndexError(block)


def hbm_traffic(by_tensor: dict[int | None, int], tensor_bytes: dict[int, int] | None,
                l2_bytes: int, wave_fraction: float = 1.0,
                footprints: dict[int, int] | None = None) -> tuple[int, bool]:
    """(bytes that reach HBM, whether the wave's working set fits in L2).

    `by_tensor`: bytes moved per tensor argument (None: an address pypto cannot attribute);
    `wave_fraction`: the share of the launch's blocks that run at once; `footprints`: the
    bytes of each tensor the launch touches (footprint.py), preferred to its size (a tensor
    without one falls back on its size). Per tensor, the compulsory bytes are min(its
    footprint, what was moved of it) (all of it when the tensor is unknown); the rest are
    repeats. A wave touches (per tensor) min(footprint, moved x wave_fraction); when that
    working set fits in L2 every repeat hits, else the fraction l2_bytes / working set of them
    does. Monotone: more traffic never means fewer HBM bytes.
    """
    sizes = {**(tensor_bytes or {}), **(footprints or {})}
    compulsory = 0
    working = 0.0
    total = 0
    for t, moved in by_tensor.items():
        total += moved
        size = sizes.get(t) if t is not None else None
        if size is None:
            compulsory += moved
            working += moved * wave_fraction
            continue
        compulsory += min(size, moved)
        working += min(size, moved * wave_fraction)
    repeats = total - compulsory
    if working <= l2_bytes:
        return compulsory, True
    missed = repeats * (1.0 - l2_bytes / working)
    return compulsory + math.ceil(missed), False


def simulate_launch(block_classes: Sequence[tuple[list[int], Sequence[Any]]],
                    facts: dict[int, OpFacts], params: ModelParams,
                    n_blocks: int, tensor_bytes: dict[int, int] | None = None,
                    footprints: dict[int, int] | None = None) -> LaunchResult:
    cores = params.target.ai_cores
    classes = [BlockClass(list(blocks), simulate_block(events, facts, params))
               for blocks, events in block_classes]
    by_tensor: dict[int | None, int] = {}
    for c in classes:
        for t, moved in c.schedule.hbm_by_tensor.items():
            by_tensor[t] = by_tensor.get(t, 0) + moved * len(c.blocks)
    used = min(cores, n_blocks)
    hbm, resident = hbm_traffic(by_tensor, tensor_bytes, params.l2_bytes,
                                used / n_blocks if n_blocks else 1.0, footprints)
    # HBM shared by the blocks of a wave (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave):
    # at most `used` blocks run at once, so a block drawing no more than peak / used at any
    # moment keeps the chip within its peak; a class whose schedule draws more is simulated
    # again within that share (its copies stretched)
    traffic = sum(by_tensor.values())
    miss = min(1.0, hbm / traffic) if traffic else 1.0
    share = params.target.hbm_bytes_per_cycle / max(1, used)
    shared = False
    for k, (blocks, events) in enumerate(block_classes):
        if classes[k].schedule.hbm_peak(miss) > share + 1e-9:
            classes[k] = BlockClass(list(blocks), simulate_block(events, facts, params,
                                                                 share, miss))
            shared = shared or any(s.hbm_extra for s in classes[k].schedule.slices)
    cycles = np.full(n_blocks, params.block_cycles, dtype=np.int64)  # (an empty block too)
    for c in classes:
        value = c.schedule.cycles + params.block_cycles
        if len(c.blocks) == n_blocks:  # one class: every block (no index array of them all)
            cycles[:] = value
        else:
            cycles[np.asarray(c.blocks, dtype=np.int64)] = value
    start, core, compute = distribute(cycles, cores)
    roofline = math.ceil(hbm / params.target.hbm_bytes_per_cycle)
    # HBM-bound: every block waits for its share of the bandwidth (stretched alike), so the
    # last core ends at the roofline
    wait = np.zeros(n_blocks, dtype=np.int64)
    if roofline > compute > 0:
        stretched = np.ceil(cycles * (roofline / compute)).astype(np.int64)
        wait = stretched - cycles
        start, core, _ = distribute(cycles + wait, cores)
    return LaunchResult(classes, n_blocks, used, math.ceil(n_blocks / cores), cycles,
                        start + params.launch_cycles, compute, hbm, roofline,
                        traffic, resident, params.launch_cycles, wait, core, share, miss,
                        shared)


def distribute(cycles: np.ndarray, cores: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(start, core, makespan) of blocks of `cycles` handed out in order to the first free of
    `cores` cores. Blocks that all take the same time go round-robin (NumPy, O(blocks));
    otherwise a heap of the cores' free times."""
    n = len(cycles)
    start = np.zeros(n, dtype=np.int64)
    core = np.arange(n, dtype=np.int64) % max(1, cores)
    if n == 0:
        return start, core, 0
    if (cycles == cycles[0]).all():
        start = (np.arange(n, dtype=np.int64) // cores) * int(cycles[0])
        return start, core, int(-(-n // cores) * int(cycles[0]))
    free = [(0, k) for k in range(min(cores, n))]
    heapq.heapify(free)
    ends = 0
    for b in range(n):
        t, k = heapq.heappop(free)
        start[b], core[b] = t, k
        end = t + int(cycles[b])
        ends = max(ends, end)
        heapq.heappush(free, (end, k))
    return start, core, ends
