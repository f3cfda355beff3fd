"""How barrier problems are told: the `Hazard` record, every message the barrier analysis gives
(races between warps, one instruction's lanes, accesses to an in-flight copy, divergent
barriers) and their pieces (locations, lane and warp ranges, element ranges, loop values).
`pypto.analysis.barriers` finds the problems; the words are all here."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, scf
from xdsl.ir import Operation, OpResult, SSAValue

from pypto.analysis.l1_access import Conflict, Kind, LaneAccess
from pypto.analysis.lane_values import Env, LaneModel, LaneSpace, value_name
from pypto.analysis.uniformity import (located_error, walk, warp_divergence,
                                       warp_divergence_message)
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
# Hazards between accesses
# --------------------------------------------------------------------------------------------

def _verb_lanes(kind: Kind, lanes: np.ndarray | None, space: LaneSpace) -> str:
    return kind.value + ("" if lanes is None else f" by {describe_lanes(lanes, space)}")

def iteration_text(loop: scf.ForOp | None, age: int, verb: str) -> str:
    """` in the previous iteration of the loop at k.py:7:4` (`age` iterations back), or ""."""
    if loop is None:
        return ""
    which = "the previous" if age == 1 else "an earlier"
    return f" {verb} {which} iteration of the loop at {where(loop)}"

def _token_hint(copy: Operation) -> str:
    if copy.results and copy.results[0].name_hint:
        return copy.results[0].name_hint
    return "<its token>"

def _head(kind: str, memory: str, ptr: SSAValue, conflict: Conflict, model: LaneModel,
          unproven: str) -> str:
    """`RAW hazard on L1 buffer 'x' [lo, hi)`, or `possible ...` with why it is not proven."""
    head = f"{kind} hazard on {memory} {buffer_name(model.roots(ptr))}"
    if conflict.exact:
        return head + range_text(conflict, model)
    return (f"possible {head} (the analysis cannot show that {unproven}: "
            f"{conflict.reason})")

def lanes_hazard(first: LaneAccess, second: LaneAccess, conflict: Conflict, model: LaneModel,
                 space: LaneSpace, *, first_op: Operation, loop: scf.ForOp | None, age: int,
                 warp_barrier: bool) -> Hazard:
    """Lanes of different warps reach one element through `first` (executed as `first_op`,
    `age` iterations of `loop` back) and `second` with no block barrier between."""
    kind = hazard_kind(first.kind, second.kind)
    memory = "L1" if second.space == "local" else "HBM"
    head = _head(kind, memory, second.ptr, conflict, model,
                 "the accesses touch different elements")
    earlier = iteration_text(loop, age, "in")
    separation = ("only pto.barrier() (which orders a single warp) separates them"
                  if warp_barrier else "no pto.barrier_block() separates them")
    if loop is not None:
        separation += " on the way round the loop"
    message = (f"{head}: {_verb_lanes(first.kind, conflict.lanes_first, space)} at "
               f"{where(first.op)}{earlier}, "
               f"{_verb_lanes(second.kind, conflict.lanes_second, space)} at "
               f"{where(second.op)}{env_text(conflict)}; {separation}; "
               f"use pto.barrier_block()")
    note = f"the first access ({first.kind.value} here{earlier})"
    return Hazard(Category.WARPS, kind, second.op, first_op, message, note, loop,
                  second.space, conflict)

def same_instruction_hazard(access: LaneAccess, conflict: Conflict, model: LaneModel,
                            space: LaneSpace) -> Hazard:
    """Lanes of different warps write one element in one instruction."""
    assert conflict.lanes_first is not None
    message = (f"WAW hazard on L1 {buffer_name(model.roots(access.ptr))}"
               f"{range_text(conflict, model)}: "
               f"{_verb_lanes(access.kind, conflict.lanes_first, space)} in one "
               f"{access.op.name} at {where(access.op)}{env_text(conflict)}: lanes of "
               f"different warps write the same element, so the result depends on the "
               f"order the warps run in (no barrier can fix this); let a single warp or "
               f"lane write each element, or use pto.atomic_add")
    return Hazard(Category.SAME_INSTRUCTION, "WAW", access.op, None, message,
                  conflict=conflict)

def in_flight_hazard(copy: Operation, copy_writes: bool, op: Operation, kind: Kind,
                     ptr: SSAValue, conflict: Conflict, role: str | None, model: LaneModel,
                     space: LaneSpace, *, loop: scf.ForOp | None, age: int) -> Hazard:
    """`op` accesses (through `ptr`, as its `role` for a tile instruction) the region of an
    async `copy` still in flight (issued `age` iterations of `loop` back)."""
    kind_text = ("WAW" if kind.writes else "RAW") if copy_writes else "WAR"
    head = _head(kind_text, "L1", ptr, conflict, model, "the access misses the copy's region")
    issued = iteration_text(loop, age, "issued in")
    who = (f"{_verb_lanes(kind, conflict.lanes_second, space)}" if role is None
           else f"{kind.value} as the {role} of {op.name}")
    doing = "writing" if copy_writes else "reading"
    message = (f"{head}: {who} at {where(op)} while the {copy.name} at "
               f"{where(copy)}{issued} is still {doing} it (a copy is in flight until "
               f"the pto.wait of its token){env_text(conflict)}; call "
               f"pto.wait({_token_hint(copy)}) first (or pto.wait_all())")
    note = f"the {copy.name} still in flight{issued}"
    return Hazard(Category.IN_FLIGHT, kind_text, op, copy, message, note, loop,
                  conflict=conflict)

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
    """The first warp collective under control flow that differs within a warp, else the
    first `barrier_block` or tile instruction under lane-dependent control flow."""
    diverged = warp_divergence(kernel)
    if diverged is not None:
        op, control, cond_value = diverged
        return Hazard(Category.DIVERGENCE, "divergence", op, condition_op(control),
                      warp_divergence_message(op, control, cond_value),
                      "the condition that differs within a warp")
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
           "divergent_parent", "env_text", "find_divergence", "hazard_kind", "in_flight_hazard",
           "is_declaration", "iteration_text", "lanes_hazard", "range_text",
           "same_instruction_hazard", "where"]
