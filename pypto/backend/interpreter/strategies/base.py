"""What every strategy module shares: the facts it is asked about and the base of its Decision
(see the package docstring, strategies/__init__.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from xdsl.dialects import func
from xdsl.ir import Operation


@dataclass(frozen=True)
class Facts:
    """What a strategy may know about the variant being planned, beside the op itself."""
    mode: str              # modes.GRID / BLOCK / WARP / BATCH
    one_d: bool            # a 1-D grid and block
    instrumented: bool     # hooks report every op's value (no fusion, no code motion)
    planned: Mapping[Operation, Any]  # the access planner's planned accesses (op -> AccessPlan)


class Decision:
    """Base of every strategy's Decision (a frozen dataclass)."""


def is_kernel(op: Operation) -> bool:
    """Is `op` the kernel itself (where kernel-wide strategies are decided)?"""
    return isinstance(op, func.FuncOp)


class Strategy(Protocol):
    """The shape of a strategy module."""
    Decision: type[Decision]

    def match(self, op: Operation, facts: Facts) -> Decision | None: ...
