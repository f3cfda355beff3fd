"""`pto.loop_step` compiled: a SIMT loop's run-time step, checked non-zero as the interpreter does.

`for i in range(tid, n, get_block_dim())` (CUDA's block-stride loop) and grid-stride loops pass
their run-time step through `pto.loop_step`, which the interpreter checks on the lanes that
reach it: zero is an error ("the step of this range() is 0 at run time"), and so is a step
that differs between the active lanes of a block (pypto.backend.interpreter.codegen_loops
`loop_step`). A step the uniformity analysis proves the same on every lane of a block can
only fail the first check, which compiled code does per lane where the lane reaches it (every
lane that reaches it sees the same value, so some lane fails exactly when the interpreter's
check does): `lower_steps` replaces the op by its operand after an `arith.divsi 1, step`
marked `STEP_ATTR`, whose divisor the lowering checks for zero like every run-time divisor
(to_llvm.py); the runtime reports that site with the interpreter's message
(jit.py, `NativeKernel._error`; a replay names it anyway, docs/native.md#errors). A step that
may differ between lanes is refused (`refusal`): the interpreter compares the lanes, compiled
lanes run one after another. docs/native.md#while-loops.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, UnitAttr
from xdsl.ir import Operation

from pypto.diagnostics import op_location
from pypto.dialects import pto

STEP_ATTR = "pto.native_loop_step"
"""On the `arith.divsi` standing for a `pto.loop_step`'s zero check."""
ZERO_STEP = ("the step of this range() is 0 at run time: the loop would never end; use a "
             "non-zero step")
"""The interpreter's message (codegen_loops.loop_step, a step the same on every lane)."""


def refusal(op: pto.LoopStepOp, kernel: func.FuncOp) -> str | None:
    """Why `op` is not compiled (None: it is): its operand may differ between lanes."""
    from pypto.analysis.uniformity import varying_values

    if op.step in varying_values(kernel):
        return f"{op_location(op, unknown='here')}: the step of this range() may differ " \
               f"between lanes (the interpreter checks at run time that it is the same on " \
               f"every lane; compiled lanes run one after another)"
    return None


def lower_steps(kernel: func.FuncOp, in_place: bool = False) -> func.FuncOp:
    """`kernel` with every `pto.loop_step` of a uniform step replaced by its checked operand:
    a copy, unless `in_place` (the kernel itself when it has none)."""
    if not any(isinstance(op, pto.LoopStepOp) for op in kernel.walk()):
        return kernel
    copy = kernel if in_place else kernel.clone()
    for op in [o for o in copy.walk() if isinstance(o, pto.LoopStepOp)]:
        if refusal(op, copy) is not None:
            continue  # (left for the support check to refuse)
        step = op.step
        one = arith.ConstantOp(IntegerAttr(1, step.type))
        check = arith.DivSIOp(one.result, step)
        check.attributes[STEP_ATTR] = UnitAttr()
        check.location = op.location
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before([one, check], op)
        op.result.replace_all_uses_with(step)
        op.detach()
        op.erase()
    return copy


def is_step_check(op: Operation) -> bool:
    """Is `op` the zero check `lower_steps` put for a `pto.loop_step`?"""
    return STEP_ATTR in op.attributes
