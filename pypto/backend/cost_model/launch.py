"""The whole launch: block classes simulated once each, spread over the AI cores, HBM-bound.

A launch costs `launch_cycles` before any block starts, and each block `block_cycles` on its
core before its first instruction. Blocks go to cores round-robin (block b on core b mod
cores, in waves of `ai_cores`); a core runs its blocks back to back, so the compute time is the
busiest core's sum. Every byte to or from HBM shares the chip's bandwidth, so the launch takes
at least bytes / bandwidth (roofline). The L2 (`l2_bytes`) keeps what a wave of blocks touches:
each tensor's bytes reach HBM once (the compulsory traffic: the tensor, or what was moved of
it, whichever is smaller); the repeats (another block reading the same A band of a matmul) hit
in L2 when the wave's working set fits, and in proportion to how much of it fits otherwise.
An argument no instruction touches has no traffic and so no say.

When the roofline is longer than the cores' compute, the HBM binds: every block is stretched
by the same factor (it waits for its share of the bandwidth), which the timeline, the Chrome
trace (an HBM track per core) and `bubbles()` show. The cost is one simulation per distinct
block behaviour plus O(blocks) integer arithmetic in NumPy: it does not grow with identical
blocks.
"""

from __future__ import annotations

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

    @property
    def total_cycles(self) -> int:
        return self.launch_cycles + max(self.compute_cycles, self.roofline_cycles)

    @property
    def bound(self) -> str:
        return "HBM bandwidth" if self.roofline_cycles > self.compute_cycles else "compute"

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
                l2_bytes: int, wave_fraction: float = 1.0) -> tuple[int, bool]:
    """(bytes that reach HBM, whether the wave's working set fits in L2).

    `by_tensor`: bytes moved per tensor argument (None: an address pypto cannot attribute);
    `wave_fraction`: the share of the launch's blocks that run at once. Per tensor, the
    compulsory bytes are min(its size, what was moved of it) (all of it when the tensor is
    unknown); the rest are repeats. A wave touches (per tensor) min(size, moved x
    wave_fraction); when that working set fits in L2 every repeat hits, else the fraction
    l2_bytes / working set of them does. Monotone: more traffic never means fewer HBM bytes.
    """
    sizes = tensor_bytes or {}
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
                    n_blocks: int, tensor_bytes: dict[int, int] | None = None) -> LaunchResult:
    cores = params.target.ai_cores
    classes = [BlockClass(list(blocks), simulate_block(events, facts, params))
               for blocks, events in block_classes]
    cycles = np.full(n_blocks, params.block_cycles, dtype=np.int64)  # (an empty block too)
    by_tensor: dict[int | None, int] = {}
    for c in classes:
        cycles[np.asarray(c.blocks, dtype=np.int64)] = c.schedule.cycles + params.block_cycles
        for t, moved in c.schedule.hbm_by_tensor.items():
            by_tensor[t] = by_tensor.get(t, 0) + moved * len(c.blocks)
    used = min(cores, n_blocks)
    hbm, resident = hbm_traffic(by_tensor, tensor_bytes, params.l2_bytes,
                                used / n_blocks if n_blocks else 1.0)
    core = np.arange(n_blocks, dtype=np.int64) % cores
    per_core = np.bincount(core, weights=cycles, minlength=used)
    compute = int(per_core.max()) if n_blocks else 0
    roofline = math.ceil(hbm / params.target.hbm_bytes_per_cycle)
    # HBM-bound: every block waits for its share of the bandwidth (stretched alike), so the
    # busiest core ends at the roofline
    wait = np.zeros(n_blocks, dtype=np.int64)
    if roofline > compute > 0:
        stretched = np.ceil(cycles * (roofline / compute)).astype(np.int64)
        wait = stretched - cycles
    paced = cycles + wait
    # start of each block on its core: the (paced) cycles of the blocks before it on that core
    start = np.zeros(n_blocks, dtype=np.int64)
    for k in range(used):
        mine = paced[k::cores]
        start[k::cores] = np.cumsum(mine) - mine + params.launch_cycles
    return LaunchResult(classes, n_blocks, used, math.ceil(n_blocks / cores), cycles, start,
                        compute, hbm, roofline, sum(by_tensor.values()), resident,
                        params.launch_cycles, wait)
