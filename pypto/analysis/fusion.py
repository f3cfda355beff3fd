"""Which tile loads of a pipelined loop the firmware would fuse with their MMA (docs/cost-model.md#the-firmware-level-npu-dialect).

`npu-fuse-load-mma` fuses an MMA with the `copy_in` feeding one of its inputs when the two sit
in straight-line code with at most the target's `max_distance` instructions between them (flag
waits, scalar computations and other tile loads only; never a lane instruction,
`lane_instruction`). `pto-double-buffer` must not move such a load an iteration ahead of its
MMA: the fusion (the copy streamed into the Cube, no flag handshake) would be lost. This analysis answers, at the pto level and before any rewrite, which
loads of the load stages would fuse if each were issued where the compute stages first wait
for it (right before the waits in front of its MMA), and why the others would not.

The distance is counted as the rewritten loop will have it: the loads kept next to their MMA
are issued just before the wait that completes them; a `pto.wait_all` there becomes one
`pto.wait` per prefetched load (and per copy the compute stages issued before it), each a flag
wait between the kept load and its MMA; every instruction between that wait and the MMA counts.
One load per MMA fuses (the firmware loads operand A or B, not both): the one waited for last,
nearest the MMA.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator, Pure

from pypto.analysis.alias import conflict, footprints
from pypto.analysis.ir_utils import root_alloc
from pypto.analysis.uniformity import varying_values, walk
from pypto.dialects.traits import (
    MmaFootprint,
    declares_buffer,
    forwards_yield,
    pipe_of,
    starts_copy,
    waits_on,
)


def _not_instruction(op: Operation) -> bool:
    """Constants, buffer declarations (`pto.alloc_local`) and terminators (`pto.yield`)."""
    return isinstance(op, arith.ConstantOp) or declares_buffer(op) or op.has_trait(IsTerminator)


def lane_instruction(op: Operation, varying: Callable[[], frozenset[SSAValue]]) -> bool:
    """Is `op` an instruction of the vector unit, as the cost model issues it (facts.py): an op
    on the VECTOR pipe, except `arith` / `math` on values uniform over the block (the scalar
    unit's)? `varying()` gives the kernel's lane-varying values (asked only for such ops).

    The firmware fuses a load with its MMA across scalar computations, flag waits and other
    tile loads, never across a lane instruction: fusing moves the copy and the wait that
    completes it down to the MMA, so a lane instruction that sat after the wait would no longer
    wait for the copy and would run sooner than in the program written, the fused kernel
    modelled faster with more work (docs/cost-model.md#the-firmware-level-npu-dialect)."""
    if pipe_of(op) != "VECTOR":
        return False
    if op.name.split(".", 1)[0] in ("arith", "math"):
        lanes = varying()
        return any(r in lanes for r in op.results)
    return True


def kernel_varying(op: Operation) -> Callable[[], frozenset[SSAValue]]:
    """`varying()` for `lane_instruction`: the lane-varying values of the function holding
    `op` (block ids uniform: a lane instruction is one block's), computed on first use."""
    def varying() -> frozenset[SSAValue]:
        kernel = op.parent_op()
        while kernel is not None and kernel.name != "func.func":
            kernel = kernel.parent_op()
        if kernel is None:
            return frozenset()
        return varying_values(kernel, block_ids_uniform=True)  # type: ignore[arg-type]
    return varying


def _is_mma(op: Operation) -> bool:
    return op.get_trait(MmaFootprint) is not None


def _is_tile_load(op: Operation) -> bool:
    """An async copy into L1 (`pto.async_load`)."""
    return starts_copy(op) and pipe_of(op) == "MTE_IN"


@dataclass(frozen=True)
class Decision:
    """A load of a load stage and the MMA it feeds: kept next to it (fused) or not, and why."""

    load: Operation       # the pto.async_load
    mma: Operation        # the pto.mma
    operand: str          # "a" or "b": which input of the MMA the load fills
    keep: bool
    reason: str


def root_buffer(value: SSAValue) -> Operation | None:
    """The `pto.alloc_local` an L1 address comes from (through addptr and stage results)."""
    root = root_alloc(value)
    return root.owner if root is not None and isinstance(root.owner, Operation) else None


def _origin(value: SSAValue) -> SSAValue:
    while isinstance(value, OpResult) and value.op.regions and forwards_yield(value.op):
        value = value.op.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
    return value


def waits_for(op: Operation, load: Operation) -> bool:
    if waits_on(op) == "all":
        return True
    return _waits_for_token(op, load)


def fusion_decisions(loads: Sequence[Operation], compute_stages: Sequence[Operation],
                     max_distance: int, *, compute_copies: Sequence[Operation] = ()
                     ) -> list[Decision]:
    """For every MMA at the top level of the compute stages (flattened in order), the load of
    `loads` it would fuse with, kept or not; see the module docstring."""
    ops = [op for stage in compute_stages for op in stage.body.block.ops
           if not op.has_trait(IsTerminator)]
    position = {op: i for i, op in enumerate(ops)}
    copies_before = {op: sum(1 for c in compute_copies if c.parent_op() in compute_stages
                             and c in position and position[c] < position[op]) for op in ops}
    decisions: list[Decision] = []
    taken: set[Operation] = set()
    for index, mma in enumerate(ops):
        if not _is_mma(mma):
            continue
        inputs = {"a": root_buffer(mma.a), "b": root_buffer(mma.b)}
        candidates = []
        for load in loads:
            if load in taken:
                continue
            dst = root_buffer(load.dst)
            operand = next((name for name, buf in inputs.items() if buf is not None
                            and buf is dst), None)
            if operand is None:
                continue
            wait = next((i for i in range(index) if waits_for(ops[i], load)), None)
            candidates.append((wait if wait is not None else -1, loads.index(load), load,
                               operand))
        if not candidates:
            continue
        candidates.sort(key=lambda c: (c[0], c[1]))
        wait, _, load, operand = candidates[-1]
        for _, _, other, other_operand in candidates[:-1]:
            decisions.append(Decision(other, mma, other_operand, False,
                                      f"one load per MMA fuses, and the load of "
                                      f"'{_name(load)}' is nearer"))
        taken.update(c[2] for c in candidates)
        if wait < 0:
            decisions.append(Decision(load, mma, operand, False,
                                      "no compute stage waits for it before its MMA"))
            continue
        # kept, it is issued just before its wait: after every compute op before that wait
        hazard = _first_conflict(load, walk(ops[:wait]))
        if hazard is not None:
            decisions.append(Decision(load, mma, operand, False,
                                      f"issuing it at its MMA would move it past "
                                      f"'{hazard.name}', which may touch the same memory"))
            continue
        flags = 0
        if waits_on(ops[wait]) == "all":  # one wait per other prefetched copy
            flags = len(loads) - 1 + copies_before[ops[wait]]
        between = [op for op in ops[wait + 1:index]
                   if not _not_instruction(op) and not _waits_for_token(op, load)]
        varying = kernel_varying(mma)
        blocker = next((op for op in between
                        if not _passive(op) or lane_instruction(op, varying)), None)
        if blocker is not None:
            decisions.append(Decision(load, mma, operand, False,
                                      f"'{blocker.name}' sits between its wait and the MMA, "
                                      f"which the firmware does not fuse across"))
            continue
        distance = flags + len(between)
        if distance > max_distance:
            decisions.append(Decision(load, mma, operand, False,
                                      f"{distance} instructions would sit between it and the "
                                      f"MMA, more than the target's fusion distance "
                                      f"({max_distance})"))
            continue
        decisions.append(Decision(load, mma, operand, True,
                                  f"the target's firmware fuses it with the MMA "
                                  f"(npu-fuse-load-mma, {distance} of at most {max_distance} "
                                  f"instructions between)"))
    return decisions


def _first_conflict(load: Operation, ops: object) -> Operation | None:
    """The first of `ops` whose accesses may conflict with the load's (the shared alias query,
    pypto.analysis.alias: unknown is "may")."""
    mine = footprints(load)
    for op in ops:  # type: ignore[attr-defined]
        if any(conflict(a, b) for a in mine for b in footprints(op)):
            return op
    return None


def _waits_for_token(op: Operation, load: Operation) -> bool:
    return waits_on(op) == "token" and _origin(op.operands[0]) is load.token  # type: ignore[attr-defined]


def _passive(op: Operation) -> bool:
    """What the firmware fuses across: scalar computations, flag waits, other tile loads (a
    pure op is scalar unless `lane_instruction` says otherwise)."""
    if op.regions:
        return False
    return op.has_trait(Pure) or waits_on(op) == "token" or _is_tile_load(op)


def _name(load: Operation) -> str:
    buffer = root_buffer(load.dst)  # type: ignore[attr-defined]
    return (buffer.result.name_hint if buffer is not None else None) or "?"


def loads_of(stages: Sequence[Operation]) -> list[Operation]:
    return [op for s in stages for op in walk(s.body.block.ops)  # type: ignore[attr-defined]
            if _is_tile_load(op)]
