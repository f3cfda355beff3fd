"""Phase splitting: barriers and L1 writes cut a block's code into phases run lane by lane.

The interpreter runs every op for all lanes of a block before the next op (lockstep); compiled
code runs a *phase* for lane 0, then for lane 1, ... (docs/native.md#phases). The two agree
when no lane sees, within one phase, what another lane did in that phase. So a phase ends at

- `pto.barrier` / `pto.barrier_block` (loop fission, as POCL / CuPBoP / COX compile CUDA and
  OpenCL for CPUs); a warp barrier is treated as a block barrier, which gives the same result
  for every program the warp barrier makes well defined;
- every L1 write (`pto.store` / `pto.fma` / `pto.atomic_add` to L1): it is the last op of its
  phase, and a phase with an L1 write reads no L1 (the write gets a phase of its own when the
  code before it reads L1), so the lanes write in the interpreter's lane order and no lane reads
  what another wrote in the same phase. Lanes of one warp may therefore exchange data through L1 without a barrier, as
  the interpreter (lockstep) allows. In a kernel compiled for a 1-D block a write (or a
  lane-dependent `if` of writes) joins the reads before it when phase_merge.py proves no lane
  reads what another lane of the phase writes (tree steps, docs/native.md#merged-tree-steps).

Structured control flow around a cut becomes block-level control flow when it is uniform: an
`scf.for` whose bounds are uniform runs once per block with each phase of its body a lane loop
inside it; an `scf.if` on a uniform condition likewise. An `scf.if` on a lane-dependent
condition is *guard-split*: each phase of its body runs under the condition (carried per lane),
so lanes that did not take the branch skip it (a `barrier_block` there is refused: it would
deadlock on the device). A `while` around a cut runs at block level, its condition region and
its body split (while_phases.py). What cannot be split — a cut inside a `for`
whose trip count depends on the lane, a `barrier_block` under a lane-dependent condition — is
refused by `plan` with its reason and location (the interpreter runs those kernels).

Values: *uniform* values (parameters, constants, block ids and dimensions, arithmetic on them,
the counters and uniform carried values of block-level loops) live in the block-level code and
are recomputed or passed to the phases that use them. Pure lane-level arithmetic, lane ids and
pointer offsets are recomputed where used. Every other lane value live across a cut is carried
in a per-lane *spill slot* (8 bytes per lane per slot, one array per launch); a lane-dependent
value carried by a block-level loop or produced by a split `if` is a slot as well, written by a
small copy phase.

L1 is a per-block arena (`arena_layout`): the buffers at their `pto.alloc_local` offsets,
refilled with the interpreter's poison (NaN, 0x7FBADBAD) from a template before every block.

This module decides (`plan`, `refusal`); phase_codegen.py builds the functions (`split`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from pypto import dtypes
from pypto.backend.native.fast_blocks import BLOCK_ATTR, x_guard
from pypto.backend.native.pair_exchange import pair_exchange
from pypto.backend.native.phase_merge import mergeable, one_dimensional
from pypto.backend.native.tokens import TokenRefused, check_tokens
from pypto.backend.native import shared_hbm, while_phases
from pypto.backend.native.while_phases import BarrierCheck, While
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import launch_id, memory_accesses

LANE_SUFFIX = ".lane"
"""A lane function is named after its kernel or phase with this suffix (simt_to_lanes.py)."""
ARENA_ATTR = "pto.native_arena"
"""On a phase function: the index of its L1 arena argument (`!llvm.ptr`)."""
L1_INDEX_ATTR = "pto.native_l1"
"""On a `pto.alloc_local`: its buffer number in `arena_layout` (walk order)."""

LANE_LEVEL_IDS = ("global_id", "local_id", "warp_id", "lane_id")
UNIFORM_IDS = ("block_id", "block_dim", "grid_dim")
_NOT_FLOATING = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
                 "arith.ceildivsi", "arith.ceildivui", "math.ipowi")


class Refused(Exception):
    """The kernel's structure cannot be split into phases (reason, op)."""

    def __init__(self, reason: str, op: Operation | None):
        super().__init__(reason)
        self.reason = reason
        self.op = op


# --- the L1 arena ------------------------------------------------------------------------------


@dataclass(frozen=True)
class L1Buffer:
    """One `pto.alloc_local` in the block's arena (for error messages and the poison)."""

    name: str
    offset: int  # bytes
    count: int
    dtype: np.dtype
    location: str

    @property
    def end(self) -> int:
        return self.offset + self.count * self.dtype.itemsize


def allocs(kernel: func.FuncOp) -> list[pto.AllocLocalOp]:
    return [op for op in kernel.walk() if isinstance(op, pto.AllocLocalOp)]


def arena_layout(kernel: func.FuncOp) -> list[L1Buffer]:
    """The kernel's L1 buffers, at the offsets `pto-allocate-l1` gave them (the interpreter's
    placement, docs/interpreter.md#l1-one-address-space-per-block)."""
    out = []
    for i, op in enumerate(allocs(kernel)):
        t = op.result.type
        out.append(L1Buffer(op.result.name_hint or f"l1_{i}", int(op.l1_offset or 0), t.size,
                            np.dtype(dtypes.np_dtype_of(t.element_type)),
                            op_location(op, column=False)))
    return out


def arena_words(layout: list[L1Buffer]) -> int:
    """8-byte words of one block's arena (0 without L1)."""
    end = max((b.end for b in layout), default=0)
    return -(-end // 8)


ALIGN = 64
"""Bytes the arena and the spill slots are aligned to: a cache line, so a 64-byte vector access
at an aligned offset (`pto-allocate-l1` aligns buffers to 32) does not straddle two lines.
NumPy aligns its arrays to 16 bytes only: the same kernel then ran 0.45 or 0.54 ms a launch
(argmin block) depending on where its arena landed (docs/native.md#the-l1-arena)."""


def aligned_words(count: int) -> np.ndarray:
    """`count` zeroed 8-byte words starting at an `ALIGN`-byte boundary."""
    extra = ALIGN // 8
    base = np.zeros(count + extra, dtype=np.uint64)
    skip = (-base.ctypes.data % ALIGN) // 8
    return base[skip:skip + count]


def arena_template(layout: list[L1Buffer]) -> np.ndarray:
    """The arena buffer of a launch: one block's arena, then the poisoned template it is
    refilled from before every block (as the interpreter poisons fresh L1)."""
    words = arena_words(layout)
    data = aligned_words(2 * max(words, 1))
    raw = data.view(np.uint8)
    base = words * 8
    for b in layout:
        if b.dtype.kind == "f" or b.dtype.name == "bfloat16":
            value = np.array(np.nan, dtype=b.dtype)
        elif b.dtype.kind == "b":
            value = np.array(True)
        else:
            value = np.array(0x7FBADBAD).astype(b.dtype)
        raw[base + b.offset:base + b.end].view(b.dtype)[...] = value
    return data


# --- the plan ------------------------------------------------------------------------------


@dataclass
class Phase:
    """Lane-level ops run under `guards` ((condition, taken) pairs), then slot copies."""

    guards: tuple[tuple[SSAValue, bool], ...]
    ops: list[Operation] = field(default_factory=list)
    copies: list[tuple[SSAValue, SSAValue]] = field(default_factory=list)  # (value, slot key)


@dataclass
class Loop:
    op: scf.ForOp
    lane: list[int]  # indices of iter args carried per lane (slots)
    body: list["Item"]
    guards: tuple[tuple[SSAValue, bool], ...]


@dataclass
class If:
    op: scf.IfOp
    lane: list[int]  # indices of results carried per lane (slots)
    then: list["Item"]
    other: list["Item"]
    guards: tuple[tuple[SSAValue, bool], ...]


@dataclass
class Collective:
    op: Operation


Item = Union[Phase, Loop, If, Collective, While, BarrierCheck]


def _floating(op: Operation) -> bool:
    """Pure, region-free ops recomputed wherever they are needed (never spilled)."""
    if op.regions:
        return False
    if op.name in _NOT_FLOATING:  # a division (or `**`) may raise unless by a non-zero constant
        return _never_zero(op.operands[1])
    if isinstance(op, pto.AddPtrOp | pto.AllocLocalOp) or launch_id(op) is not None:
        return True
    return op.dialect_name() in ("arith", "math")


def _positive_constant(v: SSAValue) -> bool:
    c = v.owner
    return isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr) and \
        c.value.value.data > 0


def _never_zero(v: SSAValue) -> bool:
    """A divisor that cannot be zero: a non-zero constant, or `max(x, c)` with a constant
    c > 0 (the frontend's default copy stride divides by `max(rows * itemsize, 1)`,
    pypto/frontend/calls.py)."""
    c = v.owner
    if isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr):
        return c.value.value.data != 0
    return isinstance(c, arith.MaxSIOp) and any(_positive_constant(o) for o in c.operands)


def _is_l1_write(op: Operation) -> bool:
    """An L1 write, or a write to an HBM tensor lanes may share (shared_hbm.py): a cut."""
    return any(a.kind == "write" and a.space == "local" for a in memory_accesses(op)) or \
        shared_hbm.touches(op, "write")


COLLECTIVES = (pto.FillOp, pto.AsyncLoadOp, pto.AsyncStoreOp, pto.TileStoreOp, pto.MmaOp,
               pto.WaitOp, pto.WaitAllOp, *pto.TILE_VECTOR_OPS)
"""Block-level instructions run once per block between phases (docs/native.md#collectives;
the tile vector instructions: docs/native.md#tile-vector-instructions)."""
ASYNC = (pto.AsyncLoadOp, pto.AsyncStoreOp)


def _is_cut(op: Operation) -> bool:
    return isinstance(op, (pto.BarrierOp, pto.BarrierBlockOp, *COLLECTIVES)) or \
        _is_l1_write(op)


def _reads_l1(op: Operation) -> bool:
    """Reads L1 or a shared HBM tensor (shared_hbm.py), at any depth."""
    return any(a.space == "local" and a.kind == "read"
               for o in op.walk() for a in memory_accesses(o)) or \
        any(shared_hbm.touches(o, "read") for o in op.walk())


def needs_phases(kernel: func.FuncOp) -> bool:
    """Does the kernel use L1 or barriers (the phase-split lowering)?"""
    return shared_hbm.has_shared(kernel) or \
        any(isinstance(op, pto.AllocLocalOp | pto.BarrierOp | pto.BarrierBlockOp)
            for op in kernel.walk())


class Plan:
    """The kernel's phases and block-level structure (see the module doc)."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.structural: set[Operation] = set()
        self.lane_args: set[SSAValue] = set()     # lane-level iter args of block-level loops
        self.split_ifs: set[Operation] = set()    # ifs on a lane-dependent condition
        self.split_whiles: set[Operation] = set()  # whiles on one (while_phases.py)
        self.merged = False  # an L1 write joined the reads before it (1-D blocks only)
        self.shared = shared_hbm.has_shared(kernel)  # (no merged steps: shared_hbm.py)
        self._memo: dict[SSAValue, bool] = {}
        self._around_cuts = self._ancestors_of_cuts()
        self._mark(kernel.body.block)
        try:
            check_tokens(kernel)  # no in-flight hazard can fire (tokens.py)
        except TokenRefused as exc:
            raise Refused(exc.reason, exc.op) from None
        self._fixpoint()
        self.items = self._build(kernel.body.block, ())

    # which structured ops run at block level ---------------------------------------------

    def _has_cut(self, op: Operation) -> bool:
        return op in self._around_cuts

    def _ancestors_of_cuts(self) -> set[Operation]:
        """Every op enclosing a cut (one walk, instead of one per structured op)."""
        around: set[Operation] = set()
        for op in self.kernel.walk():
            if _is_cut(op):
                parent = op.parent_op()
                while parent is not None and parent is not self.kernel and parent not in around:
                    around.add(parent)
                    parent = parent.parent_op()
        return around

    def _mark(self, block: Block) -> None:
        for op in block.ops:
            if not op.regions or not self._has_cut(op):
                continue
            if not isinstance(op, scf.WhileOp | scf.ForOp | scf.IfOp):  # (a while: both its
                # regions are split, while_phases.py)
                raise Refused(f"{op_location(op, unknown='here')}: a barrier or L1 write inside "
                              f"'{op.name}'", op)
            self.structural.add(op)
            for region in op.regions:
                for b in region.blocks:
                    self._mark(b)

    def uniform(self, v: SSAValue) -> bool:
        """Is `v` the same for every lane of a block (computable at block level)?"""
        known = self._memo.get(v)
        if known is not None:
            return known
        result = self._uniform(v)
        self._memo[v] = result
        return result

    def _uniform(self, v: SSAValue) -> bool:
        if isinstance(v.type, pto.TokenType):  # a block's copies: block level, compiled to
            return True                          # nothing (tokens.py proves waits exact)
        if isinstance(v, BlockArgument):
            owner = v.block.parent_op()
            if owner is self.kernel:
                return True
            if isinstance(owner, scf.ForOp) and owner in self.structural:
                return v.index == 0 or v not in self.lane_args
            if isinstance(owner, scf.WhileOp) and owner in self.structural:
                return while_phases.arg_uniform(self, owner, v)
            return False
        op = v.owner
        if op in self.structural:
            if isinstance(op, scf.ForOp):
                return op.body.block.args[v.index + 1] not in self.lane_args
            if isinstance(op, scf.WhileOp):
                return while_phases.result_uniform(self, op, v.index)
            if op in self.split_ifs:
                return False
            return all(self.uniform(y.operands[v.index]) for y in _yields(op))
        name = launch_id(op)
        if name is not None:
            return name in UNIFORM_IDS
        if isinstance(op, pto.AllocLocalOp):
            return True
        if _floating(op):
            return all(self.uniform(o) for o in op.operands)
        return False

    def _lanes_1d(self) -> int | None:
        """The lane count of the 1-D block the kernel is compiled for, else None."""
        if not one_dimensional(self.kernel):
            return None
        return int(self.kernel.attributes[BLOCK_ATTR].data[0].value.data)  # type: ignore

    def _lane_id_guard(self, cond: SSAValue) -> bool:
        """Does `cond` compare `local_id(0)` or `lane_id` with a uniform value?"""
        def is_id(v: SSAValue) -> bool:
            o = v.owner
            return isinstance(o, Operation) and (
                launch_id(o) == "lane_id" or launch_id(o) == "local_id" and
                o.properties["dim"].value.data == 0)  # type: ignore[union-attr]

        return not self.uniform(cond) and \
            x_guard(cond, True, is_id, self.uniform) is not None

    def _fixpoint(self) -> None:
        while True:
            self._memo.clear()
            changed = False
            for op in self.structural:
                if isinstance(op, scf.IfOp):
                    if op not in self.split_ifs and not self.uniform(op.cond):
                        self.split_ifs.add(op)
                        changed = True
                    continue
                if isinstance(op, scf.WhileOp):
                    changed = while_phases.fixpoint_step(self, op) or changed
                    continue
                assert isinstance(op, scf.ForOp)
                yield_op = op.body.block.last_op
                for i, arg in enumerate(op.body.block.args[1:]):
                    if arg in self.lane_args:
                        continue
                    if not self.uniform(op.iter_args[i]) or \
                            not self.uniform(yield_op.operands[i]):
                        self.lane_args.add(arg)
                        changed = True
            if not changed:
                self._memo.clear()
                return

    # the schedule --------------------------------------------------------------------------

    def _build(self, block: Block, guards: tuple[tuple[SSAValue, bool], ...]) -> list[Item]:
        items: list[Item] = []
        cur: list[Operation] = []

        def flush() -> None:
            if any(not _floating(o) for o in cur):  # (pure ops alone: nothing to run)
                items.append(Phase(guards, list(cur)))
            cur.clear()

        for op in block.ops:
            where = op_location(op, unknown="here")
            if isinstance(op, scf.YieldOp | scf.ConditionOp):
                continue
            if isinstance(op, func.ReturnOp):
                if op.parent_op() is not self.kernel:
                    raise Refused(f"{where}: a return inside control flow", op)
                continue
            if isinstance(op, pto.BarrierOp | pto.BarrierBlockOp):
                if isinstance(op, pto.BarrierBlockOp) and guards:
                    raise Refused(f"{where}: pto.barrier_block under a lane-dependent "
                                  f"condition (every lane of the block must reach it)", op)
                flush()
                check = while_phases.barrier_check(op, guards, self.kernel) if guards \
                    else None
                if check is not None:  # the lanes the guards admit: whole warps or none
                    items.append(check)
                continue
            if op in self.split_ifs and not self.shared and \
                    pair_exchange(op, self._lanes_1d(), self.uniform):
                if any(_reads_l1(o) for o in cur):
                    flush()
                cur.append(op)  # a sorting network's compare-exchange (pair_exchange.py)
                self.merged = True
                flush()
                continue
            if op in self.split_ifs and not self.shared and any(_reads_l1(o) for o in cur) and \
                    absorbable(op, self.structural) and \
                    mergeable(self.kernel, [*cur, op], guards, self.uniform):
                cur.append(op)  # argmin's `if b < a: store, store` after the step's reads
                self.merged = True  # (phase_merge.py)
                flush()
                continue
            if op in self.structural:
                flush()
                if isinstance(op, scf.WhileOp):  # while_phases.py
                    items.append(while_phases.build(self, op, guards))
                    continue
                if isinstance(op, scf.ForOp):
                    for bound in (op.lb, op.ub, op.step):
                        if not self.uniform(bound):
                            raise Refused(f"{where}: a barrier or L1 write inside a for loop "
                                          f"whose bounds depend on the lane", op)
                    args = op.body.block.args[1:]
                    lane = [i for i, a in enumerate(args) if a in self.lane_args]
                    items.append(Loop(op, lane, self._build(op.body.block, guards), guards))
                    continue
                assert isinstance(op, scf.IfOp)
                then_b = op.true_region.blocks[0] if op.true_region.blocks else None
                else_b = op.false_region.blocks[0] if op.false_region.blocks else None
                if op in self.split_ifs:
                    for b, taken in ((then_b, True), (else_b, False)):
                        if b is None:
                            continue
                        inner = (*guards, (op.cond, taken))
                        items.extend(self._build(b, inner))
                        if op.results:
                            items.append(Phase(inner, [], [
                                (y, r) for y, r in zip(b.last_op.operands, op.results)]))
                    continue
                lane = [i for i, r in enumerate(op.results) if not self.uniform(r)]
                items.append(If(op, lane,
                                self._build(then_b, guards) if then_b else [],
                                self._build(else_b, guards) if else_b else [], guards))
                continue
            if isinstance(op, COLLECTIVES):
                if guards:
                    raise Refused(f"{where}: '{op.name}' under a lane-dependent condition (a "
                                  f"block-level instruction must be reached by every lane)", op)
                for operand in op.operands:
                    if not isinstance(operand.type, pto.TokenType) and \
                            not self.uniform(operand):
                        raise Refused(f"{where}: an operand of '{op.name}' differs between "
                                      f"lanes (it must be uniform across the block)", op)
                flush()
                items.append(Collective(op))
                continue
            if _is_l1_write(op):
                if op.regions:
                    raise Refused(f"{where}: an L1 write inside '{op.name}'", op)
                if not any(_reads_l1(o) for o in cur):
                    cur.append(op)  # ends the phase before it, which reads no L1 (below)
                    flush()
                    continue
                if isinstance(op, pto.StoreOp) and not self.shared and \
                        mergeable(self.kernel, [*cur, op], guards, self.uniform):
                    cur.append(op)  # a tree step: no lane reads what another writes
                    self.merged = True  # (phase_merge.py)
                    flush()
                    continue
                flush()
                items.append(Phase(guards, [op]))
                continue
            if _floating(op) and all(self.uniform(r) for r in op.results):
                continue  # recomputed where needed
            if isinstance(op, scf.IfOp) and not op.results and all(_floating(o) for o in cur) \
                    and self._lane_id_guard(op.cond):
                flush()  # `if tid == 0:` as the phase's guard: its lane loop runs only the
                for b, taken in ((op.true_region, True), (op.false_region, False)):  # lanes
                    if b.blocks:                                    # it admits (fast phases)
                        items.extend(self._build(b.blocks[0], (*guards, (op.cond, taken))))
                continue
            cur.append(op)
        flush()
        return items


def _l1_span(value: SSAValue) -> tuple[int, int] | None:
    """Byte range of the L1 buffer a pointer points into, None for HBM."""
    while not isinstance(value.owner, pto.AllocLocalOp):
        if not isinstance(value.owner, pto.AddPtrOp):
            return None
        value = value.owner.ptr
    op = value.owner
    t = op.result.type
    start = int(op.l1_offset or 0)
    return start, start + t.size * np.dtype(dtypes.np_dtype_of(t.element_type)).itemsize


def _hbm_root(value: SSAValue) -> SSAValue | None:
    while isinstance(value.owner, pto.AddPtrOp):
        value = value.owner.ptr
    return value if isinstance(value, BlockArgument) else None


def _yields(op: scf.IfOp) -> list[Operation]:
    return [r.blocks[0].last_op for r in op.regions if r.blocks]


def plan(kernel: func.FuncOp) -> Plan:
    """The kernel's phase plan; raises `Refused` for what cannot be split."""
    return Plan(kernel)


def refusal(kernel: func.FuncOp, keep: list[Plan] | None = None
            ) -> tuple[str, Operation | None] | None:
    """(reason, op) when the kernel's structure cannot be split into phases, else None (and
    the plan appended to `keep`, for a caller that needs it next: jit.py's build)."""
    try:
        made = Plan(kernel)
    except Refused as exc:
        return exc.reason, exc.op
    if keep is not None:
        keep.append(made)
    return None


def absorbable(op: Operation, structural: set[Operation]) -> bool:
    """Can the lane-dependent `if` `op` run inside a phase (only straight-line ops and L1
    stores in it: no barrier, block-level instruction or split structure)?"""
    for o in op.walk():
        if o is op:
            continue
        if o in structural or isinstance(o, (pto.BarrierOp, pto.BarrierBlockOp, *COLLECTIVES)):
            return False
    return True


def merged_phases(kernel: func.FuncOp, known: Plan | None = None) -> bool:
    """Does the kernel's phase plan merge an L1 write into the phase of its reads (so a launch
    must use the 1-D block it was compiled for)? `known`: the kernel's plan, if made."""
    if not needs_phases(kernel) or not one_dimensional(kernel):
        return False
    if known is not None:
        return known.merged
    try:
        return plan(kernel).merged
    except Refused:
        return False
