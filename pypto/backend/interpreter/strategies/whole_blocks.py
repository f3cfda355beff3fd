"""Ids of a vector of whole blocks (grid and batch modes) as one block's pattern repeated
(`LaneContext.local_id` / `block_id` / `global_id`, shared per shape through
`RunCache.geometry`), instead of `//` and `%` over every lane."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base


@dataclass(frozen=True)
class Decision(base.Decision):
    """A vector of whole blocks computes its ids from per-block patterns."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """Kernel-wide: decided on the kernel itself."""
    return Decision() if base.is_kernel(op) else None


def applies(decision: Decision | None, first_lane: int, count: int, block_lanes: int) -> bool:
    """The run-time part: does a vector (first lane, count) of this launch hold whole blocks,
    more than one? (One block's ids are the general path's anyway.)"""
    return decision is not None and first_lane % block_lanes == 0 and \
        count % block_lanes == 0 and count > block_lanes
