"""Which tile loads of a pipelined loop the firmware would fuse with their MMA (SPEC §6).

`npu-fuse-load-mma` fuses an MMA with the `copy_in` feeding one of its inputs when the two sit
in straight-line code with at most the target's `max_distance` instructions between them (flag
waits, scalar computations and other tile loads only). `pto-double-buffer` must not move such a
load an iteration ahead of its MMA: the fusion (the copy streamed into the Cube, no flag
handshake) would be lost. This analysis answers, at the pto level and before any rewrite, which
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

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.traits import Pure

from pypto.analysis.alias import conflict, footprints
from pypto.analysis.uniformity import walk
from pypto.dialects import pto

_NOT_INSTRUCTIONS = (arith.ConstantOp, pto.AllocLocalOp, pto.YieldOp)


@dataclass(frozen=True)
class Decision:
    """A load of a load stage and the MMA it feeds: kept next to it (fused) or not, and why."""

    load: pto.AsyncLoadOp
    mma: pto.MmaOp
    operand: str          # "a" or "b": which input of the MMA the load fills
    keep: bool
    reason: str


def root_buffer(value: SSAValue) -> pto.AllocLocalOp | None:
    """The `pto.alloc_local` an L1 address comes from (through addptr and stage results)."""
    for _ in range(64):
        if not isinstance(value, OpResult):
            return None
        op = value.op
        if isinstance(op, pto.AllocLocalOp):
            return op
        if isinstance(op, pto.AddPtrOp):
            value = op.ptr
        elif isinstance(op, pto.StageOp | pto.PipelineOp):
            value = op.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
        else:
            return None
    return None


def _origin(value: SSAValue) -> SSAValue:
    while isinstance(value, OpResult) and isinstance(value.op, pto.StageOp | pto.PipelineOp):
        value = value.op.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
    return value


def waits_for(op: Operation, load: pto.AsyncLoadOp) -> bool:
    if isinstance(op, pto.WaitAllOp):
        return True
    return isinstance(op, pto.WaitOp) and _origin(op.token) is load.token


def fusion_decisions(loads: Sequence[pto.AsyncLoadOp], compute_stages: Sequence[pto.StageOp],
                     max_distance: int, *, compute_copies: Sequence[Operation] = ()
                     ) -> list[Decision]:
    """For every MMA at the top level of the compute stages (flattened in order), the load of
    `loads` it would fuse with, kept or not; see the module docstring."""
    ops = [op for stage in compute_stages for op in stage.body.block.ops
           if not isinstance(op, pto.YieldOp)]
    position = {op: i for i, op in enumerate(ops)}
    copies_before = {op: sum(1 for c in compute_copies if c.parent_op() in compute_stages
                             and c in position and position[c] < position[op]) for op in ops}
    decisions: list[Decision] = []
    taken: set[pto.AsyncLoadOp] = set()
    for index, mma in enumerate(ops):
        if not isinstance(mma, pto.MmaOp):
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
        if isinstance(ops[wait], pto.WaitAllOp):  # one wait per other prefetched copy
            flags = len(loads) - 1 + copies_before[ops[wait]]
        between = [op for op in ops[wait + 1:index]
                   if not isinstance(op, _NOT_INSTRUCTIONS) and not _waits_for_token(op, load)]
        blocker = next((op for op in between if not _passive(op)), None)
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


def _first_conflict(load: pto.AsyncLoadOp, ops: object) -> Operation | None:
    """The first of `ops` whose accesses may conflict with the load's (the shared alias query,
    pypto.analysis.alias: unknown is "may")."""
    mine = footprints(load)
    for op in ops:  # type: ignore[attr-defined]
        if any(conflict(a, b) for a in mine for b in footprints(op)):
            return op
    return None


def _waits_for_token(op: Operation, load: pto.AsyncLoadOp) -> bool:
    return isinstance(op, pto.WaitOp) and _origin(op.token) is load.token


def _passive(op: Operation) -> bool:
    """What the firmware fuses across: scalar computations, flag waits, other tile loads."""
    if op.regions:
        return False
    return op.has_trait(Pure) or isinstance(op, pto.WaitOp | pto.AsyncLoadOp)


def _name(load: pto.AsyncLoadOp) -> str:
    buffer = root_buffer(load.dst)
    return (buffer.result.name_hint if buffer is not None else None) or "?"


def loads_of(stages: Sequence[pto.StageOp]) -> list[pto.AsyncLoadOp]:
    return [op for s in stages for op in walk(s.body.block.ops) if isinstance(op, pto.AsyncLoadOp)]
