"""How barrier problems are told: the `Hazard` record, the pieces of its message (locations,
lane and warp ranges, element ranges, loop values) and the barrier-divergence check."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, scf
from xdsl.ir import Operation, OpResult, SSAValue

from pypto.analysis.l1_access import Conflict, Kind
from pypto.analysis.lane_values import Env, LaneModel, LaneSpace, value_name
from pypto.analysis.uniformity import located_error, walk
from pypto.dialects.traits import declares_buffer, is_block_collective, sync_scope
from pypto.errors import BarrierError
from pypto.diagnostics import attach_op, op_location

class Category(enum.Enum):
    WARPS = "lanes of different warps"
    SAME_INSTRUCTION = "one instruction"
    IN_FLIGHT = "in-flight async copy"
    DIVERGENCE = "divergent barrier"

@dataclass


class Hazard:
    """One problem found by the analysis; `message` is the user-facing text."""

    category: Category
    kind: str  # RAW / WAR / WAW, or "divergence"
    second: Operation  # the access that completes the hazard (where it is reported)
    first: Operation | None
    message: str
    first_note: str | None = None
    carried_loop: scf.ForOp | None = None
    space: str = "local"
    conflict: Conflict | None = None

    @property
    def key(self) -> tuple[Category, Operation | None, Operation, str]:
        return (self.category, self.first, self.second, self.space)

    @property
    def repairable(self) -> bool:
        """Whether a `barrier_block` between the two accesses removes it."""
        return self.category is Category.WARPS

    def error(self) -> BarrierError:
        """A `BarrierError` at the second access, with a note at the first."""
        error = located_error(BarrierError, self.message, self.second)
        assert isinstance(error, BarrierError)
        notes: list[tuple[str, Operation | None]] = []
        if self.first is not None and self.first_note is not None:
            notes.append((self.first_note, self.first))
        return attach_op(error, self.second, notes)

def where(op: Operation) -> str:
    """`file:line:col` of the Python source an op came from (1-based column)."""
    return op_location(op, unknown=f"an unknown location ({op.name})")

def _ranges(ids: np.ndarray, limit: int = 4) -> str:
    ids = np.unique(ids)
    if ids.size == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    parts = []
    for seg in np.split(ids, breaks):
        parts.append(str(seg[0]) if seg.size == 1 else f"{seg[0]}-{seg[-1]}")
    if len(parts) > limit:
        return ", ".join(parts[:limit]) + f", ... ({ids.size} in all)"
    return ", ".join(parts)

def describe_lanes(lanes: np.ndarray, space: LaneSpace) -> str:
    lanes = np.unique(lanes)
    warps = np.unique(space.warp[lanes])
    lane_word = "lane" if lanes.size == 1 else "lanes"
    warp_word = "warp" if warps.size == 1 else "warps"
    return f"{lane_word} {_ranges(lanes)} ({warp_word} {_ranges(warps)})"

def _terms_text(terms: Iterable[tuple[object, int]], model: LaneModel) -> str:
    parts = []
    for term, coef in sorted(terms, key=lambda tc: model.term_name(tc[0])):
        name = model.term_name(term)
        parts.append(name if coef == 1 else f"-{name}" if coef == -1 else f"{coef}*{name}")
    return " + ".join(parts).replace("+ -", "- ")

def range_text(conflict: Conflict, model: LaneModel) -> str:
    if conflict.addresses is None or conflict.addresses.size == 0:
        return ""
    lo, hi = int(conflict.addresses.min()), int(conflict.addresses.max()) + 1
    prefix = _terms_text(conflict.terms, model)
    if prefix:
        return f" [{prefix} + {lo}, {prefix} + {hi})".replace("+ -", "- ")
    return f" [{lo}, {hi})"

def env_text(conflict: Conflict) -> str:
    def show(env: Env) -> str:
        return ", ".join(f"{value_name(leaf)} = {value}" for leaf, value in env.items())

    if not conflict.env_first and not conflict.env_second:
        return ""
    if dict(conflict.env_first) == dict(conflict.env_second):
        return f" (when {show(conflict.env_first)})"
    first, second = show(conflict.env_first), show(conflict.env_second)
    if not first:
        return f" (the second when {second})"
    if not second:
        return f" (the first when {first})"
    return f" (the first when {first}, the second when {second})"

def buffer_name(roots: frozenset[SSAValue] | None) -> str:
    if not roots:
        return "an unknown L1 buffer"
    names = sorted(f"'{value_name(r)}'" for r in roots)
    return "buffer " + " or ".join(names)

def hazard_kind(first: Kind, second: Kind) -> str:
    if first.writes and second.writes:
        return "WAW"
    return "RAW" if first.writes else "WAR"

# --------------------------------------------------------------------------------------------
# Divergence
# --------------------------------------------------------------------------------------------

def is_declaration(op: Operation) -> bool:
    """`alloc_local` is a static declaration (CUDA's `__shared__`), not a collective: it may
    sit anywhere and orders nothing (docs/language.md)."""
    return declares_buffer(op)

def divergent_parent(op: Operation, varying: AbstractSet[SSAValue]) -> Operation | None:
    """The outermost `scf.if` on a lane-dependent condition (or loop with lane-dependent bounds)
    around `op`, or None when `op` runs in uniform control flow."""
    found: Operation | None = None
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp) and parent.cond in varying:
            found = parent
        if isinstance(parent, scf.ForOp) and any(
                v in varying for v in (parent.lb, parent.ub, parent.step)):
            found = parent
        parent = parent.parent_op()
    return found

def condition_op(control: Operation) -> Operation:
    """The op computing the condition of a divergent `scf.if` (the loop itself otherwise)."""
    if isinstance(control, scf.IfOp) and isinstance(control.cond, OpResult):
        return control.cond.op
    return control

def find_divergence(kernel: func.FuncOp, varying: AbstractSet[SSAValue]) -> Hazard | None:
    """The first `barrier_block` or tile instruction under lane-dependent control flow."""
    for op in walk(kernel.body.block.ops):
        if not is_block_collective(op) or is_declaration(op):
            continue
        control = divergent_parent(op, varying)
        if control is None:
            continue
        cond = condition_op(control)
        what = "block barrier" if sync_scope(op) == "block" \
            else "tile instruction (executed once per block, by every warp)"
        construct = "'if'" if isinstance(control, scf.IfOp) else "loop"
        message = (f"barrier divergence: {op.name} is a {what} but sits under lane-dependent "
                   f"control flow: the condition at {where(cond)} differs between lanes, so "
                   f"some lanes would skip it (a deadlock on the device); move it out of the "
                   f"{construct} or make the condition uniform (parameters, constants, block "
                   f"ids)")
        return Hazard(Category.DIVERGENCE, "divergence", op, cond, message,
                      "the lane-dependent condition")
    return None


__all__ = ["Category", "Hazard", "buffer_name", "condition_op", "describe_lanes",
           "divergent_parent", "env_text", "find_divergence", "hazard_kind", "is_declaration",
           "range_text", "where"]
