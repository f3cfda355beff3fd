"""What every strategy module shares: the facts it is asked about and the base of its Decision
(see the package docstring, strategies/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping  # noqa: F401
from dataclasses import dataclass, field
from typing import Any, Protocol

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue


class Decision:
    """Base of every strategy's Decision (a frozen dataclass).

    A Decision whose kind changes the generated code carries its emission as methods, which
    codegen calls with itself (`gen`, a `codegen.KernelCodegen`) and the op:
    - `emit(gen, op)`: the op's whole code (a fused store, a windowed branch);
    - `load(gen, op, site) -> str`: the expression of a lane load's value;
    - `store(gen, op, value, site) -> str`: the statement of a lane store of `value`;
    - `compare(gen, op) -> str`: the expression of a comparison's mask;
    - `copy_address(gen, op, index) -> str | None`: a bulk copy's address operand `index`.
    Codegen asks the op's decisions for the method its op needs, in the order they were made,
    and runs the general path when none has it.
    """

    def takes_base(self, op: Operation, index: int) -> bool:
        """Does this decision's emission read operand `index` of `op`, a lane-affine value,
        through its scalar base only (so that value needs no array for it)?"""
        return False


@dataclass(frozen=True)
class NoCode(Decision):
    """The op has no code of its own (codegen emits nothing for it, whatever else was
    decided for it)."""

    def emit(self, gen: Any, op: Operation) -> None:
        return None


@dataclass(frozen=True)
class Fused(NoCode):
    """The op's value is computed by the access after it (a store computing `a op b` into its
    slice, the loads of a row or view op)."""


@dataclass
class Facts:
    """What a strategy may know about the variant being planned, beside the op itself.

    The compile-time kinds decide in the registry's order, each over every op of the kernel,
    so a strategy sees the decisions of those before it (`decision`, `decided`, `base_of`);
    `add` records a decision for another op than the one asked about (the arithmetic a store
    computes into its slice is `Fused`)."""
    mode: str              # modes.GRID / BLOCK / WARP / BATCH
    one_d: bool            # a 1-D grid and block
    instrumented: bool     # hooks report every op's value (no fusion, no code motion)
    kernel: func.FuncOp | None = None
    uniform: Any = None    # `v in uniform`: v holds one value for the whole lane vector
    planner: Any = None    # plan.py's Planner: affine forms of values
    name: Callable[[SSAValue], str] | None = None    # codegen's names of values
    fresh: Callable[[str], str] | None = None        # codegen's fresh variables
    decisions: dict[Operation, tuple[Decision, ...]] = field(default_factory=dict)
    _planned: dict[Operation, Any] | None = field(default=None, repr=False)

    def add(self, op: Operation, decision: Decision) -> None:
        """Record `decision` for `op` (after the decisions it already has)."""
        self.decisions[op] = self.decisions.get(op, ()) + (decision,)
        self._planned = None

    def decision(self, op: Operation, kind: type) -> Any:
        """The decision of kind `kind` made for `op` so far, or None."""
        return next((d for d in self.decisions.get(op, ()) if isinstance(d, kind)), None)

    def decided(self, op: Operation, kind: type) -> bool:
        return self.decision(op, kind) is not None

    @property
    def planned(self) -> Mapping[Operation, Any]:
        """The planned accesses (op -> plan.py's AccessPlan): what `planned_view` decided."""
        if self._planned is None:
            self._planned = {op: d.plan for op, ds in self.decisions.items() for d in ds
                             if getattr(d, "plans_access", False)}
        return self._planned

    def in_window(self, op: Operation) -> bool:
        """Is `op` inside a branch decided to run on a window of lanes (`window.Branch`)?"""
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if any(getattr(d, "windowed", False) for d in self.decisions.get(parent, ())):
                return True
            parent = parent.parent_op()
        return False


def is_kernel(op: Operation) -> bool:
    """Is `op` the kernel itself (where kernel-wide strategies are decided)?"""
    return isinstance(op, func.FuncOp)


class Strategy(Protocol):
    """The shape of a strategy module."""
    Decision: type[Decision]

    def match(self, op: Operation, facts: Facts) -> Decision | None: ...
