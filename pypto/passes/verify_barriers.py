"""`pto-verify-barriers`: report L1 races between warps, in-flight async copies and divergent
block barriers at compile time (docs/barriers.md#how-it-decides)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from pypto.analysis.barriers import DEFAULT_BLOCK_SIZE, check_kernel, kernels
from pypto.backend.targets import default_target


def block_shape(block_size: int, block_dims: tuple[int, ...],
                max_lanes: int = 0) -> int | tuple[int, ...]:
    """The block the barrier passes analyse: `block-dims` (x, y, z) when given, else
    `block-size` lanes whose split into dimensions is unknown. Raises ValueError otherwise.
    `max_lanes` (0: the default target's) bounds the lanes of a block."""
    limit = max_lanes or default_target().max_block_lanes
    if block_dims:
        if len(block_dims) > 3 or any(d <= 0 for d in block_dims):
            raise ValueError(f"block-dims must be 1 to 3 positive ints, got {block_dims}")
        lanes = 1
        for d in block_dims:
            lanes *= d
        if lanes > limit:
            raise ValueError(f"block-dims {block_dims} has {lanes} lanes; a block has at most "
                             f"{limit} (the target's max_block_lanes)")
        return tuple(block_dims)
    if not 1 <= block_size <= limit:
        raise ValueError(f"block-size must be between 1 and {limit} (the target's "
                         f"max_block_lanes), got {block_size}")
    return block_size


MAX_OPTION_LANES = 1 << 20
"""Bound on warp-size / max-block-lanes options: the lane analyses enumerate lanes, and a
25-digit warp size overflowed NumPy (found by the fuzzer)."""


@dataclass(frozen=True)
class BlockShapeOptions:
    """The options of the barrier passes (validated on creation): the block (`block-size` /
    `block-dims`) and the machine facts they depend on, `warp-size` and `max-block-lanes`
    (0: the default target's; `pto.compile` sets all of them from the launch and target)."""

    block_size: int = DEFAULT_BLOCK_SIZE
    block_dims: tuple[int, ...] = ()
    warp_size: int = 0
    max_block_lanes: int = 0

    def __post_init__(self) -> None:
        if self.warp_size < 0 or self.max_block_lanes < 0:
            raise ValueError("warp-size and max-block-lanes must be positive (or 0 for the "
                             "default target's)")
        if self.warp_size > MAX_OPTION_LANES or self.max_block_lanes > MAX_OPTION_LANES:
            raise ValueError(f"warp-size and max-block-lanes must be at most {MAX_OPTION_LANES}")
        block_shape(self.block_size, self.block_dims, self.max_block_lanes)

    @property
    def block(self) -> int | tuple[int, ...]:
        return block_shape(self.block_size, self.block_dims, self.max_block_lanes)

    @property
    def warp(self) -> int:
        return self.warp_size or default_target().warp_size


@dataclass(frozen=True)
class VerifyBarriersPass(BlockShapeOptions, ModulePass):
    """Reject L1 hazards between warps, reads of in-flight async copies and divergent barriers.

    The static half of the article's third pitfall: `pto.barrier()` orders only the 32 lanes
    of a warp, so L1 data exchanged between warps needs `pto.barrier_block()`. Reports, as a
    `BarrierError` at the second access with a note at the first:

    * RAW / WAR / WAW on L1 between lanes of different warps with no block barrier (or tile
      instruction) between them on some path, also across loop iterations; exchanges proven
      to stay inside one warp (`buf[lid ^ 1]`) pass under `pto.barrier()`;
    * reading the destination of an `async_load`, or writing the source of an `async_store`,
      before the `pto.wait` of its token (or `pto.wait_all`);
    * a `barrier_block` or tile instruction under lane-dependent control flow.

    Lane indices are evaluated over every lane of a block of `block-size` lanes (or the shape
    `block-dims`), which `pto.compile` sets to the launch's block.
    """

    preserves_analyses: ClassVar[bool] = True  # reads the IR only (pypto.analysis.cache)
    name = "pto-verify-barriers"
    rerun_safe: ClassVar[bool] = True  # a check: re-running it is the point

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            check_kernel(kernel, self.block, self.warp)
