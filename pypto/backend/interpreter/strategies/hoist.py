"""Loop-invariant code motion: pure arithmetic and comparisons of an `scf.for` body whose
operands all come from outside the loop (the frontend re-derives `x < n` and `row0 + ty` in
every iteration; each is a pass over the lanes per trip) are computed once, before the loop.
None of them can fail, so a loop that runs zero times changes nothing.

- planner: `match` decides, per loop, the ops to hoist (not in the instrumented variant,
  whose hooks see every op where the program has it; not an op a store computes into its
  slice, `Fused`);
- emission: codegen's loop emits `Decision.ops` before the loop and skips them inside;
- run time: none.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from pypto.backend.interpreter.optables import _ARITH_BINARY
from pypto.backend.interpreter.strategies import base


@dataclass(frozen=True, eq=False)
class Decision(base.Decision):
    """These ops of the loop's body (in order) are computed once, before the loop."""
    ops: tuple[Operation, ...]


def match(op: Operation, facts: base.Facts) -> Decision | None:
    if not isinstance(op, scf.ForOp) or facts.instrumented:
        return None
    body = op.body.block
    inside: set[SSAValue] = set(body.args)
    hoisted: list[Operation] = []
    for inner in list(body.ops)[:-1]:
        pure = (type(inner) in _ARITH_BINARY or isinstance(inner, arith.CmpiOp | arith.CmpfOp)
                or isinstance(inner, arith.ConstantOp))
        if pure and not facts.decided(inner, base.Fused) and not inner.regions and \
                not any(v in inside for v in inner.operands):
            hoisted.append(inner)
        else:
            inside.update(inner.results)
    return Decision(tuple(hoisted)) if hoisted else None
