"""Planned views (docs/interpreter.md, "The access planner"): a lane load or store whose
address plan.py finds affine in the lane symbols (local and block ids, warp, lane in the warp),
and no ramp or row takes, runs as one strided view of the buffer over the vector's box
(slices, strided rows, stride-0 broadcasts, N-D tiles alike); a comparison of such a form with
a uniform bound is decided on the box (`form_cmp`), a bulk copy's address that varies with the
block ids only is computed once per block (`block_offset`), and the address arithmetic only
these used is left out (`Dead`).

- planner: `match` decides `Access` (its `PlanOp` when the store computes `a op b` of two
  planned loads), `Compare` and `BlockAddress`; `finish` the `Dead` ops and the `PlanOp`s;
- emission: each Decision's `load` / `store` / `emit` / `compare` / `copy_address`;
- run time: the lane context's part `planned` (views.py `PlannedViews`, with its `stores`
  and `forms`) checks what depends on data (the view inside the
  buffer, no wrap-around, stores without colliding lanes, the mask's window) and takes the
  general path, with offsets computed from the same forms, when it does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from pypto.analysis.uniformity import walk
from pypto.backend.interpreter.modes import BATCH
from pypto.backend.interpreter.optables import _CMP, _CMP_SIGNED, _FLIP
from pypto.backend.interpreter.plan import AccessPlan, dead_ops
from pypto.backend.interpreter.strategies import base, ramp, rows
from pypto.dialects.traits import CopyFootprint, has_tile_footprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """Base of this kind's decisions."""


@dataclass(frozen=True, eq=False)
class Access(Decision):
    """A lane load, store or fma through the forms of `plan` (`load_plan` / `store_plan`;
    `view`: a load may return the view itself, no write happening while it is alive)."""
    plan: AccessPlan
    view: bool = False
    plans_access = True  # what `Facts.planned` collects

    def load(self, gen: Any, op: Operation, site: int) -> str:
        return (f"_ctx.planned.load_plan({gen.name(self.plan.root)}_b, {self.plan.source()}, _m, "
                f"{site}, {self.view})")

    def store(self, gen: Any, op: Operation, value: str, site: int) -> str:
        return (f"_ctx.planned.stores.store_plan({gen.name(self.plan.root)}_b, "
                f"{self.plan.source()}, {value}, _m, {site})")


@dataclass(frozen=True, eq=False)
class PlanOp(Decision):
    """`p[...] = q[...] op r[...]` through three planned views (the warp-synchronous tree's
    `red + warp * 32 + lane`): one ufunc over the views (`plan_op`)."""
    a: Operation
    b: Operation
    planned: tuple[AccessPlan, AccessPlan, AccessPlan]  # the store's, a's, b's

    def emit(self, gen: Any, op: Operation) -> None:
        from pypto.backend.interpreter.optables import _STORE_UFUNCS
        a, b = self.a, self.b
        ufunc = _STORE_UFUNCS[type(op.operands[0].owner)]
        block = op.parent_block()
        assert block is not None
        a_first = block.get_operation_index(a) < block.get_operation_index(b)
        pd, pa, pb = self.planned
        gen.emit(f"_ctx.planned.stores.plan_op({gen.name(pd.root)}_b, {pd.source()}, {ufunc}, "
                 f"{gen.name(pa.root)}_b, {pa.source()}, {gen.name(pb.root)}_b, "
                 f"{pb.source()}, _m, {gen.site(a)}, {gen.site(b)}, {gen.site(op)}, "
                 f"{a_first})")


@dataclass(frozen=True, eq=False)
class Compare(Decision):
    """`form OP u` (signed; u uniform) evaluated on the vector's box (`form_cmp`), without
    the lanes when the outcome is the same on all."""
    form: Any  # affine.Form
    width: int
    u: SSAValue
    sym: str

    def compare(self, gen: Any, op: Operation) -> str:
        return (f"_ctx.planned.forms.form_cmp({self.sym!r}, ({self.form.source()}, {self.width}), "
                f"{gen.name(self.u)})")


@dataclass(frozen=True, eq=False)
class BlockAddress(Decision):
    """A bulk copy's address operands (index -> plan) that vary with the block ids only:
    each block's offset from the forms (`block_offset`), batch mode."""
    plans: tuple[tuple[int, AccessPlan], ...]

    def copy_address(self, gen: Any, op: Operation, index: int) -> str | None:
        plan = dict(self.plans).get(index)
        if plan is None:
            return None
        return f"{gen.name(plan.root)}_b, _ctx.planned.forms.block_offset({plan.source()})"


@dataclass(frozen=True)
class Dead(base.NoCode):
    """Pure address arithmetic that only planned accesses, promoted values and box
    comparisons used: they compute their addresses from the forms, so it is not emitted."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    planner = facts.planner
    if planner is None:
        return None
    fn = ramp._kernel_fn(op)
    if fn in ("load", "store", "fma") and not has_tile_footprint(op):
        if facts.decided(op, rows.RowOp):
            return None
        if ramp._is_lane_store(op) and isinstance(op.operands[0].owner, Operation) and \
                facts.decided(op.operands[0].owner, base.Fused):
            return None  # computed into a ramp's slice (ramp.StoreOp)
        ptr = op.operands[ramp.lane_address(op)]
        if ramp.base_of(facts, ptr) is not None:
            return None  # a ramp or a row
        plan = planner.plan(ptr)
        if plan is None:
            return None
        return Access(plan, view=ramp._view_flag(op) is True)
    if facts.mode == BATCH and op.has_trait(CopyFootprint):  # a bulk copy
        found = tuple((index, plan) for index in (0, 1)
                      if (plan := planner.block_plan(op.operands[index])) is not None)
        return BlockAddress(found) if found else None
    if isinstance(op, arith.CmpiOp) and op.results[0] not in facts.uniform:
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        lhs, rhs = op.operands
        if pred not in _CMP_SIGNED or ramp.base_of(facts, lhs) is not None or \
                ramp.base_of(facts, rhs) is not None:
            return None  # the ramp's and rows' comparisons take those
        if rhs in facts.uniform:
            x, u, sym = lhs, rhs, _CMP[pred]
        elif lhs in facts.uniform:
            x, u, sym = rhs, lhs, _FLIP[_CMP[pred]]
        else:
            return None
        form = planner.form(x)
        if form is not None and not form.uniform:
            return Compare(form, ramp._int_width(x.type), u, sym)
    return None


def finish(facts: base.Facts) -> None:
    """After every op was asked: the address arithmetic now dead (`Dead`), then the planned
    stores of `a op b` of two planned loads (`PlanOp`; the loads and the arithmetic `Fused`).
    Not in the instrumented variant, whose hooks report every value."""
    if facts.instrumented or facts.kernel is None:
        return
    planner = facts.planner
    walked = list(walk(list(facts.kernel.body.block.ops)))
    planned = {op: d for op in walked if (d := facts.decision(op, Access)) is not None}
    promoted = {op: d.promoted for op in walked
                if (d := facts.decision(op, ramp.Value)) is not None and d.promoted is not None}
    cmps = {op: d for op in walked if (d := facts.decision(op, Compare)) is not None}
    blocks = {(op, index): plan for op in walked
              if (d := facts.decision(op, BlockAddress)) is not None for index, plan in d.plans}
    if planned or promoted or cmps or blocks:
        names = {n for d in planned.values() for n in d.plan.leaves()}
        names.update(n for p in blocks.values() for n in p.leaves())
        names.update(leaf for rest, _ in promoted.values() for m in rest for leaf in m)
        leaves = {planner.leaf_values[n] for n in names if n in planner.leaf_values}
        for d in cmps.values():
            leaves.update(planner.leaf_values[leaf] for leaf in d.form.leaves()
                          if leaf in planner.leaf_values)
            leaves.add(d.u)

        def virtual(user: Operation, index: int) -> bool:
            return user in planned and index == ramp.lane_address(user) or \
                user in promoted or user in cmps or (user, index) in blocks
        dead = dead_ops(walked, virtual, leaves)
        for op in walked:  # in the kernel's order
            if op in dead:
                facts.add(op, Dead())
    for op, d in planned.items():
        if not ramp._is_lane_store(op):
            continue
        loads = rows.row_operands(op, lambda load: load in planned)
        if loads is not None:
            facts.add(op.operands[0].owner, base.Fused())  # type: ignore[arg-type]
            for load in loads:
                facts.add(load, base.Fused())
            a, b = loads
            facts.add(op, PlanOp(a, b, (d.plan, planned[a].plan, planned[b].plan)))
