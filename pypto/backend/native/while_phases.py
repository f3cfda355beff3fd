"""Phase splitting of `while` loops that hold a barrier or an L1 write (the plan's side).

A cut (phases.py) inside an `scf.while` makes the loop *block-level*: the grid function runs
it once per block, each phase of its condition region and of its body a lane loop inside it,
as it does for an `scf.for` of uniform bounds (docs/native.md#while-loops). Two cases:

- **Uniform condition** (the same on every lane of a block: a tree reduction's `while s > 0`,
  CUDA's bitonic `for (j = k >> 1; j > 0; j >>= 1)`): the grid's `while` evaluates the
  condition itself. Carried values that stay uniform live in the grid; the others in spill
  slots, as a block-level `for` carries them.
- **Lane-dependent condition** (a SIMT loop: `for i in range(tid, n, BLOCK)` storing into L1):
  lanes leave after different numbers of trips, as in the interpreter's masked loop
  (docs/language.md#loops-are-simt-loops). Each lane keeps an *active* flag in a spill slot;
  every phase of the loop runs under it (a guard, like a lane-dependent `if`'s), the condition
  phase sets it to the lane's condition, and the grid's `while` runs trips while some lane of
  the block is active — the interpreter's `while True: ...; _m = _m & c; if no lane: break`,
  per block. Every carried value then lives in a slot; a lane's results are the values its
  condition passed on its last trip (the interpreter's `_loop_exit`).

The grid's loop counts trips against the interpreter's watchdog (PYPTO_MAX_TRIPS, the
`timeout=`): the interpreter counts one trip per condition evaluation of its lane vector, the
most any lane needs, and so does a block here (while_codegen.py).

A `pto.barrier()` under lane-dependent control (inside such a loop or a lane-dependent `if`)
is checked as the interpreter checks it: every warp of the block reaches it whole or not at
all, else the interpreter's `DeadlockError` (`BarrierCheck`: a phase marks the lanes that
reach it, the grid counts them per warp). `pto.barrier_block()` there is a compile-time error
(the frontend's uniformity check) and a block-level instruction needs every lane, so both stay
refused by the plan's rules for guards.

The condition region is split as the body is: its phases run under the same guards, then a
copy phase passes its values on (and sets the active flag); a barrier, an L1 write or an async
copy (waited before the condition is decided: tokens.py) may stand there, as in a helper
`while step(buf, s):` that does a tree step and its barrier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import scf
from xdsl.dialects.builtin import i1
from xdsl.ir import Block, Operation, SSAValue

from pypto.diagnostics import op_location
from pypto.dialects import pto

if TYPE_CHECKING:
    from pypto.backend.native.phases import Item, Plan

Guards = tuple[tuple[SSAValue, bool], ...]
ORDER_ONLY_ATTR = "pto.native_order_only"
"""On a `pto.barrier` the native backend inserted only to order lanes (guarded_interchange.py):
no check, the kernel as written has no barrier there."""


@dataclass
class While:
    """A block-level `scf.while` (see the module doc)."""

    op: scf.WhileOp
    divergent: bool  # the condition differs between lanes: `active` guards its phases
    active: SSAValue | None  # the key of the lanes' active-flag slot (divergent only)
    lane_before: list[int]  # before-region arguments carried per lane (slots)
    lane_after: list[int]  # after-region arguments (and results) carried per lane
    before: list["Item"]  # the condition region's phases
    body: list["Item"]
    guards: Guards  # around the loop
    inner: Guards  # of the phases inside it (`guards`, then the active flag)


@dataclass
class BarrierCheck:
    """`pto.barrier()` under lane-dependent `guards`: the lanes reaching it are marked in slot
    `reached`, and a warp partly marked is the interpreter's deadlock (while_codegen.py)."""

    op: pto.BarrierOp
    guards: Guards
    reached: SSAValue  # the key of the marks' slot (no op defines it)


def barrier_check(op: pto.BarrierOp, guards: Guards,
                  kernel: Operation) -> BarrierCheck | None:
    """The check of a `pto.barrier()` the kernel has under `guards`; None for one the
    native backend inserted to order lanes, or one whose enclosing conditions the uniformity
    analysis proves the same on every lane of a warp (`if get_warp_id() == 0:`: whole warps
    reach it or none, nothing to check)."""
    from pypto.analysis.uniformity import divergent_condition, warp_varying_values

    if ORDER_ONLY_ATTR in op.attributes:
        return None
    varying = warp_varying_values(kernel)  # type: ignore[arg-type]
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if divergent_condition(parent, varying) is not None:
            return BarrierCheck(op, guards, Block(arg_types=[i1]).args[0])
        parent = parent.parent_op()
    return None


def _token(v: SSAValue) -> bool:
    return isinstance(v.type, pto.TokenType)


def fixpoint_step(plan: "Plan", op: scf.WhileOp) -> bool:
    """One round of the plan's fixpoint for `op`: whether its condition is lane-dependent,
    and which carried values are per lane. True when something changed."""
    before, after = op.before_region.block, op.after_region.block
    condition = before.last_op
    assert isinstance(condition, scf.ConditionOp)
    yield_op = after.last_op
    changed = False
    if op not in plan.split_whiles and not plan.uniform(condition.condition):
        plan.split_whiles.add(op)
        changed = True
    divergent = op in plan.split_whiles
    for i, arg in enumerate(before.args):
        if arg in plan.lane_args or _token(arg):
            continue
        if divergent or not plan.uniform(op.arguments[i]) or \
                not plan.uniform(yield_op.operands[i]):
            plan.lane_args.add(arg)
            changed = True
    for i, arg in enumerate(after.args):
        if arg in plan.lane_args or _token(arg):
            continue
        if divergent or not plan.uniform(condition.args[i]):
            plan.lane_args.add(arg)
            changed = True
    return changed


def arg_uniform(plan: "Plan", op: scf.WhileOp, v: SSAValue) -> bool:
    """Is a region argument of the block-level `while` `op` uniform?"""
    return op not in plan.split_whiles and v not in plan.lane_args


def result_uniform(plan: "Plan", op: scf.WhileOp, index: int) -> bool:
    """Is result `index` of the block-level `while` `op` uniform (its after-region argument,
    the value the condition passed on the last trip)?"""
    return arg_uniform(plan, op, op.after_region.block.args[index])


def build(plan: "Plan", op: scf.WhileOp, guards: Guards) -> While:
    """The `While` item of `op` (its regions' phases built by `plan`)."""
    divergent = op in plan.split_whiles
    active: SSAValue | None = None
    inner = guards
    if divergent:
        active = Block(arg_types=[i1]).args[0]  # a slot key no op defines
        inner = (*guards, (active, True))
    before, after = op.before_region.block, op.after_region.block
    return While(op, divergent, active,
                 [i for i, a in enumerate(before.args) if a in plan.lane_args],
                 [i for i, a in enumerate(after.args) if a in plan.lane_args],
                 plan._build(before, inner), plan._build(after, inner), guards, inner)
