"""SIMT `for` loops: an `scf.for` whose start or stop differs between lanes becomes `scf.while`.

The frontend lowers `for x in range(start, stop, step)` with a compile-time step to `scf.for`
(uniform loops stay exactly as fast as before). Whether a bound differs between lanes is only
known once the whole kernel is built (the uniformity analysis is a fixpoint over loops), so this
step runs after lowering: each such loop is rewritten to

    scf.while (%iv = %lb, %args = %inits) {          // each lane leaves at its own bound
      %c = arith.cmpi slt, %iv, %ub
      scf.condition(%c) %iv, %args
    } do {
    ^bb0(%iv, %args):
      <body>
      %next = arith.addi %iv, %step
      scf.yield %next, <yields>
    }

which the interpreter runs with masks (a lane whose condition fails is masked off; the loop ends
when no lane is left), CUDA's grid-stride loop among them. Rewriting a loop can make values that
depend on its results varying, so the search repeats until no varying-bound `scf.for` is left.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.ir import Block, Region
from xdsl.rewriter import Rewriter

from pypto.analysis.cache import invalidate
from pypto.analysis.uniformity import varying_values, walk


def convert_divergent_for_loops(kernel: func.FuncOp) -> int:
    """Rewrite every `scf.for` of `kernel` whose bounds may differ between lanes; returns how
    many were rewritten."""
    count = 0
    if not any(isinstance(op, scf.ForOp) for op in walk(kernel.body.block.ops)):
        return count  # nothing to look at (no uniformity analysis for a loop-free kernel)
    while True:
        # cached: when nothing is rewritten, the frontend's uniformity check reuses it
        varying = varying_values(kernel)
        loops = [op for op in walk(kernel.body.block.ops)
                 if isinstance(op, scf.ForOp) and (op.lb in varying or op.ub in varying)]
        if not loops:
            return count
        for loop in loops:
            _to_while(loop)
            count += 1
        invalidate(kernel)


def _to_while(loop: scf.ForOp) -> None:
    body = loop.body.block
    iv_type = loop.lb.type
    arg_types = [iv_type] + [a.type for a in loop.iter_args]
    loc = loop.location

    cond_block = Block(arg_types=arg_types)
    cmp = arith.CmpiOp(cond_block.args[0], loop.ub, "slt")
    condition = scf.ConditionOp(cmp, *cond_block.args)
    for op in (cmp, condition):
        op.location = loc
        cond_block.add_op(op)

    after = Block(arg_types=arg_types)
    for old, new in zip(body.args, after.args):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for arg in cond_block.args:
        arg.name_hint = None
    terminator = body.last_op
    assert isinstance(terminator, scf.YieldOp)
    for op in list(body.ops):
        if op is terminator:
            continue
        op.detach()
        after.add_op(op)
    step = arith.AddiOp(after.args[0], loop.step)
    step.location = loc
    after.add_op(step)
    new_yield = scf.YieldOp(step.results[0], *terminator.operands)
    new_yield.location = terminator.location
    after.add_op(new_yield)
    terminator.detach()
    terminator.erase()

    result_types = arg_types
    while_op = scf.WhileOp([loop.lb, *loop.iter_args], result_types, Region(cond_block),
                           Region(after))
    while_op.location = loc
    for old, new in zip(loop.results, while_op.results[1:]):
        new.name_hint = old.name_hint
    Rewriter.replace_op(loop, while_op, [*while_op.results[1:]])
    while_op.results[0].name_hint = None  # the counter: not a user variable after the loop
    for old_hint, new in zip([r.name_hint for r in while_op.results[1:]], while_op.results[1:]):
        new.name_hint = old_hint
