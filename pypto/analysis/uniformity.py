"""Uniformity (divergence) analysis: which values may differ between the lanes of a block.

A value is *varying* when lanes can hold different values of it: lane and warp ids, loads,
atomics, and anything computed from them; the results of an `scf.if` on a varying condition, the results of an `scf.while` whose
condition is varying (lanes leave it after different numbers of iterations). All other values
(parameters, constants, block ids and dims, loop counters of uniform loops, the checked step of
a SIMT loop, `pto.loop_step`) are *uniform*. The analysis is a fixpoint over `scf.for` and
`scf.while` loop-carried values. Inside a while loop whose trip count differs between lanes,
a carried value that starts and is updated uniformly stays uniform: every lane still in the
loop has run the same iterations.

Uses: the frontend rejects tile instructions and `barrier_block` under varying control flow (as
GPUVerify's barrier-divergence check), the interpreter keeps uniform values as scalars, and
`pto-verify-barriers` reasons about which lanes execute an access.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Iterable

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue

from pypto.analysis.cache import cached
from pypto.diagnostics import op_location, source_loc
from pypto.dialects.traits import (
    checks_uniform,
    forwards_yield,
    is_block_collective,
    lane_reads_memory,
    launch_id,
    sync_scope,
    varies_per,
    warp_collective,
)
from pypto.errors import BarrierError, CompileError
from pypto.ir import recorded_launch


def walk(ops: Iterable[Operation]) -> Iterable[Operation]:
    """Pre-order walk of `ops` and everything nested in them."""
    for op in ops:
        yield op
        for region in op.regions:
            for block in region.blocks:
                yield from walk(block.ops)


def varying_values(kernel: func.FuncOp, *, block_ids_uniform: bool = True,
                   ) -> frozenset[SSAValue]:
    """Values that may differ between lanes. `block_ids_uniform=False` treats the block id as
    varying too (for a lane vector spanning several blocks). Computed once per kernel and IR
    state (`pypto.analysis.cache`)."""
    return cached(kernel, ("varying_values", block_ids_uniform),
                  lambda: _compute_varying(kernel, block_ids_uniform))


# How each op propagates variance, decided once per op before the fixpoint.
_SOURCE, _IF, _FOR, _REGION, _GENERIC, _NONE, _WHILE = range(7)


def values_depending_on(kernel: func.FuncOp, what: str) -> frozenset[SSAValue]:
    """Values computed (through data or control flow, as `varying_values`) from `what`:
    "data" — values loaded from memory (lane loads, atomics); "block" — the block's ids
    (`get_block_id`, `get_global_id`). The cost model proves with them that every block's
    control flow and addresses are independent of loaded data, and finds which of them differ
    between blocks (pypto.backend.cost_model.classes)."""
    if what not in _DEPENDENCE_SOURCES:
        raise ValueError(f"values_depending_on: {what!r} is not one of "
                         f"{', '.join(_DEPENDENCE_SOURCES)}")
    return cached(kernel, ("depends_on", what),
                  lambda: _compute_varying(kernel, True, _DEPENDENCE_SOURCES[what]))


def _is_block_id(op: Operation) -> bool:
    """The block id, or an id computed from it (the global id)."""
    return launch_id(op) in ("block_id", "global_id")


_DEPENDENCE_SOURCES = {"data": lane_reads_memory, "block": _is_block_id}


def _classify(op: Operation, block_ids_uniform: bool,
              is_source: Callable[[Operation], bool] | None = None,
              is_uniform: Callable[[Operation], bool] | None = None) -> int:
    varies = varies_per(op)
    if is_uniform is not None and is_uniform(op):
        return _NONE
    if is_source is not None:
        if is_source(op):
            return _SOURCE
    elif varies == "lane" or lane_reads_memory(op) or warp_collective(op) == "warp":
        # a vote's result is one value per warp: it differs between the warps of a block
        return _SOURCE
    if varies == "block" and is_source is None:
        return _NONE if block_ids_uniform else _SOURCE
    if isinstance(op, scf.IfOp):
        return _IF
    if isinstance(op, scf.ForOp):
        return _FOR
    if isinstance(op, scf.WhileOp):
        return _WHILE
    if checks_uniform(op):
        # pto.loop_step: checked at run time to be the same on every active lane of a block
        return _NONE if block_ids_uniform else _GENERIC
    if op.regions and forwards_yield(op):
        return _REGION
    return _GENERIC if op.results else _NONE


def warp_varying_values(kernel: func.FuncOp) -> frozenset[SSAValue]:
    """Values that may differ between the lanes of one warp: as `varying_values`, but the warp
    id (and anything computed from it and block ids) is uniform across a warp, and so is a
    vote's result (`pto.ballot`, `pto.vote_any`, `pto.vote_all`); a shuffle's result varies
    (each lane reads another lane's value). In a kernel whose launch records a 1-D block, a
    comparison of the local id with a constant on a warp boundary (`t < 32`, `t >= 64`,
    `t <= 31`) and the local id divided by a multiple of 32 (`t // 32`, `t >> 5`) are uniform
    across a warp too (so is the global id's, when the block is a whole number of warps). What
    a warp collective's control flow must not depend on."""
    def compute() -> frozenset[SSAValue]:
        linear = _linear_local_ids(kernel)
        return _compute_varying(kernel, True, _varies_in_warp,
                                lambda op: warp_collective(op) == "warp" or
                                _splits_at_warps(op, linear))
    return cached(kernel, ("warp_varying_values",), compute)


def _linear_local_ids(kernel: func.FuncOp) -> frozenset[SSAValue]:
    """Values equal to the lane's linear local id plus a multiple of 32 the same for a whole
    warp: the local id along x of a 1-D block, and the global id along x when the block is also
    a whole number of warps (from the launch the module records; none without a record)."""
    module = kernel.parent_op()
    record = recorded_launch(module) if isinstance(module, ModuleOp) else None
    if record is None:
        return frozenset()
    block = tuple(int(d) for d in record[0]) + (1, 1)
    if block[1] * block[2] != 1:
        return frozenset()
    found: set[SSAValue] = set()
    for op in walk(kernel.body.block.ops):
        which = launch_id(op)
        dim = op.properties.get("dim") if which is not None else None
        if dim is None or getattr(dim, "value", None) is None or dim.value.data != 0:
            continue
        if which == "local_id" or (which == "global_id" and block[0] % 32 == 0):
            found.add(op.results[0])
    return frozenset(found)


_ON_WARP_BOUNDARY = {"slt": 0, "sge": 0, "ult": 0, "uge": 0, "sle": 31, "sgt": 31, "ule": 31,
                     "ugt": 31}
"""`x PRED c` splits the lanes at warp boundaries when `c % 32` is this (x: a linear id)."""
_SWAPPED = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
            "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _splits_at_warps(op: Operation, linear: frozenset[SSAValue]) -> bool:
    """Is `op` a comparison of a linear id with a constant on a warp boundary, or a linear id
    divided by (shifted right by) a multiple of 32 (at least 5 bits)? Its result is then the
    same on every lane of a warp."""
    if not linear or len(op.operands) != 2:
        return False
    a, b = op.operands
    if isinstance(op, arith.CmpiOp):
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        if a not in linear:
            a, b, pred = b, a, _SWAPPED.get(pred, "")
        c = _constant_int(b)
        return a in linear and c is not None and pred in _ON_WARP_BOUNDARY and \
            c % 32 == _ON_WARP_BOUNDARY[pred]
    if a not in linear or (c := _constant_int(b)) is None:
        return False
    if isinstance(op, arith.DivSIOp | arith.DivUIOp | arith.FloorDivSIOp):
        return c > 0 and c % 32 == 0
    if isinstance(op, arith.ShRSIOp | arith.ShRUIOp):
        return c >= 5
    return False


def _varies_in_warp(op: Operation) -> bool:
    return (varies_per(op) == "lane" and launch_id(op) != "warp_id") or lane_reads_memory(op)


def _compute_varying(kernel: func.FuncOp, block_ids_uniform: bool,
                     is_source: Callable[[Operation], bool] | None = None,
                     is_uniform: Callable[[Operation], bool] | None = None
                     ) -> frozenset[SSAValue]:
    varying: set[SSAValue] = set()
    ops = [(op, kind) for op in walk(kernel.body.block.ops)
           if (kind := _classify(op, block_ids_uniform, is_source, is_uniform)) != _NONE]
    changed = True
    while changed:
        changed = False

        def mark(values: Iterable[SSAValue]) -> None:
            nonlocal changed
            for v in values:
                if v not in varying:
                    varying.add(v)
                    changed = True

        for op, kind in ops:
            if kind == _SOURCE:
                mark(op.results)
            elif kind == _IF:
                assert isinstance(op, scf.IfOp)
                yields = _yields(op)
                if op.cond in varying or any(v in varying for v in yields):
                    mark(op.results)
            elif kind == _FOR:
                assert isinstance(op, scf.ForOp)
                body = op.body.block
                yielded = list(body.last_op.operands) if body.last_op else []
                if op.lb in varying or op.ub in varying or op.step in varying:
                    mark([body.args[0]])
                for index, (init, arg, result) in enumerate(
                        zip(op.iter_args, body.args[1:], op.results)):
                    if init in varying or (index < len(yielded) and yielded[index] in varying):
                        mark([arg, result])
            elif kind == _WHILE:
                assert isinstance(op, scf.WhileOp)
                before, after = op.before_region.block, op.after_region.block
                condition = before.last_op
                yielded = list(after.last_op.operands) if after.last_op else []
                for index, (init, arg) in enumerate(zip(op.arguments, before.args)):
                    if init in varying or (index < len(yielded) and yielded[index] in varying):
                        mark([arg])
                if isinstance(condition, scf.ConditionOp):
                    divergent = condition.condition in varying
                    for value, arg, result in zip(condition.args, after.args, op.results):
                        if value in varying:
                            mark([arg, result])
                        elif divergent:
                            mark([result])
            elif kind == _REGION:
                last = op.regions[0].block.last_op
                for value, result in zip(last.operands if last else (), op.results):
                    if value in varying:
                        mark([result])
            elif any(o in varying for o in op.operands):
                mark(op.results)
    return frozenset(varying)


def _from_lane_ids(value: SSAValue) -> bool:
    """Is `value` computed by arithmetic from lane ids alone (provably per lane, as far as a
    compile-time check goes)? Memory reads, loop-carried values and region results are not
    followed: those are checked at run time."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.regions or lane_reads_memory(owner):
        return False
    if varies_per(owner) == "lane":
        return True
    return any(_from_lane_ids(v) for v in owner.operands)


def divergent_condition(op: Operation, varying: frozenset[SSAValue]) -> SSAValue | None:
    """The lane-dependent condition `op` branches or loops on, if it does."""
    if isinstance(op, scf.IfOp) and op.cond in varying:
        return op.cond
    if isinstance(op, scf.WhileOp):
        condition = op.before_region.block.last_op
        if isinstance(condition, scf.ConditionOp) and condition.condition in varying:
            return condition.condition
    return None


def _yields(op: scf.IfOp) -> list[SSAValue]:
    values: list[SSAValue] = []
    for region in op.regions:
        for block in region.blocks:
            if isinstance(block.last_op, scf.YieldOp):
                values.extend(block.last_op.operands)
    return values


def _where(op: Operation) -> tuple[str | None, int | None, int | None]:
    loc = source_loc(op)
    if loc is not None:
        return loc.file, loc.line, loc.column - 1
    return None, None, None


def _source_line(filename: str | None, line: int | None) -> str | None:
    if filename is None or line is None:
        return None
    text = linecache.getline(filename, line)
    return text or None


def located_error(cls: type[CompileError], message: str, op: Operation) -> CompileError:
    filename, line, col = _where(op)
    return cls(message, filename=filename, line=line, col=col,
               source_line=_source_line(filename, line))


def _describe(op: Operation) -> str:
    return op_location(op, unknown="an unknown location")


def warp_divergence(kernel: func.FuncOp) -> tuple[Operation, Operation, SSAValue] | None:
    """The first warp collective (a shuffle or a vote) under control flow that may differ
    between the lanes of a warp: (the op, the `if` or loop, its condition), else None."""
    varying: frozenset[SSAValue] | None = None
    for op in walk(kernel.body.block.ops):
        if warp_collective(op) is None:
            continue
        if varying is None:
            varying = warp_varying_values(kernel)
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            cond = divergent_condition(parent, varying)
            if cond is not None:
                return op, parent, cond
            parent = parent.parent_op()
    return None


def warp_divergence_message(op: Operation, control: Operation, cond: SSAValue) -> str:
    """What is wrong with a warp collective under warp-divergent control flow, and the fix."""
    cond_op = cond.owner if isinstance(cond.owner, Operation) else control
    construct = "a loop whose trip count" if isinstance(control, scf.WhileOp) else "an 'if' whose condition"
    return (f"warp divergence: {op.name} is a warp collective (every lane of the warp executes "
            f"it together) but sits in {construct} at "
            f"{op_location(cond_op, unknown=repr(cond_op.name) + ' (noted below)')} may differ between "
            f"the lanes of a warp, so some lanes would not reach it; compute the value under "
            f"the condition and shuffle or vote outside it (pto.select keeps a lane's own "
            f"value), or make the condition uniform across the warp (warp ids, block ids, "
            f"parameters, constants, or a vote: pto.vote_any / pto.vote_all)")


def check_uniform_control(kernel: func.FuncOp) -> None:
    """Reject block-level instructions under lane-dependent control flow, warp collectives
    under control flow that differs within a warp, and loops whose bounds differ between
    lanes."""
    diverged = warp_divergence(kernel)
    if diverged is not None:
        raise located_error(BarrierError, warp_divergence_message(*diverged), diverged[0])
    varying = varying_values(kernel)
    for op in walk(kernel.body.block.ops):
        if checks_uniform(op) and op.operands[0] in varying and _from_lane_ids(op.operands[0]):
            raise located_error(
                CompileError, "the step of this range() is computed from the lane's id, so it "
                "differs between lanes; a SIMT loop's start and stop may differ per lane but its "
                "step must be the same on every lane (CUDA's grid-stride step is "
                "pto.get_grid_dim() * pto.get_block_dim())", op)
        if isinstance(op, scf.ForOp):
            for bound, what in ((op.lb, "start"), (op.ub, "stop")):
                if bound in varying:
                    raise located_error(
                        CompileError, f"the {what} of this range() differs between lanes; "
                        f"loop bounds must be uniform across the block (compute them from "
                        f"parameters, constants and block ids)", op)
        if not is_block_collective(op):
            continue
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            cond = divergent_condition(parent, varying)
            if cond is not None:
                cond_op = cond.owner if isinstance(cond.owner, Operation) else parent
                if isinstance(parent, scf.WhileOp):
                    kind = "block barrier" if sync_scope(op) == "block" else \
                        "tile instruction (executed once per block)"
                    raise located_error(
                        BarrierError,
                        f"{op.name} is a {kind} but sits in a loop whose trip count differs "
                        f"between lanes: its condition at {_describe(cond_op)} differs between "
                        f"lanes, so lanes that left the loop would skip it (a deadlock on the "
                        f"device); move it out of the loop or make the loop's bounds and "
                        f"condition uniform (parameters, constants, block ids)", op)
                kind = "block barrier" if sync_scope(op) == "block" else \
                    "tile instruction (executed once per block)"
                raise located_error(
                    BarrierError,
                    f"{op.name} is a {kind} but sits under lane-dependent control flow: the "
                    f"condition at {_describe(cond_op)} differs between lanes, so some lanes "
                    f"would skip it (a deadlock on the device); move it out of the 'if' or make "
                    f"the condition uniform (parameters, constants, block ids)", op)
            parent = parent.parent_op()
