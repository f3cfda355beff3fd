"""The whole launch: block classes simulated once each, spread over the AI cores, HBM-bound.

Blocks go to cores round-robin (block b on core b mod cores, in waves of `ai_cores`); a core runs
its blocks back to back, so the compute time is the busiest core's sum. Every byte to or from
HBM shares the chip's bandwidth, so the launch takes at least bytes / bandwidth (roofline); when
all the launch's tensors fit in the L2 together (`l2_bytes`), a tensor's bytes reach HBM at most
once — the other blocks reading them hit in L2. The
cost is one simulation per distinct block behaviour plus O(blocks) integer arithmetic in NumPy:
it does not grow with identical blocks.
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
    l2_resident: bool = False      # every tensor fits in L2: each is fetched from HBM once

    @property
    def total_cycles(self) -> int:
        return max(self.compute_cycles, self.roofline_cycles)

    @property
    def bound(self) -> str:
        return "HBM bandwidth" if self.roofline_cycles > self.compute_cycles else "compute"

    def class_of(self, block: int) -> BlockClass:
        for c in self.classes:
            if block in c.blocks:
                return c
        raise IndexError(block)


def hbm_traffic(by_tensor: dict[int | None, int], tensor_bytes: dict[int, int] | None,
                l2_bytes: int) -> tuple[int, bool]:
    """Bytes that reach HBM: with every tensor of the launch fitting in L2 together, a tensor's
    bytes come from HBM at most once (later blocks hit in L2); otherwise all traffic does."""
    total = sum(by_tensor.values())
    if not tensor_bytes or None in by_tensor or sum(tensor_bytes.values()) > l2_bytes:
        return total, False
    return sum(min(moved, tensor_bytes.get(t, moved)) for t, moved in by_tensor.items()
               if t is not None), True


def simulate_launch(block_classes: Sequence[tuple[list[int], Sequence[Any]]],
                    facts: dict[int, OpFacts], params: ModelParams,
                    n_blocks: int, tensor_bytes: dict[int, int] | None = None) -> LaunchResult:
    cores = params.target.ai_cores
    classes = [BlockClass(list(blocks), simulate_block(events, facts, params))
               for blocks, events in block_classes]
    cycles = np.zeros(n_blocks, dtype=np.int64)
    by_tensor: dict[int | None, int] = {}
    for c in classes:
        cycles[np.asarray(c.blocks, dtype=np.int64)] = c.schedule.cycles
        for t, moved in c.schedule.hbm_by_tensor.items():
            by_tensor[t] = by_tensor.get(t, 0) + moved * len(c.blocks)
    hbm, resident = hbm_traffic(by_tensor, tensor_bytes, params.l2_bytes)
    core = np.arange(n_blocks, dtype=np.int64) % cores
    per_core = np.bincount(core, weights=cycles, minlength=min(cores, n_blocks))
    # start of each block on its core: the cycles of the blocks before it on that core
    start = np.zeros(n_blocks, dtype=np.int64)
    for k in range(min(cores, n_blocks)):
        mine = cycles[k::cores]
        start[k::cores] = np.cumsum(mine) - mine
    compute = int(per_core.max()) if n_blocks else 0
    roofline = math.ceil(hbm / params.target.hbm_bytes_per_cycle)
    return LaunchResult(classes, n_blocks, min(cores, n_blocks), math.ceil(n_blocks / cores),
                        cycles, start, compute, hbm, roofline, sum(by_tensor.values()), resident)
