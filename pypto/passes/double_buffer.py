"""Overlap the loads of later iterations with the compute of this one in pipelined loops.

`pto-double-buffer` (docs/passes.md#pto-double-bufferstagesn) rewrites an `scf.for` whose body is a `pto.pipeline`. Stages whose
only effects are `pto.async_load`s into buffers they allocate are *load stages*; the others are
*compute stages*. With `stages=N` (default 2) every load-stage buffer becomes one
`pto.alloc_local` of N slots (N times the elements, tagged `pto.slots = N`), and the loads of
iteration i + N - 1 are issued into slot (i + N - 1) % N before the compute of iteration i runs on
slot i % N (MLIR's multi-buffering with a software pipeline of distance N - 1):

    scf.if lb < ub {                                    // no iteration: nothing at all
      T = ceildiv(ub - lb, step)                        // trip count (run-time value)
      prologue:  loads of iterations 0 .. N-2           // iteration j > 0 under `j < T`
      kernel:    scf.for i = 0 to T - (N-1)             // steady state, tokens in iter_args
                   loads of iteration i + N - 1 into slot (i + N - 1) % N
                   pto.wait on the tokens of slot i % N; compute of iteration i on slot i % N
      epilogue:  scf.for i = max(T - (N-1), 0) to T     // the last N - 1 computes, no loads
      pto.wait on the epilogue's final tokens           // all done: a no-op that says so
    }

The kernel loop counts iterations (0, 1, ...) so that slot indices are `i % N`, which
`pto-verify-barriers` proves disjoint from the slots being filled; the original counter is
recomputed as `lb + i * step`. A compute stage's `pto.wait_all` becomes `pto.wait`s on the tokens
of the slot in use (a `wait_all` would also wait for the prefetches and undo the overlap), plus
those of the compute stages' own copies issued before it. Every load issued is waited for in
its own iteration, so nothing is left in flight after the loop.

Loops it cannot rewrite are left unchanged with a remark saying why: a step that is not a
positive constant, ops with effects outside the pipeline, no load stage, a load stage running
after a compute stage or using values of compute stages or loop-carried values, a load-stage
buffer written by a compute stage or used outside the pipeline, a token used other than by
`pto.wait`. When the slots would not fit the target's L1 (as `pto-allocate-l1` would place
them), fewer stages are used and a remark says so; if not even two fit, the loop stays as it
is. The rewrite assumes the trip-count arithmetic does not overflow the counter's type.

Fusion-aware (docs/passes.md#pto-double-bufferstagesn): a load that the target's firmware would fuse with the MMA it feeds
(`npu-fuse-load-mma`, the target's `[fusion]` table) is not prefetched — an iteration ahead it
would no longer fuse. It stays in its own iteration, issued right before the wait in front of
its MMA, into one buffer; the other loads are prefetched, and in the kernel loop the compute
comes before the prefetch (see `keep_fusable_loads` and pypto.analysis.fusion).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from pypto.analysis.alias import Footprint, Linear, Ranges, conflict, footprints, may_overlap
from pypto.analysis.cache import invalidate
from pypto.analysis.fusion import fusion_decisions, root_buffer, waits_for
from pypto.analysis.l1_liveness import (
    SLOTS_ATTR,
    buffer_bytes,
    functions,
    location_text,
    plan_layout,
)
from pypto.analysis.ir_utils import (
    constant_int,
    is_pipeline,
    is_stage,
    is_stage_yield,
    is_tile_load,
)
from pypto.analysis.lane_values import defined_inside
from pypto.analysis.uniformity import walk
from pypto.dialects import pto
from pypto.dialects.traits import (
    declares_buffer,
    memory_accesses,
    offset_base,
    starts_copy,
    waits_on,
)
from pypto.ir import recorded_launch
from pypto.passes.allocate_l1 import L1Options, kib
from pypto.backend.targets import resolve_target
from pypto.diagnostics import emit_remark
from pypto.passes.npu_fuse_load_mma import fusion_rules

class Refusal(Exception):
    """Why a loop cannot be double-buffered (`op`: where to point the remark)."""

    def __init__(self, reason: str, op: Operation | None = None):
        super().__init__(reason)
        self.reason = reason
        self.op = op


def _is_pure(op: Operation) -> bool:
    return not op.regions and is_side_effect_free(op)


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def _at(op: Operation) -> str:
    """` at k.py:12` when the op knows its Python line, else nothing."""
    text = location_text(op)
    return "" if text == op.name else f" at {text}"


def _stage_text(stage: pto.StageOp) -> str:
    return f"stage '{stage.stage_name}'"


# --------------------------------------------------------------------------------------------
# What a loop looks like: the plan, or why not
# --------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """A pipelined loop that can be double-buffered, and its parts."""

    loop: scf.ForOp
    pipeline: pto.PipelineOp
    step: int
    load_stages: list[pto.StageOp]
    compute_stages: list[pto.StageOp]
    buffers: list[pto.AllocLocalOp]
    """Load-stage buffers, in program order: each gets N slots."""
    loads: list[pto.AsyncLoadOp]
    """The load stages' copies, in program order: each slot has one token per load."""
    compute_copies: list[Operation] = field(default_factory=list[Operation])
    wait_before: bool = False
    """Insert a `wait_all` before the prologue (copies issued before the loop may still be in
    flight; the loop's `wait_all` used to complete them)."""
    kept: list[pto.AsyncLoadOp] = field(default_factory=list[pto.AsyncLoadOp])
    """Loads left next to the MMA they feed (fusion-aware: `keep_fusable_loads`): issued in
    the compute of their own iteration, into one buffer, not prefetched."""
    kept_buffers: list[pto.AllocLocalOp] = field(default_factory=list[pto.AllocLocalOp])
    remarks: list[str] = field(default_factory=list[str])

    @property
    def body(self) -> Block:
        return self.loop.body.block


def _writes(op: Operation, value: SSAValue) -> bool:
    """Whether `op` writes through the address operand `value` (its declared accesses)."""
    return any(a.kind == "write" and op.operands[a.operand] is value
               for a in memory_accesses(op))


def _inside(op: Operation, stages: Sequence[pto.StageOp]) -> pto.StageOp | None:
    for stage in stages:
        if stage.is_ancestor(op):
            return stage
    return None


def analyse(loop: scf.ForOp) -> Plan:
    """The plan for double-buffering `loop`, or a `Refusal`."""
    body = loop.body.block
    pipelines = [op for op in body.ops if is_pipeline(op)]
    if len(pipelines) != 1:
        raise Refusal("the loop body holds more than one pto.pipeline", loop)
    pipeline = pipelines[0]
    for op in body.ops:
        if op is pipeline or isinstance(op, scf.YieldOp) or _is_pure(op):
            continue
        raise Refusal(f"the loop body has '{op.name}'{_at(op)} outside its "
                      f"pto.pipeline; move it into a stage", op)
    step = constant_int(loop.step)
    if step is None or step <= 0:
        raise Refusal("the loop step is not a positive compile-time constant", loop)
    for op in pipeline.body.block.ops:
        if not (is_stage(op) or is_stage_yield(op)) and not _is_pure(op):
            raise Refusal(f"the pipeline has '{op.name}' outside its stages", op)

    stages = pipeline.stages()
    by_name = {s.stage_name: s for s in stages}
    load_stages = [s for s in stages if _is_load_stage(s)]
    if not load_stages:
        raise Refusal("no load stage (a stage whose only effects are pto.async_loads into "
                      "buffers it allocates)", pipeline)
    compute_stages = [s for s in stages if s not in load_stages]
    for stage in load_stages:
        for dep in _transitive_after(stage, by_name):
            if dep not in load_stages:
                raise Refusal(f"load {_stage_text(stage)} runs after compute "
                              f"{_stage_text(dep)}: its loads cannot be issued ahead of that "
                              f"compute", stage)

    loads = [op for s in load_stages for op in walk(s.body.block.ops)
             if is_tile_load(op)]
    buffers: list[pto.AllocLocalOp] = []
    for load in loads:
        _check_load_operands(load, loop, load_stages)
        buffer = _root_buffer(load.dst, load_stages)
        if buffer is None:
            raise Refusal(f"the destination of the pto.async_load{_at(load)} is "
                          f"not a buffer allocated in a load stage", load)
        if buffer not in buffers:
            buffers.append(buffer)
    for buffer in buffers:
        _check_buffer_uses(buffer, load_stages, compute_stages)
    for load in loads:
        _check_token_uses(load, load_stages, compute_stages)
    for stage in load_stages:  # every other value a load stage yields: pure, recomputable
        for op in stage.body.block.ops:
            if declares_buffer(op) and op not in buffers:
                raise Refusal(f"buffer '{op.result.name_hint or '?'}' of load "
                              f"{_stage_text(stage)} is not filled by its loads", op)

    compute_copies = [op for s in compute_stages for op in walk(s.body.block.ops)
                      if starts_copy(op)]
    _check_compute_copies(compute_copies, compute_stages)
    has_wait_all = any(waits_on(op) == "all" for s in compute_stages
                       for op in walk(s.body.block.ops))
    kernel = loop.parent_op()
    while kernel is not None and not isinstance(kernel, func.FuncOp):
        kernel = kernel.parent_op()
    outside = kernel is not None and any(
        starts_copy(op) and not loop.is_ancestor(op) for op in kernel.walk())
    return Plan(loop, pipeline, step, load_stages, compute_stages, buffers, loads,
                compute_copies, wait_before=has_wait_all and outside)


def _is_load_stage(stage: pto.StageOp) -> bool:
    has_load = False
    for op in stage.body.block.ops:
        if is_tile_load(op):
            has_load = True
        elif not (declares_buffer(op) or is_stage_yield(op)) and not _is_pure(op):
            return False
    return has_load


def _transitive_after(stage: pto.StageOp, by_name: dict[str, pto.StageOp]) -> list[pto.StageOp]:
    found: list[pto.StageOp] = []
    todo = list(stage.after_names)
    while todo:
        dep = by_name.get(todo.pop())
        if dep is not None and dep not in found:
            found.append(dep)
            todo.extend(dep.after_names)
    return found


def _check_load_operands(load: pto.AsyncLoadOp, loop: scf.ForOp,
                         load_stages: list[pto.StageOp]) -> None:
    """A load may use values from outside the loop, the counter, pure ops of the loop body and
    of load stages: nothing computed by a compute stage, nothing carried by the loop."""
    todo: list[SSAValue] = list(load.operands)
    seen: set[SSAValue] = set()
    while todo:
        value = todo.pop()
        if value in seen or not defined_inside(value, loop):
            continue
        seen.add(value)
        if isinstance(value, BlockArgument):
            if value.block is loop.body.block and value.index == 0:
                continue
            raise Refusal(f"the pto.async_load{_at(load)} depends on "
                          f"'{value.name_hint or 'a loop-carried value'}', which the loop "
                          f"carries from one iteration to the next", load)
        op = value.op
        if is_stage(op):
            if op not in load_stages:
                raise Refusal(f"the pto.async_load{_at(load)} uses a value of "
                              f"compute {_stage_text(op)}", load)
            todo.append(op.body.block.last_op.operands[value.index])  # type: ignore[union-attr]
            continue
        if declares_buffer(op):
            continue
        if not _is_pure(op):
            raise Refusal(f"the pto.async_load{_at(load)} depends on "
                          f"'{op.name}'{_at(op)}", load)
        todo.extend(op.operands)


def _root_buffer(value: SSAValue, load_stages: list[pto.StageOp]) -> pto.AllocLocalOp | None:
    while isinstance(value, OpResult):
        op = value.op
        if declares_buffer(op):
            return op if _inside(op, load_stages) else None
        if offset_base(op) is not None:
            value = op.ptr
        elif is_stage(op):
            value = op.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
        else:
            return None
    return None


def _uses_through(value: SSAValue, load_stages: list[pto.StageOp],
                  what: str) -> list[tuple[Operation, SSAValue]]:
    """Every (op, operand) that uses `value` directly or through addptr and load-stage yields;
    a use that hands it on any other way (an scf.yield, a select...) is a Refusal."""
    found: list[tuple[Operation, SSAValue]] = []
    todo = [value]
    while todo:
        current = todo.pop()
        for use in list(current.uses):
            op = use.operation
            if offset_base(op) is not None and use.index == 0:
                todo.append(op.result)
            elif is_stage_yield(op) and is_stage(op.parent_op()):
                stage = op.parent_op()
                assert stage is not None
                if stage not in load_stages:
                    raise Refusal(f"{what} is handed on by compute {_stage_text(stage)}", op)
                todo.append(stage.results[use.index])
            elif is_stage_yield(op):  # the pipeline's own yield: follow its result
                pipeline = op.parent_op()
                assert pipeline is not None
                todo.append(pipeline.results[use.index])
            elif isinstance(op, scf.YieldOp | arith.SelectOp | scf.ForOp | func.ReturnOp):
                raise Refusal(f"{what} flows into '{op.name}'{_at(op)}, where "
                              f"its slot could not be followed", op)
            else:
                found.append((op, current))
    return found


def _check_buffer_uses(buffer: pto.AllocLocalOp, load_stages: list[pto.StageOp],
                       compute_stages: list[pto.StageOp]) -> None:
    name = f"buffer '{buffer.result.name_hint or '?'}'"
    for op, value in _uses_through(buffer.result, load_stages, name):
        stage = _inside(op, compute_stages)
        if stage is None:
            if _inside(op, load_stages) and is_tile_load(op):
                continue
            raise Refusal(f"{name} is used by '{op.name}'{_at(op)}, outside "
                          f"the compute stages", op)
        if _writes(op, value):
            raise Refusal(f"{name} is filled by a load stage and also written by compute "
                          f"{_stage_text(stage)} ('{op.name}'{_at(op)}); its "
                          f"slots could not be refilled ahead of that write", op)


def _check_token_uses(load: pto.AsyncLoadOp, load_stages: list[pto.StageOp],
                      compute_stages: list[pto.StageOp]) -> None:
    what = f"the token of the pto.async_load{_at(load)}"
    for op, _ in _uses_through(load.token, load_stages, what):
        if waits_on(op) != "token" or _inside(op, compute_stages) is None:
            raise Refusal(f"{what} is used by '{op.name}'{_at(op)}; only "
                          f"pto.wait in a compute stage can be redirected to its slot", op)


def _check_compute_copies(copies: list[Operation], compute_stages: list[pto.StageOp]) -> None:
    """Copies of compute stages must be waited for within their iteration: the double-buffered
    loop replaces `wait_all` by waits on known tokens, so a copy only `wait_all` of a *later*
    iteration would have completed could stay in flight."""
    order = {op: i for i, op in enumerate(op for s in compute_stages
                                          for op in walk(s.body.block.ops))}
    wait_alls = [op for op in order if waits_on(op) == "all"]
    for copy in copies:
        top_level = is_stage(copy.parent_op())
        waited = any(waits_on(use.operation) == "token" for use in copy.results[0].uses)
        later_wait_all = [w for w in wait_alls if order[w] > order[copy]]
        if later_wait_all and not top_level:
            raise Refusal(f"the '{copy.name}'{_at(copy)} is issued under control "
                          f"flow and completed by a pto.wait_all; wait on its token instead",
                          copy)
        if not waited and not later_wait_all:
            raise Refusal(f"the '{copy.name}'{_at(copy)} is not waited for "
                          f"within its iteration (pto.wait on its token)", copy)


def _bounded_loops(root: Operation) -> dict[SSAValue, tuple[int, int]]:
    """Ranges of the counters of loops under `root` with constant bounds."""
    found: dict[SSAValue, tuple[int, int]] = {}
    for op in root.walk():
        if isinstance(op, scf.ForOp):
            lb, ub, step = (constant_int(v) for v in (op.lb, op.ub, op.step))
            if lb is not None and ub is not None and step is not None and step > 0 and lb < ub:
                found[op.body.block.args[0]] = (lb, ub - 1)
    return found


def _hbm(fps: list[Footprint], kind: str | None = None) -> list[Footprint]:
    return [f for f in fps if f.space == "global" and (kind is None or f.kind == kind)]


def safe_distance(plan: Plan, distance: int, ranges: Ranges) -> tuple[int, str]:
    """How many iterations ahead (at most `distance`) the loads may be issued, and why not
    further: a load issued d iterations ahead must not read HBM that a compute stage of one of
    the d iterations it now runs before writes (a recurrence through memory, `x[k+1] =
    f(x[k])`). Values that change from one iteration to the next, other than the counter,
    cannot be compared across iterations: an access using one is assumed to overlap. A
    distance of 0 is a `Refusal`."""
    iv = plan.body.args[0]
    ranges = Ranges(ranges.block, ranges.max_lanes, ranges.warp_size,
                    {**ranges.extra, **{v: r for s in plan.compute_stages
                                        for v, r in _bounded_loops(s).items()}})
    writes = [(op, f) for s in plan.compute_stages for op in walk(s.body.block.ops)
              for f in _hbm(footprints(op), "write")]
    if not writes:
        return distance, ""
    loop = plan.loop
    for d in range(1, distance + 1):
        for load in plan.loads:
            for src in _hbm(footprints(load), "read"):
                ahead = _iteration_dependent(src, loop, iv)
                for op, dst in writes:
                    if not may_overlap(ahead, dst, ranges=ranges, shift={iv: d * plan.step}):
                        continue
                    later = "the next iteration" if d == 1 else f"iteration i + {d}"
                    why = (f"the pto.async_load{_at(load)} of {later} may read HBM that "
                           f"'{op.name}'{_at(op)} of iteration i writes (a dependence "
                           f"through memory)")
                    if d == 1:
                        raise Refusal(f"{why}; issuing it ahead would read the old values",
                                      load)
                    return d - 1, why
    return distance, ""


def _iteration_dependent(fp: Footprint, loop: scf.ForOp, iv: SSAValue) -> Footprint:
    """`fp` with every opaque value defined inside `loop` (other than its counter) replaced by
    a fresh symbol: at another iteration it has another value, so it must not cancel."""
    coefs = frozenset(((("other iteration", v) if v is not iv and defined_inside(v, loop)
                        else v), c) for v, c in fp.start.coefs)
    return Footprint(fp.op, fp.root, Linear(coefs, fp.start.const), fp.extent, fp.kind,
                     fp.space)


# --------------------------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------------------------


class _Copy:
    """One copy of (part of) the loop body being built: where ops go and what values mean."""

    def __init__(self, rewrite: _Rewrite, block: Block, slot: SSAValue,
                 tokens: dict[pto.AsyncLoadOp, SSAValue] | None = None):
        self.rw = rewrite
        self.block = block
        self.mapper: dict[SSAValue, SSAValue] = {}
        self.tokens = tokens if tokens is not None else {}
        self.slot_ptrs: dict[pto.AllocLocalOp, SSAValue] = {}
        plan = rewrite.plan
        for buffer, big in zip(plan.buffers, rewrite.slotted):
            count = self.emit(arith.ConstantOp(IntegerAttr(buffer.result.type.size,
                                                           slot.type)))
            offset = self.emit(arith.MuliOp(slot, count.results[0]))
            ptr = self.emit(pto.AddPtrOp(big.result, offset.results[0]))
            ptr.results[0].name_hint = buffer.result.name_hint
            ptr.location = buffer.location
            self.slot_ptrs[buffer] = ptr.results[0]
        for buffer, single in zip(plan.kept_buffers, rewrite.kept_allocs):
            self.slot_ptrs[buffer] = single.result

    def emit(self, op: Operation) -> Operation:
        if op.location == self.rw.unknown:
            op.location = self.rw.plan.loop.location
        self.block.add_op(op)
        return op

    def value(self, v: SSAValue) -> SSAValue:
        """`v` of the original loop body as seen in this copy (cloning pure ops on demand)."""
        if v in self.mapper:
            return self.mapper[v]
        loop = self.rw.plan.loop
        if not defined_inside(v, loop):
            return v
        if not isinstance(v, OpResult):
            raise AssertionError(f"pto-double-buffer: unmapped block argument {v}")
        op = v.op
        if (is_stage(op) or is_pipeline(op)):
            yielded = op.body.block.last_op.operands[v.index]  # type: ignore[union-attr]
            found = self.value(yielded)
        elif declares_buffer(op) and op in self.slot_ptrs:
            found = self.slot_ptrs[op]
        elif is_tile_load(op) and op in self.tokens:
            found = self.tokens[op]
        elif _is_pure(op):
            for operand in op.operands:
                self.value(operand)
            self.emit(op.clone(value_mapper=self.mapper))
            return self.mapper[v]
        else:
            raise AssertionError(f"pto-double-buffer: cannot recompute {op.name}")
        self.mapper[v] = found
        return found

    def loads(self) -> list[SSAValue]:
        """Issue the load stages' copies into this copy's slot; returns their tokens."""
        tokens = []
        for load in self.rw.plan.loads:
            for operand in load.operands:
                self.value(operand)
            clone = self.emit(load.clone(value_mapper=self.mapper))
            tokens.append(clone.results[0])
        return tokens

    def compute(self) -> None:
        """The compute stages, flattened, with `wait_all` turned into waits on known tokens;
        a load kept next to its MMA is issued right before the first wait for it."""
        plan = self.rw.plan
        for stage in plan.compute_stages:
            for op in stage.body.block.ops:
                if is_stage_yield(op):
                    continue
                self._issue_kept_loads(op)
                for inner in op.walk():
                    for operand in inner.operands:
                        if not defined_inside(operand, op):
                            self.value(operand)
                clone = self.emit(op.clone(value_mapper=self.mapper))
                for original, cloned in zip(list(op.walk()), list(clone.walk())):
                    if waits_on(original) == "all":
                        self._replace_wait_all(original, cloned)

    def _issue_kept_loads(self, op: Operation) -> None:
        for load in self.rw.plan.kept:
            if load in self.tokens or not any(_waits_for(inner, load) for inner in op.walk()):
                continue
            for operand in load.operands:
                self.value(operand)
            clone = self.emit(load.clone(value_mapper=self.mapper))
            self.tokens[load] = clone.results[0]

    def _replace_wait_all(self, original: Operation, cloned: Operation) -> None:
        plan = self.rw.plan
        tokens = [self.tokens[load] for load in plan.loads]
        tokens += [self.tokens[load] for load in plan.kept if load in self.tokens]
        position = self.rw.position
        for copy in plan.compute_copies:
            if position[copy] < position[original] and copy.results[0] in self.mapper:
                tokens.append(self.mapper[copy.results[0]])
        waits = [pto.WaitOp(t) for t in tokens]
        for wait in waits:
            wait.location = cloned.location
        Rewriter.insert_op(waits, InsertPoint.before(cloned))
        Rewriter.erase_op(cloned)


class _Rewrite:
    """Builds the prologue / kernel / epilogue form of one loop with `n` slots."""

    def __init__(self, plan: Plan, n: int):
        self.plan = plan
        self.n = n
        self.unknown = pto.WaitAllOp().location
        self.position = {op: i for i, op in enumerate(plan.loop.walk())}
        self.slotted: list[pto.AllocLocalOp] = []
        self.kept_allocs: list[pto.AllocLocalOp] = []

    def _const(self, block: Block, value: int, t: Attribute) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr(value, t))
        op.location = self.plan.loop.location
        block.add_op(op)
        return op.results[0]

    def _op(self, block: Block, op: Operation, name: str | None = None) -> SSAValue:
        op.location = self.plan.loop.location
        block.add_op(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def apply(self) -> None:
        plan, n = self.plan, self.n
        loop = plan.loop
        depth = n - 1
        ity = loop.lb.type
        assert isinstance(ity, IntegerType)
        before: list[Operation] = []
        for buffer in plan.buffers:
            t = buffer.result.type
            big = pto.AllocLocalOp(t.size * n, t.element_type)
            big.attributes[SLOTS_ATTR] = IntegerAttr(n, i64)
            big.result.name_hint = buffer.result.name_hint
            big.location = buffer.location
            self.slotted.append(big)
            before.append(big)
        for buffer in plan.kept_buffers:  # one buffer, hoisted out of the loop
            single = buffer.clone()
            self.kept_allocs.append(single)
            before.append(single)
        has = arith.CmpiOp(loop.lb, loop.ub, "slt")
        has.location = loop.location
        before.append(has)

        then = Block()
        if plan.wait_before:
            wait_all = pto.WaitAllOp()
            wait_all.location = loop.location
            then.add_op(wait_all)
        iv_name = loop.body.block.args[0].name_hint or "k"
        # trip count T = (ub - lb + step - 1) floordiv step
        span = self._op(then, arith.SubiOp(loop.ub, loop.lb))
        padded = self._op(then, arith.AddiOp(span, self._const(then, plan.step - 1, ity)))
        step = self._const(then, plan.step, ity)
        trips = self._op(then, arith.FloorDivSIOp(padded, step), "trips")

        # prologue: the loads of iterations 0 .. depth - 1
        first = self._iteration_copy(then, self._const(then, 0, ity), loop.lb)
        queue: list[list[SSAValue]] = [first.loads()]
        for j in range(1, depth):
            guard = self._op(then, arith.CmpiOp(self._const(then, j, ity), trips, "slt"))
            inner = Block()
            kj = self._op(inner, arith.AddiOp(loop.lb, self._const(inner, j * plan.step, ity)),
                          iv_name)
            toks = self._iteration_copy(inner, self._const(inner, j, ity), kj).loads()
            inner.add_op(scf.YieldOp(*toks))
            if_op = scf.IfOp(guard, [t.type for t in toks], [inner], [Block([scf.YieldOp(
                *queue[0])])])
            if_op.location = loop.location
            then.add_op(if_op)
            for r, t in zip(if_op.results, toks):
                r.name_hint = t.name_hint
            queue.append(list(if_op.results))

        # kernel: iterations 0 .. T - depth - 1 issue the loads of iteration i + depth
        nloads = len(plan.loads)
        carried_types = [a.type for a in loop.body.block.args[1:]]
        token_types = [pto.TokenType()] * (depth * nloads)
        kernel_count = self._op(then, arith.SubiOp(trips, self._const(then, depth, ity)))
        kbody = Block(arg_types=[ity, *token_types, *carried_types])
        self._name_args(kbody, queue)
        i = kbody.args[0]
        k = self._counter(kbody, i, iv_name)
        ahead = self._op(kbody, arith.AddiOp(k, self._const(kbody, depth * plan.step, ity)))
        slot_ahead = self._op(kbody, arith.RemSIOp(
            self._op(kbody, arith.AddiOp(i, self._const(kbody, depth, ity))),
            self._const(kbody, n, ity)))
        if plan.kept:
            # a load kept next to its MMA must not queue on the copy pipe behind a prefetch
            # that waits for the previous MMA to release its slot: the compute first, then
            # the prefetch (still issued while this iteration's MMA runs)
            current = self._compute_copy(kbody, i, k, kbody.args[1:1 + nloads],
                                         kbody.args[1 + depth * nloads:])
            new_tokens = self._iteration_copy(kbody, slot_ahead, ahead).loads()
        else:
            new_tokens = self._iteration_copy(kbody, slot_ahead, ahead).loads()
            current = self._compute_copy(kbody, i, k, kbody.args[1:1 + nloads],
                                         kbody.args[1 + depth * nloads:])
        yields = [current.value(v) for v in loop.body.block.last_op.operands]  # type: ignore
        kbody.add_op(scf.YieldOp(*kbody.args[1 + nloads:1 + depth * nloads], *new_tokens,
                                 *yields))
        zero, one = self._const(then, 0, ity), self._const(then, 1, ity)
        kernel = scf.ForOp(zero, kernel_count, one,
                           [t for slot in queue for t in slot] + list(loop.iter_args), kbody)
        kernel.location = loop.location
        then.add_op(kernel)

        # epilogue: the last `depth` iterations compute, nothing left to load
        start = self._op(then, arith.MaxSIOp(kernel_count, zero))
        ebody = Block(arg_types=[ity, *token_types, *carried_types])
        for arg, karg in zip(ebody.args, kbody.args):
            arg.name_hint = karg.name_hint
        i = ebody.args[0]
        k = self._counter(ebody, i, iv_name)
        current = self._compute_copy(ebody, i, k, ebody.args[1:1 + nloads],
                                     ebody.args[1 + depth * nloads:])
        yields = [current.value(v) for v in loop.body.block.last_op.operands]  # type: ignore
        ebody.add_op(scf.YieldOp(*ebody.args[1 + nloads:1 + depth * nloads],
                                 *ebody.args[1:1 + nloads], *yields))
        epilogue = scf.ForOp(start, trips, one, list(kernel.results), ebody)
        epilogue.location = loop.location
        then.add_op(epilogue)
        # Every token left in the queue has been waited for already: these waits are no-ops at
        # run time that say so in the IR (no copy of the loop is in flight after it), which
        # lets L1 liveness end the slots' lives here.
        for token in epilogue.results[:nloads]:
            done = pto.WaitOp(token)
            done.location = loop.location
            then.add_op(done)
        then.add_op(scf.YieldOp(*epilogue.results[depth * nloads:]))

        result_types = [r.type for r in loop.results]
        wrapper = scf.IfOp(has, result_types, [then], [Block([scf.YieldOp(*loop.iter_args)])])
        wrapper.location = loop.location
        for new, old in zip(wrapper.results, loop.results):
            new.name_hint = old.name_hint
        _erase_dead(wrapper)
        Rewriter.insert_op([*before, wrapper], InsertPoint.before(loop))
        Rewriter.replace_op(loop, [], list(wrapper.results))

    def _name_args(self, block: Block, queue: list[list[SSAValue]]) -> None:
        block.args[0].name_hint = "it"
        flat = [t for slot in queue for t in slot]
        for arg, tok in zip(block.args[1:], flat):
            arg.name_hint = tok.name_hint
        for arg, old in zip(block.args[1 + len(flat):], self.plan.loop.body.block.args[1:]):
            arg.name_hint = old.name_hint

    def _counter(self, block: Block, i: SSAValue, name: str) -> SSAValue:
        """The original loop counter of iteration `i`: lb + i * step."""
        ity = i.type
        scaled = self._op(block, arith.MuliOp(i, self._const(block, self.plan.step, ity)))
        return self._op(block, arith.AddiOp(self.plan.loop.lb, scaled), name)

    def _iteration_copy(self, block: Block, slot: SSAValue, k: SSAValue) -> _Copy:
        copy = _Copy(self, block, slot)
        copy.mapper[self.plan.loop.body.block.args[0]] = k
        return copy

    def _compute_copy(self, block: Block, i: SSAValue, k: SSAValue,
                      tokens: Sequence[SSAValue], carried: Sequence[SSAValue]) -> _Copy:
        slot = self._op(block, arith.RemSIOp(i, self._const(block, self.n, i.type)), "slot")
        copy = _Copy(self, block, slot, dict(zip(self.plan.loads, tokens)))
        args = self.plan.loop.body.block.args
        copy.mapper[args[0]] = k
        for old, new in zip(args[1:], carried):
            copy.mapper[old] = new
        copy.compute()
        return copy


def _erase_dead(root: Operation) -> None:
    """Drop the pure ops the rewrite built but nothing uses (a counter or slot address a copy
    of the body did not need), innermost and last first."""
    for op in reversed(list(root.walk())):
        if op is not root and op.results and _is_pure(op) and \
                not any(r.uses for r in op.results):
            Rewriter.erase_op(op)


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


def _candidate_loops(kernel: func.FuncOp) -> list[scf.ForOp]:
    return [op for op in kernel.walk() if isinstance(op, scf.ForOp)
            and any(is_pipeline(inner) for inner in op.body.block.ops)]


# --------------------------------------------------------------------------------------------
# Choosing by the model: candidate schedules, costed (docs/passes.md#choosing-by-the-cost-model)
# --------------------------------------------------------------------------------------------


class ScheduleCostError(Exception):
    """A candidate schedule could not be costed (no recorded launch, the kernel faults on it):
    the pass falls back to the fusion-aware default and says why in a remark."""


ScheduleCoster = Callable[[Callable[[], ModuleOp], Hashable, str, str, str, tuple[int, ...]],
                          int]
"""`coster(trial, shape, kernel, model, target, block) -> cycles`: the modelled cycles of
`kernel` in the module `trial()` builds (a trial copy holding one candidate schedule, which
the coster owns and erases) under cost model `model` on the target file `target` (empty: the
default target) for one block of shape `block` of the launch the module records; raises
`ScheduleCostError` when it cannot say. `shape` determines the trial: equal shapes build
equal modules (the pass's: the module's text before the loop is rewritten, which holds the
recorded launch, the loop's position and the schedule), so a coster that has costed one shape
answers again without building it. The cost model lives above the passes
(pypto.backend.cost_model.schedule); `pto.compile` and `pypto-opt` install it with
`costing_schedules`, and without one the pass keeps the fusion-aware default."""

_coster: ContextVar[ScheduleCoster | None] = ContextVar("pypto_schedule_coster", default=None)


@contextmanager
def costing_schedules(coster: ScheduleCoster | None) -> Iterator[None]:
    """Let `pto-double-buffer` cost its candidate schedules with `coster` within the block."""
    token = _coster.set(coster)
    try:
        yield
    finally:
        _coster.reset(token)


@dataclass(frozen=True)
class Schedule:
    """One way to double-buffer a loop: which loads stay in their own iteration (issued right
    before their first wait, into one buffer) rather than prefetched, and how many slots the
    prefetched ones get."""

    stay: frozenset[int]
    """Indices into the analysed plan's loads."""
    stages: int

    def describe(self, plan: Plan) -> str:
        names = [f"'{_buffer_name(load)}'" for i, load in enumerate(plan.loads)
                 if i not in self.stay]
        kept = [f"'{_buffer_name(load)}'" for i, load in enumerate(plan.loads)
                if i in self.stay]
        text = f"prefetch {', '.join(names)} with {self.stages} stages"
        return text + (f", {', '.join(kept)} in {'its' if len(kept) == 1 else 'their'} own "
                       f"iteration" if kept else "")


MAX_SUBSET_LOADS = 4
"""Up to this many loads that may stay, every subset is a candidate; beyond, only "prefetch
every load" and the fusion-aware default (the candidates stay few: each is one costed run)."""


def _first_wait(load: pto.AsyncLoadOp, plan: Plan) -> int | None:
    ops = [op for s in plan.compute_stages for op in s.body.block.ops]
    return next((i for i, op in enumerate(ops)
                 if any(_waits_for(inner, load) for inner in op.walk())), None)


def _may_stay(load: pto.AsyncLoadOp, plan: Plan) -> bool:
    """Can `load` be issued right before the compute op that first waits for it, instead of at
    the start of its iteration? Only when one waits for it and nothing before that wait may
    touch the memory it reads or writes (the shared alias query)."""
    ops = [op for s in plan.compute_stages for op in s.body.block.ops]
    wait = _first_wait(load, plan)
    if wait is None:
        return False
    mine = footprints(load)
    return not any(conflict(a, b) for op in walk(ops[:wait]) for a in mine
                   for b in footprints(op))


def with_stay(plan: Plan, stay: frozenset[int]) -> Plan:
    """`plan` with the loads of `stay` (indices into `plan.loads`) kept in their iteration."""
    kept = [load for i, load in enumerate(plan.loads) if i in stay]
    loads = [load for i, load in enumerate(plan.loads) if i not in stay]
    if not loads:
        raise Refusal("every load stays next to the MMA it feeds, where the target's firmware "
                      "fuses them (npu-fuse-load-mma): nothing left to prefetch", plan.loop)
    buffers = [b for b in plan.buffers if any(_root_buffer(l.dst, plan.load_stages) is b
                                              for l in loads)]
    kept_buffers = [b for b in plan.buffers if b not in buffers]
    return Plan(plan.loop, plan.pipeline, plan.step, plan.load_stages, plan.compute_stages,
                buffers, loads, plan.compute_copies, plan.wait_before, kept, kept_buffers,
                list(plan.remarks))


@dataclass(frozen=True)
class DoubleBufferPass(L1Options, ModulePass):
    """Give load-stage buffers of pipelined loops N slots and issue loads N-1 iterations ahead.

    Rewrites `scf.for` loops whose body is a `pto.pipeline` into prologue / kernel / epilogue
    form (see the module docstring); `pto.wait_all` in compute stages becomes waits on the
    tokens of the slot in use. Loops it cannot rewrite stay unchanged with a remark saying why;
    when N slots would not fit L1 (`l1-bytes`, default: the target's), fewer are used and a
    remark says so. Which loads to prefetch and how many stages (2..`stages`) it chooses by the
    cost model (`model` on `target`, one block of the launch `pto.compile` recorded), when a
    coster is installed (`costing_schedules`: `pto.compile` and `pypto-opt` do) and the module
    records a launch; otherwise fusion-aware: a load the target's firmware fuses with the MMA
    it feeds (`[fusion]` of `target`) stays next to that MMA, the other operand is prefetched
    (`keep_fusable_loads`). Options: `stages` (most slots per buffer, default 2; 1 leaves loops
    as they are), `model`, `target`.
    """

    name = "pto-double-buffer"
    stages: int = 2
    block_dims: tuple[int, ...] = ()
    """The launch's block shape (`pto.compile` fills it in): bounds lane ids when deciding
    whether a compute stage's HBM writes may meet a later iteration's loads; empty: any block
    of up to `max-block-lanes` lanes."""
    max_block_lanes: int = 1024
    target: str = ""
    """A target TOML file whose `[fusion]` table says which loads to keep next to their MMA
    and whose machine the candidates are costed on (default: the package's default target)."""
    model: str = "fused"
    """The cost model the candidate schedules are costed with ("fused" or "table";
    `pto.profile(model=...)` sets its own)."""
    prefetch: tuple[str, ...] = ()
    """Names of the load-stage buffers to prefetch (the others' loads stay in their
    iteration), instead of choosing: one candidate schedule, forced (tests, autotuning)."""
    choose: str = "model"
    """"model": cost the candidate schedules and keep the cheapest (when a coster is installed
    and the module records a launch); "fusion": the fusion-aware default without costing."""
    # The analyses of pypto.analysis.cache are dropped for a kernel whose loop it rewrites
    # (`_rewrite`); a kernel it leaves alone keeps them.
    preserves_analyses: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.stages <= 8:
            raise ValueError(f"stages must be between 1 and 8, got {self.stages}")
        if self.model not in ("fused", "table"):
            raise ValueError(f"model must be 'fused' or 'table', got {self.model!r}")
        if self.choose not in ("model", "fusion"):
            raise ValueError(f"choose must be 'model' or 'fusion', got {self.choose!r}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages < 2:
            return
        for kernel in functions(op):
            for loop in _candidate_loops(kernel):
                coster = _coster.get() if self.choose == "model" and \
                    recorded_launch(op) is not None else None
                try:
                    base = analyse(loop)
                    if self.prefetch:
                        self._apply_forced(kernel, loop, base)
                        continue
                    try:
                        default = self._default(base)
                    except Refusal:
                        if coster is None:
                            raise
                        default = None  # another schedule may still be possible
                    if coster is None or not self._choose(op, kernel, loop, base, default,
                                                          coster):
                        if default is None:
                            self._default(base)  # raises its Refusal
                        assert default is not None
                        self._apply_default(kernel, loop, base, default)
                except Refusal as refusal:
                    emit_remark(refusal.op or loop, f"pto-double-buffer: loop{_at(loop)} left "
                                f"as it is: {refusal.reason}")

    # the fusion-aware default ------------------------------------------------------------------

    def _default(self, base: Plan) -> tuple[Plan, int, str]:
        """The fusion-aware plan, how many iterations ahead its loads may run, and why not
        further (a `Refusal` when the loop cannot be double-buffered this way)."""
        plan = keep_fusable_loads(_copy_plan(base), self.target)
        ahead, why = safe_distance(plan, self.stages - 1, self._ranges())
        return plan, ahead, why

    def _apply_default(self, kernel: func.FuncOp, loop: scf.ForOp, base: Plan,
                       default: tuple[Plan, int, str]) -> None:
        plan, ahead, why = default
        if ahead < self.stages - 1:
            emit_remark(loop, f"pto-double-buffer: loop{_at(loop)}: requested "
                        f"{self.stages} stages, using {ahead + 1}: {why}")
        stay = frozenset(base.loads.index(load) for load in plan.kept)
        chosen, full = self._fit(kernel, loop, base, stay, ahead + 1)
        if full:
            emit_remark(loop, full)
        if chosen < 2:
            return
        self._rewrite(kernel, loop, base, Schedule(stay, chosen), plan.remarks)

    def _apply_forced(self, kernel: func.FuncOp, loop: scf.ForOp, base: Plan) -> None:
        """The schedule the `prefetch` option names."""
        names = [_buffer_name(load) for load in base.loads]
        unknown = [n for n in self.prefetch if n not in names]
        if unknown:
            raise Refusal(f"prefetch names {', '.join(map(repr, unknown))}, which no load of "
                          f"the loop fills; its buffers: {', '.join(map(repr, names))}", loop)
        stay = frozenset(i for i, n in enumerate(names) if n not in self.prefetch)
        for i in stay:
            if not _may_stay(base.loads[i], base):
                raise Refusal(f"the load of '{names[i]}' cannot stay in its iteration (no "
                              f"wait for it, or an access before its wait may touch its "
                              f"memory): prefetch it too", base.loads[i])
        plan = with_stay(base, stay)
        ahead, why = safe_distance(plan, self.stages - 1, self._ranges())
        if ahead < self.stages - 1:
            emit_remark(loop, f"pto-double-buffer: loop{_at(loop)}: requested "
                        f"{self.stages} stages, using {ahead + 1}: {why}")
        chosen, full = self._fit(kernel, loop, base, stay, ahead + 1)
        if full:
            emit_remark(loop, full)
        if chosen < 2:
            return
        self._rewrite(kernel, loop, base, Schedule(stay, chosen), self._stay_remarks(base, plan))

    # the model's choice ------------------------------------------------------------------------

    def _choose(self, module: ModuleOp, kernel: func.FuncOp, loop: scf.ForOp, base: Plan,
                default: tuple[Plan, int, str] | None, coster: ScheduleCoster) -> bool:
        """Cost every candidate schedule of `loop` and rewrite it with the cheapest; False
        (nothing rewritten) when there is no candidate or they cannot be costed."""
        default_stay = frozenset() if default is None else \
            frozenset(base.loads.index(load) for load in default[0].kept)
        candidates: list[Schedule] = []
        limits: dict[frozenset[int], tuple[int, str, str | None]] = {}
        fusable = self._fusable(base)
        for wider in (False, True):
            for stay in self._stay_sets(base, fusable, wider):
                if stay in limits:
                    continue
                try:
                    ahead, why = safe_distance(with_stay(base, stay), self.stages - 1,
                                               self._ranges())
                except Refusal:
                    continue
                fit, full = self._fit(kernel, loop, base, stay, ahead + 1)
                limits[stay] = (fit, why, full)
                candidates.extend(Schedule(stay, n) for n in range(2, fit + 1))
            if candidates:
                break
        if not candidates or (len(candidates) == 1 and default is not None and
                              candidates[0].stay == default_stay):
            return False  # nothing to choose between: the fusion-aware default says it all
        index = list(module.walk()).index(loop)
        name = kernel.sym_name.data
        text = str(module)  # the loop's shape: printed once, whatever the number of candidates

        def build(schedule: Schedule) -> Callable[[], ModuleOp]:
            def trial() -> ModuleOp:
                copy = module.clone()
                trial_loop = list(copy.walk())[index]
                assert isinstance(trial_loop, scf.ForOp)
                _Rewrite(with_stay(analyse(trial_loop), schedule.stay), schedule.stages).apply()
                return copy
            return trial

        costs: list[tuple[int, Schedule]] = []
        for schedule in candidates:
            shape = (text, index, tuple(sorted(schedule.stay)), schedule.stages)
            try:
                cycles = coster(build(schedule), shape, name, self.model, self.target,
                                tuple(self.block_dims))
            except ScheduleCostError as error:
                emit_remark(loop, f"pto-double-buffer: loop{_at(loop)}: the candidate "
                            f"schedules could not be costed ({error}); using the "
                            f"fusion-aware default")
                return False
            costs.append((cycles, schedule))
        preferred = max((s.stages for s in candidates if s.stay == default_stay), default=0)

        def rank(entry: tuple[int, Schedule]) -> tuple[int, int, int, int, list[int]]:
            cycles, s = entry  # ties: the fusion-aware default, fewer slots, fewer prefetches
            return (cycles, 0 if (s.stay, s.stages) == (default_stay, preferred) else 1,
                    s.stages, -len(s.stay), sorted(s.stay))

        costs.sort(key=rank)
        (best_cycles, best), where = costs[0], _at(loop)
        text = (f"pto-double-buffer: loop{where}: chose {best.describe(base)} "
                f"({best_cycles} cycles, model '{self.model}', one block of the recorded "
                f"launch)")
        if len(costs) > 1:
            cycles, runner = costs[1]
            text += f"; runner-up {runner.describe(base)} ({cycles} cycles)"
        emit_remark(loop, text + f"; {len(costs)} candidate{'s' if len(costs) > 1 else ''}")
        fit, why, full = limits[best.stay]
        if full and best.stages == fit:
            emit_remark(loop, full)
        if why and best.stages == fit:
            emit_remark(loop, f"pto-double-buffer: loop{where}: requested {self.stages} "
                        f"stages, using at most {fit}: {why}")
        plan = with_stay(base, best.stay)
        self._rewrite(kernel, loop, base, best, self._stay_remarks(base, plan))
        return True

    def _fusable(self, base: Plan) -> frozenset[int]:
        """The loads the target's firmware would fuse with their MMA if they stayed next to it
        (pypto.analysis.fusion; indices into `base.loads`)."""
        pairs, distance = fusion_rules(resolve_target(self.target or None))
        if ("npu.copy_in", "npu.mma") not in pairs:
            return frozenset()
        decisions = fusion_decisions(base.loads, base.compute_stages, distance,
                                     compute_copies=base.compute_copies)
        return frozenset(base.loads.index(d.load) for d in decisions if d.keep)

    def _stay_sets(self, base: Plan, fusable: frozenset[int],
                   wider: bool) -> list[frozenset[int]]:
        """The sets of loads that stay in their iteration, at least one load left to prefetch:
        every fusable pair kept together or not (the subsets of `fusable`); `wider`: every
        subset of the loads that may stay (`_may_stay`), for when none of the first fits.
        Beyond `MAX_SUBSET_LOADS` loads, only none and all of them."""
        able = sorted(fusable) if not wider else \
            [i for i, load in enumerate(base.loads) if _may_stay(load, base)]
        if len(able) > MAX_SUBSET_LOADS:
            sets = [frozenset[int](), frozenset(able)]
        else:
            sets = [frozenset(c) for r in range(len(able) + 1)
                    for c in itertools.combinations(able, r)]
        return [s for s in dict.fromkeys(sets) if len(s) < len(base.loads)]

    def _stay_remarks(self, base: Plan, plan: Plan) -> list[str]:
        """What the target's firmware does with the chosen schedule's loads (the fusion-aware
        analysis, pypto.analysis.fusion), in the words of the fusion-aware default."""
        pairs, distance = fusion_rules(resolve_target(self.target or None))
        if ("npu.copy_in", "npu.mma") not in pairs:
            return []
        remarks = []
        for d in fusion_decisions(base.loads, plan.compute_stages, distance,
                                  compute_copies=plan.compute_copies):
            what = f"the load of '{_buffer_name(d.load)}'{_at(d.load)}"
            stays = d.load in plan.kept
            if stays and d.keep:
                remarks.append(f"{what} stays next to its MMA{_at(d.mma)} (operand "
                               f"{d.operand.upper()}): {d.reason}; the other operand is "
                               f"prefetched")
            elif d.keep:
                remarks.append(f"{what} is prefetched although the firmware would fuse it "
                               f"with the MMA{_at(d.mma)}: the model prices the prefetch "
                               f"cheaper")
            elif stays:
                remarks.append(f"{what} stays in its own iteration although it would not fuse "
                               f"with the MMA{_at(d.mma)} ({d.reason}): the model prices it "
                               f"cheaper")
            else:
                remarks.append(f"{what} is prefetched: it would not fuse with the MMA"
                               f"{_at(d.mma)} ({d.reason})")
        return remarks

    # placing and rewriting ---------------------------------------------------------------------

    def _ranges(self) -> Ranges:
        dims = tuple(self.block_dims) + (1,) * (3 - len(self.block_dims))
        block = (dims[0], dims[1], dims[2]) if self.block_dims else None
        return Ranges(block, self.max_block_lanes)

    def _fit(self, kernel: func.FuncOp, loop: scf.ForOp, base: Plan, stay: frozenset[int],
             stages: int) -> tuple[int, str | None]:
        """The most stages (at most `stages`) whose slots fit L1 when the loads of `stay`
        stay in their iteration, and the remark saying so when fewer than asked for fit."""
        index = list(kernel.walk()).index(loop)
        needs: dict[int, int] = {}
        chosen = 1
        align = self.alignment
        allocs = [op for op in kernel.walk() if declares_buffer(op)]
        every = sum(_round_up(buffer_bytes(a), align) for a in allocs)
        loaded = sum(_round_up(buffer_bytes(b), align) for b in with_stay(base, stay).buffers)
        for n in range(stages, 1, -1):
            if every + (n - 1) * loaded <= self.capacity:
                chosen = n  # fits even with no byte shared: no need to place it to know
                break
            trial = kernel.clone()
            trial_loop = list(trial.walk())[index]
            assert isinstance(trial_loop, scf.ForOp)
            _Rewrite(with_stay(analyse(trial_loop), stay), n).apply()
            peak = plan_layout(trial, capacity=self.capacity, align=self.alignment).peak
            trial.erase()
            needs[n] = peak
            if peak <= self.capacity:
                chosen = n
                break
        if chosen == stages:
            return chosen, None
        wanted = f"{stages} stages need {kib(needs[stages])}"
        return chosen, (f"pto-double-buffer: loop{_at(loop)}: requested {stages} "
                        f"stages, only {chosen} fit{'s' if chosen == 1 else ''} in "
                        f"{kib(self.capacity)} of L1 ({wanted})"
                        + ("; the loop stays single-buffered" if chosen == 1 else ""))

    def _rewrite(self, kernel: func.FuncOp, loop: scf.ForOp, base: Plan, schedule: Schedule,
                 remarks: list[str]) -> None:
        invalidate(kernel)
        plan = with_stay(base, schedule.stay)
        chosen = schedule.stages
        names = ", ".join(f"'{b.result.name_hint or '?'}'" for b in plan.buffers)
        emit_remark(loop, f"pto-double-buffer: loop{_at(loop)}: {chosen} slots for {names}; "
                    f"loads run {chosen - 1} iteration{'s' if chosen > 2 else ''} ahead")
        for remark in remarks:
            emit_remark(loop, f"pto-double-buffer: loop{_at(loop)}: {remark}")
        _Rewrite(plan, chosen).apply()

    def _plan(self, loop: scf.ForOp) -> Plan:
        """`analyse`, then the target's fusion rules: loads that would fuse stay put."""
        return keep_fusable_loads(analyse(loop), self.target)


def _copy_plan(plan: Plan) -> Plan:
    return dataclasses.replace(plan, remarks=list(plan.remarks))


# --------------------------------------------------------------------------------------------
# Fusion awareness: loads the firmware fuses with their MMA are not prefetched
# --------------------------------------------------------------------------------------------


def _waits_for(op: Operation, load: pto.AsyncLoadOp) -> bool:
    """Does `op` wait for `load` (a `wait_all`, or a `wait` on its token)?"""
    return waits_for(op, load)


def keep_fusable_loads(plan: Plan, target: str = "") -> Plan:
    """`plan` with the loads that the target's firmware would fuse with their MMA taken out of
    the prefetched ones (docs/cost-model.md#the-firmware-level-npu-dialect): prefetching such a load an iteration ahead would separate it
    from its MMA and lose the fusion. They stay in their iteration, issued right before the
    wait in front of their MMA (one buffer), while the other operands are prefetched. The
    plan's remarks say which loads were kept and why (pypto.analysis.fusion)."""
    pairs, distance = fusion_rules(resolve_target(target or None))
    if ("npu.copy_in", "npu.mma") not in pairs:
        return plan
    decisions = fusion_decisions(plan.loads, plan.compute_stages, distance,
                                 compute_copies=plan.compute_copies)
    kept = [d.load for d in decisions if d.keep]
    for d in decisions:
        what = f"the load of '{_buffer_name(d.load)}'{_at(d.load)}"
        if d.keep:
            plan.remarks.append(f"{what} stays next to its MMA{_at(d.mma)} (operand "
                                f"{d.operand.upper()}): {d.reason}; the other operand is "
                                f"prefetched")
        else:
            plan.remarks.append(f"{what} is prefetched: it would not fuse with the MMA"
                                f"{_at(d.mma)} ({d.reason})")
    if not kept:
        return plan
    loads = [load for load in plan.loads if load not in kept]
    if not loads:
        raise Refusal("every load stays next to the MMA it feeds, where the target's firmware "
                      "fuses them (npu-fuse-load-mma): nothing left to prefetch", plan.loop)
    buffers = [b for b in plan.buffers if any(_root_buffer(l.dst, plan.load_stages) is b
                                              for l in loads)]
    kept_buffers = [b for b in plan.buffers if b not in buffers]
    return Plan(plan.loop, plan.pipeline, plan.step, plan.load_stages, plan.compute_stages,
                buffers, loads, plan.compute_copies, plan.wait_before, kept, kept_buffers,
                plan.remarks)


def _buffer_name(load: pto.AsyncLoadOp) -> str:
    buffer = root_buffer(load.dst)
    return (buffer.result.name_hint if buffer is not None else None) or "?"
