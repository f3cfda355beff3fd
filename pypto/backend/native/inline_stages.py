"""`pto.pipeline` and `pto.stage` for the native backend: their regions inlined in program order.

A pipeline's stages run in program order (docs/language.md#pipelines): the interpreter inlines
every region (codegen_regions.py `op_pto_pipeline` / `op_pto_stage`), the stage names and
`after` lists only guide `pto-double-buffer` and the cost model. `inline_pipelines` does the
same on a copy of the kernel before the native pipeline: each region's ops move in front of
its op, the results become the operands of its `pto.yield`. A kernel compiled without
`pto-double-buffer` (`pto.compile(..., pipeline="pto-allocate-l1,...")`) then lowers like any
other; the copies' tokens are checked by tokens.py as usual.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from pypto.dialects import pto

_REGION_OPS = (pto.PipelineOp, pto.StageOp)


def inline_pipelines(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` without `pto.pipeline` / `pto.stage` (the kernel itself if it has
    none)."""
    if not any(isinstance(op, _REGION_OPS) for op in kernel.walk()):
        return kernel
    copy = kernel.clone()
    while True:
        # innermost first: a stage's region has no region op of these kinds left
        found = [op for op in copy.walk() if isinstance(op, _REGION_OPS)]
        if not found:
            return copy
        _inline(found[-1])


def _inline(op: Operation) -> None:
    block = op.regions[0].block
    term = block.last_op
    assert isinstance(term, pto.YieldOp), "a pipeline or stage region ends with pto.yield"
    values = list(term.operands)
    term.detach()
    term.erase()
    for result, value in zip(op.results, values):
        result.replace_all_uses_with(value)
    Rewriter.inline_block(block, InsertPoint.before(op))
    op.detach()
    op.erase()

