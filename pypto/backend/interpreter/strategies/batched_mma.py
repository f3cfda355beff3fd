"""A batch's `mma` at one offset in every block is one batched matmul over the blocks
(`BlockMemory._mma_batched`), reading lazy HBM tiles in place. Whether every block uses one
offset is data: the run time checks it."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import LoadMmaFootprint, MmaFootprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """An mma whose blocks share its offsets may run as one batched matmul."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A matrix multiply on tiles (its tile footprint is an mma's)."""
    return Decision() if op.has_trait(MmaFootprint) or op.has_trait(LoadMmaFootprint) else None
