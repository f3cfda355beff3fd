"""Cache-sized vectors (grid mode; docs/interpreter.md, "More plan kinds"): a kernel whose
generated code makes many passes over the same lane data (`plan.passes`) runs on lane vectors
of `plan.CACHE_LANES` lanes, so its per-lane temporaries stay in the CPU's cache from one pass
to the next.

- planner: `match` decides on the kernel, counting the passes of the code the other kinds
  decided (not the address arithmetic left out, not the ramps kept as bases);
- emission: none; the executor reads `Decision.lanes` (`GeneratedKernel.vector_lanes`);
- run time: the executor's chunking.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.ir import Operation

from pypto.backend.interpreter.codegen_loops import _is_address
from pypto.backend.interpreter.modes import GRID
from pypto.backend.interpreter.plan import vector_lanes
from pypto.backend.interpreter.strategies import base, planned_view, ramp
from pypto.dialects.traits import offset_base


@dataclass(frozen=True)
class Decision(base.Decision):
    """Run grid-mode lane vectors of this many lanes."""
    lanes: int


def match(op: Operation, facts: base.Facts) -> Decision | None:
    if not base.is_kernel(op) or facts.mode != GRID:
        return None
    uniform = facts.uniform

    def varying(inner: Operation) -> bool:
        """Does the generated code make a pass over the lane vector for `inner`? (a per-lane
        value computed, or stored; not the address arithmetic the plan leaves out or the
        ramps it computes without arrays)"""
        if facts.decided(inner, planned_view.Dead) or offset_base(inner) is not None or \
                isinstance(inner, scf.YieldOp | func.ReturnOp):
            return False
        if inner.results:
            return any(r not in uniform and ramp.base_of(facts, r) is None
                       for r in inner.results)
        return any(x not in uniform for x in inner.operands)
    lanes = vector_lanes(list(op.body.block.ops), varying,  # type: ignore
                         lambda inner: any(_is_address(x.type) and x not in uniform
                                           for x in inner.operands))
    return Decision(lanes) if lanes is not None else None
