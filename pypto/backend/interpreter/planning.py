"""The plan of one kernel variant: the decisions of the access strategies for its ops, which
codegen reads to emit code (see docs/interpreter.md, "The access planner").

`plan_kernel` works out, once per generated variant (mode, 1-D launch, instrumented, fast
paths on), what the strategies (strategies/, one module per access kind) need to know about
the kernel's values — which are uniform (one value per vector), the affine forms of integers
and pointers (plan.py) — and asks every strategy about every op, in the registry's order
(`strategies.decide`). The plan is the resulting mapping op -> decisions, plus which
lane-affine values must also exist as arrays. Codegen inspects no op shape to choose a path:
it asks the op's decisions for its code. `PYPTO_FAST_PATHS=0` asks no strategy: the empty
mapping, structurally the general path (the oracle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from pypto.analysis.uniformity import varying_values, walk
from pypto.backend.interpreter import strategies
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.modes import BATCH, BLOCK, GRID, WARP  # noqa: F401 (re-exported)
from pypto.backend.interpreter.plan import AccessPlan, Planner
from pypto.backend.interpreter.strategies import cache_sized, planned_view, ramp, tail1d


class _Uniform:
    """`v in uniform`: v holds one value for the whole lane vector (a scalar at run time)."""

    def __init__(self, varying: set[SSAValue]):
        self.varying = varying

    def __contains__(self, v: object) -> bool:
        return v not in self.varying


@dataclass
class KernelPlan:
    """The plan of one kernel variant: which values are uniform, and per op the decisions of
    the access strategies, each of which emits its op's code (codegen reads them, never
    decides). No decisions (fast paths off): the general path."""
    uniform: _Uniform = field(default_factory=lambda: _Uniform(set()))
    decisions: dict[Operation, tuple[strategies.Decision, ...]] = field(default_factory=dict)

    def decision(self, op: Operation, kind: type) -> Any:
        """The decision of kind `kind` (a strategy's Decision class) made for `op`, or None."""
        return next((d for d in self.decisions.get(op, ()) if isinstance(d, kind)), None)

    def decides(self, kind: type) -> bool:
        """Did some op get a decision of this kind (a strategy's Decision class)?"""
        return any(isinstance(d, kind) for found in self.decisions.values() for d in found)

    def ops_with(self, kind: type) -> list[Operation]:
        """The ops with a decision of this kind, in the kernel's order."""
        return [op for op, found in self.decisions.items()
                if any(isinstance(d, kind) for d in found)]

    def value(self, v: SSAValue) -> ramp.Value | None:
        """The ramp kind's decision for a lane-affine value (None: an ordinary value)."""
        owner = v.owner
        return self.decision(owner, ramp.Value) if isinstance(owner, Operation) else None

    # read-only views by value, for instruments and tests ----------------------------------

    @property
    def affine(self) -> dict[SSAValue, str]:
        """Lane-affine value -> the generated variable holding its scalar base."""
        return {op.results[0]: d.base for op in self.ops_with(ramp.Value)
                if (d := self.decision(op, ramp.Value)) is not None}

    @property
    def local(self) -> set[SSAValue]:
        """The block-local lane-affine values (the rows kind's)."""
        return {op.results[0] for op in self.ops_with(ramp.Value)
                if self.decision(op, ramp.Value).local}

    @property
    def planned(self) -> dict[Operation, AccessPlan]:
        """The planned accesses: op -> its plan.py AccessPlan."""
        return {op: self.decision(op, planned_view.Access).plan
                for op in self.ops_with(planned_view.Access)}

    @property
    def tail_bounds(self) -> tuple[tail1d.Decision, ...]:
        return tail1d.bounds(self.decisions)

    @property
    def vector_lanes(self) -> int | None:
        """Grid mode: lane vectors of this many lanes (the cache_sized kind), None: default."""
        found = [d for op in self.ops_with(cache_sized.Decision)
                 if (d := self.decision(op, cache_sized.Decision)) is not None]
        return found[0].lanes if found else None


def plan_kernel(kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool,
                name: Callable[[SSAValue], str], fresh: Callable[[str], str],
                fast_paths: bool | None = None) -> KernelPlan:
    """The plan of `kernel` for one generated variant: no decisions when the fast paths are
    off (`fast_paths=False`, or None and `PYPTO_FAST_PATHS=0`, read here once per variant;
    the executor keys variants by it).
    `name(v)` / `fresh(prefix)`: codegen's names for values and fresh variables (the plan
    names the bases of lane-affine values)."""
    plan = KernelPlan(_Uniform(varying_values(kernel, block_ids_uniform=mode in (BLOCK, WARP))))
    if not (FAST_PATHS.on if fast_paths is None else fast_paths):
        return plan  # the empty plan: the general path, no code motion either
    uniform = plan.uniform
    facts = strategies.Facts(mode, one_d, instrumented, kernel=kernel, uniform=uniform,
                             planner=Planner(lambda v: v in uniform, name,
                                             mode in (GRID, BATCH)),
                             name=name, fresh=fresh)
    ops = list(walk(list(kernel.body.block.ops)))
    plan.decisions = strategies.decide([kernel, *ops], facts)
    _mark_arrays(plan, facts, ops)
    return plan


def _mark_arrays(plan: KernelPlan, facts: strategies.Facts, ops: list[Operation]) -> None:
    """Which lane-affine values must also exist as arrays: those some emitted op uses other
    than through their base (as a ramp or row address, in `+`/`-` keeping it affine, in a
    signed comparison with a uniform value; inside a lane window only block-local ones)."""
    needed: set[SSAValue] = set()
    for op in ops:
        if plan.decision(op, planned_view.Dead):
            continue
        access = plan.decision(op, planned_view.Access) is not None
        for index, operand in enumerate(op.operands):
            value = plan.value(operand)
            if value is None or access and index == ramp.lane_address(op):
                continue
            if _takes_base(plan, op, index) and (value.local or not facts.in_window(op)):
                continue
            needed.add(operand)
    for v in needed:
        owner = v.owner
        assert isinstance(owner, Operation)
        plan.decisions[owner] = tuple(replace(d, array=True) if isinstance(d, ramp.Value)
                                      else d for d in plan.decisions[owner])


def _takes_base(plan: KernelPlan, op: Operation, index: int) -> bool:
    """Does the generated code of `op` use its operand `index`, a lane-affine value, through
    its scalar base only (as its decisions say)?"""
    return any(d.takes_base(op, index) for d in plan.decisions.get(op, ()))
