"""One value for every block (docs/interpreter.md, "Adding an access kind": the worked example).

A planned read in which every lane of a block reads one address (conv taps staged in L1,
`w + k`) is a view with a zero stride along the block's lanes: one element per block. When all
the vector's blocks hold the same bits there (the sign of zero and NaN payloads included) the
read is that element, a scalar, instead of an array of the element repeated for every lane
(what the arithmetic after it does with a scalar gives the same bits). Whether the blocks agree
is data, so that check stays at run time (`one_value`): one comparison over one element per
block.

- planner: `match` picks planned loads whose forms vary with the block ids at most;
- emission: none of its own (the load is a planned access, `_ctx.planned.load_plan`);
- run time: `PlannedViews.load_plan` (views.py) calls `one_value` with this Decision when its
  view has a zero stride; without a Decision (fast paths off) the view is read as an array, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import lane_reads_memory, writes_memory


@dataclass(frozen=True)
class Decision(base.Decision):
    """A broadcast read may be one scalar when every block holds the same bits."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A planned lane read (not a read-modify-write) whose every part varies with the block
    ids at most: every lane of a block reads one address."""
    plan = facts.planned.get(op)
    if plan is None or not lane_reads_memory(op) or writes_memory(op):
        return None
    if all(sym in ("b0", "b1", "b2") for f, _ in plan.parts for sym, _ in f.coef):
        return Decision()
    return None


def one_value(decision: Decision, v: np.ndarray, strides: list[int], blocks: int) -> Any:
    """The element every lane of view `v` reads, as a scalar of its dtype, when its distinct
    elements (the axes of nonzero stride) are at most one per block (`blocks` of them) and all
    hold the same bits (NaN payloads and the sign of zero included); else None."""
    sub = v[tuple(slice(None) if s else 0 for s in strides)]
    if sub.size > blocks or sub.size * 8 > v.size or v.dtype.itemsize not in (1, 2, 4, 8):
        return None
    first = sub.reshape(-1)[:1]
    bits = np.dtype(f"u{v.dtype.itemsize}")
    if sub.size > 1 and not (sub.view(bits) == first.view(bits)[0]).all():
        return None
    return first[0]
