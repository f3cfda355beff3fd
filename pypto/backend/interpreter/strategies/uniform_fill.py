"""A batch's fill of one value at one offset in every block is one lazy fill (`tiles.LazyFill`),
moved into L1 only when something else needs those bytes. "All values equal" is data: the run
time checks it (`BlockMemory._fill_blocks`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import FillFootprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """A fill whose blocks all fill one value may be lazy."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A fill instruction (its tile footprint is a fill's)."""
    return Decision() if op.has_trait(FillFootprint) else None
