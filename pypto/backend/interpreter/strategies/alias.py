"""Values that alias memory: a load's result (or a branch's) may be a view of the buffer
instead of a copy when every use of it comes before any later instruction that may write
memory (or is a plain operand of that instruction, read before it writes).

- planner: `match` decides, per `scf.if` with results, which of them may be views (a lane
  load's own flag is its access kind's, from `view_safe`);
- emission: the branch's merge passes the flag (`lanes.merge` then keeps the side every lane
  took without copying it; see the `merge_sides` kind);
- run time: none beyond the flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator

from pypto.analysis.uniformity import walk
from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import writes_memory


@dataclass(frozen=True)
class Decision(base.Decision):
    """Per result of the branch: may it be a view of memory?"""
    views: tuple[bool, ...]


def match(op: Operation, facts: base.Facts) -> Decision | None:
    if isinstance(op, scf.IfOp) and op.results:
        return Decision(tuple(view_safe(r) for r in op.results))
    return None


def view_safe(value: SSAValue) -> bool:
    """Can `value` (a load's result, or a branch's) alias memory (a slice view) instead of
    being a copy? Yes when every use of it in its block happens before any later
    instruction that may write memory, or in that very instruction as a plain operand."""
    load = value.owner
    assert isinstance(load, Operation)
    block = load.parent_block()
    if block is None:
        return False
    pending = {use.operation for use in value.uses}
    for user in pending:
        # Yielded out of a loop body or a stage, the value lives on past its block (into the
        # next iteration, or as the region's result) where memory may have changed. Yielded
        # out of an scf.if it becomes the branch's result, which `merge` copies.
        if user.has_trait(IsTerminator) and not isinstance(user.parent_op(), scf.IfOp):
            return False
    op = load.next_op
    while op is not None and pending:
        contained = {o for o in walk([op]) if o in pending}
        writes = any(writes_memory(o) for o in walk([op]))
        if writes and (op.regions or contained != pending or not contained):
            return False
        pending -= contained
        op = op.next_op
    return not pending
