"""A gather under a mask that leaves few lanes active selects those lanes first, gathers them and
scatters the values back (zeros elsewhere: an inactive lane's value is never used)
(`lane_memory.LaneMemory.load`). Which lanes are active is data: the run time checks `LaneContext.sparse`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base


@dataclass(frozen=True)
class Decision(base.Decision):
    """Masked gathers may select their active lanes first."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """Kernel-wide: decided on the kernel itself."""
    return Decision() if base.is_kernel(op) else None
