"""Lane windows (docs/interpreter.md, "Batch mode: block-local accesses and lane windows"): a
branch whose condition compares block-local ids or the warp number with a uniform bound
(`if tid < s`, `if pto.get_warp_id() == 0`) keeps the same window of every block's lanes
active, so in batch mode it runs on those lanes only (`windows.WindowContext`): per-lane values
go in narrowed and come out widened. A tree reduction's steps then cost in proportion to their
active lanes.

- planner: `match` decides `Branch` for such an `scf.if` whose body only holds ops that follow
  a window (no block-level instruction, atomic, output or global id; a warp barrier may be in
  it) and that yields plain values; inside it only block-local values stay lane-affine (the
  ramp kind asks `Facts.in_window`);
- emission: `Branch.emit_side`: the side becomes a local function called on the window
  (`_window`) with the per-lane values it uses narrowed, or on the whole vector;
- run time: `windows.window` finds the window of the computed mask (data: once per mask
  object) and returns None when it is not narrow enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, math, scf
from xdsl.ir import Block, Operation, SSAValue

from pypto.analysis.uniformity import walk
from pypto.backend.interpreter.codegen_loops import _is_address
from pypto.backend.interpreter.modes import BATCH
from pypto.backend.interpreter.optables import _ARITH_BINARY, _MATH_UNARY
from pypto.backend.interpreter.strategies import base
from pypto.dialects import pto
from pypto.dialects.arith_semantics import INT_BINARY
from pypto.dialects.traits import (
    declared_accesses,
    elementwise_reference,
    is_block_collective,
    launch_id,
    offset_base,
    sync_scope,
)


@dataclass(frozen=True)
class Decision(base.Decision):
    """The branch runs on the window of lanes its condition keeps active."""
    windowed = True  # what `Facts.in_window` looks for

    def emit_side(self, gen: Any, op: Operation, block: Block, mask: str,
                  names: list[str]) -> None:
        """One side of the branch: its body as a local function of the lane vector, the mask
        and the per-lane values it uses, called on the window of lanes the mask keeps
        (`_window`: narrowed values in, widened yields out) or, when the window is not narrow
        enough, on the whole vector."""
        fn, win, res = gen.fresh("_wb"), gen.fresh("w"), gen.fresh("r")
        inputs = [gen.name(v) for v in inputs_of(gen.an, block)]
        ops = list(block.ops)
        gen.emit(f"if {mask} is not False:")
        gen.indent += 1
        gen.emit(f"def {fn}(_ctx, _m{''.join(', ' + n for n in inputs)}):")
        gen.indent += 1
        saved_cse, gen.cse = gen.cse, [{}]  # outer values are not visible narrowed
        gen.windows += 1  # inside, only block-local values stay affine (gen.base)
        for inner in ops[:-1]:
            gen.op(inner)
        gen.windows -= 1
        gen.cse = saved_cse
        term = ops[-1]
        yields = [gen.name(v) for v in term.operands] if isinstance(term, scf.YieldOp) else []
        gen.emit(f"return ({''.join(y + ', ' for y in yields)})")
        gen.indent -= 1
        gen.emit(f"{win} = _window(_ctx, {mask})")
        gen.emit(f"if {win} is None:")
        gen.emit(f"    {res} = {fn}(_ctx, {mask}{''.join(', ' + n for n in inputs)})")
        gen.emit("else:")
        narrowed = "".join(f", {win}[0].narrow({n})" for n in inputs)
        gen.emit(f"    {res} = [{win}[0].widen(x) for x in {fn}({win}[0], {win}[1]{narrowed})]")
        for i, n in enumerate(names):
            gen.emit(f"{n} = {res}[{i}]")
        gen.indent -= 1


Branch = Decision


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A batch-mode branch comparing block-local ids or the warp number with a uniform bound
    (the same lanes of every block pass), whose body follows a window and which yields no
    pointer or token."""
    if not isinstance(op, scf.IfOp) or facts.mode != BATCH or facts.instrumented or \
            not facts.one_d or facts.planner is None:
        return None
    test = op.cond.owner
    if not isinstance(test, arith.CmpiOp):
        return None
    a, b = test.operands

    def banded(v: SSAValue) -> bool:
        # the warp number in the block, or any value affine in local ids / warp / lane only
        # (`tid + s`, `2 * s * tid`, `lane`): the same lanes of every block pass the test
        if isinstance(v.owner, Operation) and launch_id(v.owner) == "warp_id":
            return True
        form = facts.planner.form(v)
        return form is not None and not form.uniform and \
            all(sym in ("l0", "w", "n") for sym in form.coef_polys)
    if not ((banded(a) and b in facts.uniform) or (banded(b) and a in facts.uniform)):
        return None
    if any(_is_address(r.type) or isinstance(r.type, pto.TokenType) for r in op.results):
        return None
    if all(follows_window(inner)
           for inner in walk([o for r in op.regions for b in r.blocks for o in b.ops])):
        return Decision()
    return None


def inputs_of(plan: Any, block: Block) -> list[SSAValue]:
    """Per-lane values defined outside `block` (a windowed branch's side) that its ops use by
    name: they are narrowed to the window's lanes on the way in. (Not those the plan computes
    from ids and uniform values, nor block-local values used through their base only.)"""
    from pypto.backend.interpreter.strategies import planned_view, ramp
    inside: set[SSAValue] = set()
    ops = list(walk(block.ops))
    for inner in ops:
        inside.update(inner.results)
        for region in inner.regions:
            for b in region.blocks:
                inside.update(b.args)
    used: dict[SSAValue, None] = {}
    for inner in ops:
        if plan.decision(inner, planned_view.Dead):
            continue
        access = plan.decision(inner, planned_view.Access)
        virtual = plan.decision(inner, planned_view.Compare) is not None or \
            (d := plan.decision(inner, ramp.Value)) is not None and d.promoted is not None
        for index, v in enumerate(inner.operands):
            if v in inside or v in plan.uniform:
                continue
            if access is not None and index == ramp.lane_address(inner) or virtual:
                continue  # computed from ids and uniform values (plan.py)
            value = plan.value(v)
            if value is not None and value.local and not value.array:
                continue  # used through its uniform base only
            used[v] = None
    return list(used)


_WINDOW_FOREIGN = (scf.IfOp, scf.YieldOp, scf.ForOp, arith.SelectOp, arith.ConstantOp,
                   math.RsqrtOp, math.IPowIOp)


def follows_window(op: Operation) -> bool:
    """May a windowed branch hold `op`? Ops that read ids, memory and values through the lane
    vector follow a window of it: arithmetic, structure, lane loads and stores (one access of
    one kind through its only address operand: not an atomic, not a staged npu access),
    pointer arithmetic, ids other than the global id, the warp barrier; not block
    collectives, atomics or output. Asked of the op's traits, so a new elementwise op
    qualifies by its declaration."""
    if isinstance(op, _WINDOW_FOREIGN) or type(op) in _ARITH_BINARY or \
            type(op) in _MATH_UNARY or op.name in INT_BINARY or op.name.startswith("arith.") \
            or elementwise_reference(op) is not None:
        return True
    ident = launch_id(op)
    if ident is not None:
        return ident != "global_id"
    if offset_base(op) is not None or sync_scope(op) == "warp":
        return True
    addresses = sum(_is_address(o.type) for o in op.operands)
    return not is_block_collective(op) and len(declared_accesses(op)) == 1 and addresses == 1
