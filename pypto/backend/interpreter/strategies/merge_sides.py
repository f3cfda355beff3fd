"""A branch's result is the side every lane took, not a `where()` over both: codegen emits
`_merge` with both sides' masks, and `lanes.merge` returns that side when one mask is `None`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base


@dataclass(frozen=True)
class Decision(base.Decision):
    """Every branch of the kernel may return the side every lane took."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """Kernel-wide: decided on the kernel itself."""
    return Decision() if base.is_kernel(op) else None
