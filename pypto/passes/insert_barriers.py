"""`pto-insert-barriers`: make a kernel's L1 accesses race-free between warps with the fewest
`pto.barrier_block`s, and drop the block barriers that order nothing (docs/barriers.md#pto-insert-barriers)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from pypto.analysis.barrier_report import Hazard, condition_op, divergent_parent, where
from pypto.analysis.barriers import BarrierAnalysis, kernels, lane_space
from pypto.analysis.uniformity import walk
from pypto.dialects import pto
from pypto.dialects.traits import sync_scope
from pypto.errors import BarrierError
from pypto.diagnostics import attach_op
from pypto.passes.verify_barriers import BlockShapeOptions


def _ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of `block` that is `op` or contains it, or None."""
    current: Operation | None = op
    while current is not None:
        if current.parent_block() is block:
            return current
        current = current.parent_op()
    return None


class _Repair:
    """The repair of one kernel: insertion (greedy, as interval point cover), then elimination."""

    def __init__(self, kernel: func.FuncOp, block: int | tuple[int, ...], warp_size: int):
        self.kernel = kernel
        self.space = lane_space(block, warp_size)
        self.analysis = BarrierAnalysis(kernel, self.space)
        self.upgraded: set[Operation] = set()

    def run(self) -> None:
        divergence = self.analysis.divergence()
        if divergence is not None:
            raise divergence.error()
        self.insert()
        self.eliminate()

    # -- insertion ------------------------------------------------------------------------------

    def insert(self) -> None:
        """Walk accesses in program order; at the first one that conflicts with open accesses,
        separate it from all of them right before it (the latest point that works: on
        straight-line code this greedy choice gives the fewest barriers), upgrading a
        `pto.barrier` in between if there is one. Repeat until no hazard is left."""
        tried: set[tuple[Operation | None, Operation]] = set()
        while True:
            found = self.analysis.hazards(stop_at_first=True)
            if not found:
                return
            for hazard in found:
                if not hazard.repairable:
                    raise hazard.error()
                if (hazard.first, hazard.second) in tried:
                    raise self._unrepairable(hazard)
            tried.update((h.first, h.second) for h in found)
            self._separate(found[0].second, [h.first for h in found if h.first is not None])

    def _separate(self, second: Operation, firsts: list[Operation]) -> None:
        anchor = divergent_parent(second, self.analysis.model.varying) or second
        block = anchor.parent_block()
        assert block is not None
        ops = list(block.ops)
        at = ops.index(anchor)
        lower = 0
        for first in firsts:
            outer = _ancestor_in(block, first)
            if outer is not None and ops.index(outer) < at:
                lower = max(lower, ops.index(outer) + 1)
        candidates = [op for op in ops[lower:at] if sync_scope(op) == "warp"]
        barrier = pto.BarrierBlockOp()
        if candidates:
            warp_barrier = candidates[-1]
            barrier.location = warp_barrier.location
            block.insert_op_before(barrier, warp_barrier)
            block.erase_op(warp_barrier)
            self.upgraded.add(barrier)
        else:
            barrier.location = second.location
            block.insert_op_before(barrier, anchor)

    def _unrepairable(self, hazard: Hazard) -> BarrierError:
        control = divergent_parent(hazard.second, self.analysis.model.varying)
        why = (f"both accesses are under the lane-dependent condition at "
               f"{where(condition_op(control))}, "
               f"where a block barrier would deadlock; restructure the kernel so that a "
               f"pto.barrier_block() can sit between them in uniform control flow"
               if control is not None else "a barrier_block before the second access does "
               "not separate them")
        error = hazard.error()
        message = f"{error.bare_message}; pto-insert-barriers cannot repair this: {why}"
        located = BarrierError(message, filename=error.filename, line=error.line,
                               col=error.col)
        return attach_op(located, hazard.second, getattr(error, "notes", []))

    # -- elimination ----------------------------------------------------------------------------

    def eliminate(self) -> None:
        """Remove every `barrier_block` whose removal creates no hazard (as MLIR's
        gpu-eliminate-barriers), to a fixed point. HBM accesses count too, so a barrier that
        orders lanes through global memory stays."""
        analysis = BarrierAnalysis(self.kernel, self.space, include_global=True)
        baseline = {h.key for h in analysis.hazards()}
        removed: set[Operation] = set()
        changed = True
        while changed:
            changed = False
            for op in list(walk(self.kernel.body.block.ops)):
                if sync_scope(op) != "block" or op in removed:
                    continue
                keys = {h.key for h in analysis.hazards(disabled=frozenset(removed | {op}))}
                if keys <= baseline:
                    removed.add(op)
                    changed = True
        for op in removed:
            block = op.parent_block()
            assert block is not None
            if op in self.upgraded:  # it was the user's warp barrier: give that back
                warp_barrier = pto.BarrierOp()
                warp_barrier.location = op.location
                block.insert_op_before(warp_barrier, op)
            block.erase_op(op)


@dataclass(frozen=True)
class InsertBarriersPass(BlockShapeOptions, ModulePass):
    """Insert the fewest pto.barrier_block()s that remove L1 hazards between warps; drop useless ones.

    Repairs what `pto-verify-barriers` reports as RAW / WAR / WAW between warps: accesses are
    visited in program order and a conflicting one gets a `barrier_block` right before it (or
    a `pto.barrier` between the two accesses is upgraded), never inside lane-dependent control
    flow (it goes before the outermost divergent `if` instead). Then block barriers that order
    nothing are removed, as MLIR's gpu-eliminate-barriers does. Running it twice changes
    nothing. What no barrier can repair (divergent barriers, in-flight async copies, two warps
    writing one element in one instruction) is reported as `pto-verify-barriers` would.
    """

    name = "pto-insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in list(kernels(op)):
            _Repair(kernel, self.block, self.warp).run()
