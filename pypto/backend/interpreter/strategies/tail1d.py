"""1-D tails (docs/interpreter.md, "Tails"): a launch whose last block is partial
(`n = 2^20 + 77` with blocks of 256) would run every vector under the mask `i < n`. A test
`global id < n` (however the id is written; `<`, `<=`, flipped, or negated as in the early
return `if i >= n: return`; `n` a kernel argument; grid and batch modes, 1-D launches) marks
where the launch's lanes change sides, and the executor cuts the lane vectors there, on block
boundaries: the whole blocks below `n` run unmasked (slices, planned views), the partial block
as a small vector of its own, the blocks above it apart (nothing runs there).

- planner: `match` decides `Bound(argument, adjust)` for such a comparison (one the ramp kind
  compares on the ramp);
- emission: none (the comparison is the ramp kind's; the executor reads the bounds,
  `bounds(plan)`);
- run time: `cut(decision, ...)` recomputes the cut per launch from the argument, so a cached
  launch shape with another `n` is cut in the right place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import BlockArgument, Operation

from pypto.backend.interpreter.modes import BATCH, GRID
from pypto.backend.interpreter.strategies import base, ramp
from pypto.dialects.traits import launch_id

TAIL_SPLIT_MIN_LANES = 1 << 13
"""A tail cut costs one more lane vector (~20 us of CPU); measured on axpy and gather with
n = 2^k + 77, it pays from 2^14 lanes (0.9x of one masked vector; 0.5-0.7x at 2^17, ~0.1x at
2^20) and not below 2^13 (1.15-1.3x at 2^10-2^12)."""


@dataclass(frozen=True)
class Decision(base.Decision):
    """Lanes at or above `args[argument] + adjust` (the global id) fail the kernel's tail
    test, those below pass it."""
    argument: int
    adjust: int


Bound = Decision


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A test `x < u`, `x <= u` (or `x >= u`, `x > u`) the ramp kind compares on the ramp,
    with x the global id (however written) and u a kernel scalar argument."""
    cmp = facts.decision(op, ramp.Compare)
    if cmp is None or facts.mode not in (GRID, BATCH) or not facts.one_d or \
            facts.instrumented or cmp.sym not in ("<", "<=", ">=", ">"):
        return None
    x, u = cmp.x, cmp.u
    owner = x.owner
    value = ramp.base_of(facts, x)
    gid = isinstance(owner, Operation) and (
        launch_id(owner) == "global_id" and owner.dim_index == 0 or  # type: ignore
        value is not None and value.promoted is not None and
        (value.promoted[0], value.promoted[1]) == ({}, "_ctx.first_lane"))
    body = facts.kernel.body.block  # type: ignore[union-attr]
    if gid and isinstance(u, BlockArgument) and u.owner is body and \
            isinstance(u.type, IntegerType | IndexType):
        return Decision(u.index, 1 if cmp.sym in ("<=", ">") else 0)
    return None


def bounds(decisions: dict[Operation, tuple[base.Decision, ...]]) -> tuple[Decision, ...]:
    """The plan's distinct bounds, in the kernel's order (the executor cuts at the first)."""
    out: list[Decision] = []
    for found in decisions.values():
        for d in found:
            if isinstance(d, Decision) and d not in out:
                out.append(d)
    return tuple(out)


def cut(decision: Decision, vectors: list[tuple[int, int]], args: list[Any],
        grid: tuple[int, int, int], block: tuple[int, int, int]) -> list[tuple[int, int]]:
    """The lane vectors (first lane, count) of a launch, cut where `decision`'s test turns
    lanes off: the whole blocks below the bound as vectors of their own (the test passes on
    every lane: no mask), the partial block as a small vector of its own, and the blocks above
    it apart again (the test fails on every lane: nothing runs). Cuts fall on block
    boundaries, as the chunks' do, so blocks (and their L1) stay whole; a cut is made only
    when the part it frees from the mask has TAIL_SPLIT_MIN_LANES lanes."""
    limit = int(args[decision.argument]) + decision.adjust
    block_lanes = block[0] * block[1] * block[2]
    total = grid[0] * grid[1] * grid[2] * block_lanes
    if not 0 < limit < total:
        return vectors
    at = limit - limit % block_lanes
    out = []
    for first, count in vectors:
        end = first + count
        if first < at < end and at - first >= TAIL_SPLIT_MIN_LANES:
            out.append((first, at - first))  # whole blocks: the test passes on every lane
            first = at
        above = at + block_lanes if limit % block_lanes else at
        if first < above < end and end - above >= TAIL_SPLIT_MIN_LANES:
            out.append((first, above - first))  # the partial block
            first = above
        out.append((first, end - first))
    return out
