"""`convert-scf-to-cf`: xDSL's pass of that name (`scf.if`, `scf.for`, `scf.index_switch`) plus
`scf.while`, which xDSL 0.74 does not lower yet (the SIMT loops of pypto kernels are
`scf.while`). The while lowering is MLIR's (SCFToControlFlow.cpp, `WhileLowering`): the
`before` region becomes the loop header, `scf.condition` a conditional branch to the `after`
region or to the continuation (whose arguments are the loop's results), `scf.yield` a branch
back to the header.

A function holding a `pto.loop_step`'s zero check (an `arith.divsi` whose result nothing uses,
loop_steps.py) is lowered without xDSL's dead-code elimination, which would drop the check.

Functions marked `pto.kernel` are left structured: the pto level (its passes, analyses and the
interpreter) relies on structured control flow; the native pipeline runs this pass after
`pto-simt-to-lanes`, on the lane and grid functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func, scf
from xdsl.dialects.cf import BranchOp, ConditionalBranchOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (GreedyRewritePatternApplier, PatternRewriter,
                                   PatternRewriteWalker, RewritePattern,
                                   op_type_rewrite_pattern)
from xdsl.rewriter import BlockInsertPoint, InsertPoint
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering

from pypto.backend.native.loop_steps import STEP_ATTR


class WhileLowering(RewritePattern):
    """Lowers `scf.while` to a header block, a body and a continuation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        init_block = op.parent_block()
        if init_block is None:
            return
        end_block = init_block.split_before(op, arg_types=[r.type for r in op.results])
        before_first = op.before_region.first_block
        after_first = op.after_region.first_block
        assert before_first is not None and after_first is not None
        condition = op.before_region.last_block.last_op
        yield_op = op.after_region.last_block.last_op
        assert isinstance(condition, scf.ConditionOp) and isinstance(yield_op, scf.YieldOp)
        rewriter.inline_region(op.before_region, BlockInsertPoint.before(end_block))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(end_block))
        rewriter.insert(BranchOp(before_first, *op.arguments), InsertPoint.at_end(init_block))
        rewriter.replace(condition, ConditionalBranchOp(
            condition.condition, after_first, condition.args, end_block,
            condition.args))
        rewriter.replace(yield_op, BranchOp(before_first, *yield_op.operands))
        rewriter.replace(op, [], end_block.args)


@dataclass(frozen=True)
class ConvertScfToCfPass(ModulePass):
    """Lower scf.if/for/while/index_switch to blocks and cf branches (xDSL's pass + while)."""

    name = "convert-scf-to-cf"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns: list[RewritePattern] = [SwitchLowering(), IfLowering(), ForLowering(),
                                          WhileLowering()]
        walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns))
        keep = PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=False))
        for fn in list(op.walk()):
            if isinstance(fn, func.FuncOp) and "pto.kernel" not in fn.attributes:
                checks = any(STEP_ATTR in o.attributes for o in fn.walk())  # (its result is
                (keep if checks else walker).rewrite_region(fn.body)  # unused, its check not)
