"""The plan of one kernel variant: the planner's decisions for every op, which codegen reads to
emit code (see docs/interpreter.md, "The access planner").

`plan_kernel` walks a kernel once per generated variant (mode, 1-D launch, instrumented,
fast paths on) and decides, per op, how the generated code runs it: a lane-affine slice
(`load_ramp` / `store_ramp`, the values kept as a scalar base), block-local rows
(`load_rows` / `store_rows` / `rows_op`), a store computing `a op b` into the slice
(`store_ramp_op`), a windowed branch, a planned access through the affine forms of plan.py
(`load_plan` / `store_plan`: slice, strided view, broadcast, or the gather), a comparison on
the vector's box (`form_cmp`), a per-block copy address (`block_offset`), and the decisions
of the access strategies (strategies/: batched copies, lazy fills, atomics, ...; op ->
decisions, `KernelPlan.decisions`), whose run-time parts receive them. Codegen inspects
no op shape to choose a path: it emits what the plan says. `PYPTO_FAST_PATHS=0` gives the
empty plan, the general path (the oracle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.traits import IsTerminator

from pypto.analysis.uniformity import varying_values, walk
from pypto.backend.interpreter.codegen_loops import _is_address
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.optables import (
    _ARITH_BINARY,
    _CMP,
    _CMP_SIGNED,
    _FLIP,
    _MATH_UNARY,
    _STORE_UFUNCS,
)
from pypto.backend.interpreter import strategies
from pypto.backend.interpreter.modes import BATCH, BLOCK, GRID, WARP  # noqa: F401 (re-exported)
from pypto.backend.interpreter.plan import AccessPlan, Planner, dead_ops, vector_lanes
from pypto.dialects import pto
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import (
    CopyFootprint,
    declared_accesses,
    elementwise_reference,
    has_tile_footprint,
    is_block_collective,
    kernel_function,
    launch_id,
    offset_base,
    sync_scope,
    writes_memory,
)


class _Uniform:
    """`v in uniform`: v holds one value for the whole lane vector (a scalar at run time)."""

    def __init__(self, varying: set[SSAValue]):
        self.varying = varying

    def __contains__(self, v: object) -> bool:
        return v not in self.varying


@dataclass
class KernelPlan:
    """The plan of one kernel variant: per op, the access kind the generated code takes and its
    parameters (codegen reads it, never decides). Empty (fast paths off): the general path."""
    uniform: _Uniform = field(default_factory=lambda: _Uniform(set()))
    affine: dict[SSAValue, str] = field(default_factory=dict)  # value -> name of its base var
    # affine values that are block-local: lane k of each block holds `base + k` (batch mode,
    # several blocks per vector; accesses through them are 2-D slices, one row per block)
    local: set[SSAValue] = field(default_factory=set)
    needs_array: set[SSAValue] = field(default_factory=set)
    # arithmetic ops computed by the store right after them, into memory (store_ramp_op)
    fused: set[Operation] = field(default_factory=set)
    # stores `buf[tid + u] = a op b` whose operands are loads at block-local addresses, done
    # as one ufunc over 2-D slices of L1 (store -> its two loads)
    row_ops: dict[Operation, tuple[Operation, Operation]] = field(default_factory=dict)
    # planned stores `p[...] = q[...] op r[...]` whose operands are planned loads (the
    # warp-synchronous tree's `red + warp * 32 + lane`), done as one ufunc over the three
    # views (views.plan_op; store -> its two loads)
    plan_ops: dict[Operation, tuple[Operation, Operation]] = field(default_factory=dict)
    # branches run on the window of lanes they keep active (`if tid < s`, batch mode)
    windowed: set[Operation] = field(default_factory=set)
    # the access planner (plan.py): loads / stores through affine addresses (op -> plan), and
    # the pure address arithmetic nothing else needs (not emitted)
    planned: dict[Operation, AccessPlan] = field(default_factory=dict)
    dead: set[Operation] = field(default_factory=set)
    # values normalised to `ramp + uniform` (plan.py ramp_base) though written another way
    # (`b * bd + l`): op -> (uniform part, vector offset, block-local?)
    promoted: dict[Operation, tuple[dict[tuple[str, ...], int], str, bool]] = \
        field(default_factory=dict)
    # comparisons `lane-affine OP uniform` (signed) on the ramp or block-local ids
    # (_ramp_cmp / local_cmp): op -> (the affine operand, the uniform one, x OP u)
    ramp_cmps: dict[Operation, tuple[SSAValue, SSAValue, str]] = field(default_factory=dict)
    # tail splits: (kernel argument index, adjust) when a test `global id < args[i] + adjust`
    # (or its negation) guards lanes (grid and batch modes, 1-D): the executor runs the whole
    # blocks below the bound as their own lane vectors (the test passes on every lane: no
    # mask, slices), the partial block and those above it apart (executor._split_at_tail)
    tail_bounds: list[tuple[int, int]] = field(default_factory=list)
    # comparisons `form OP uniform` evaluated on the vector's box (views.form_cmp):
    # op -> (the form's source, its width, the uniform operand, the predicate as x OP u)
    form_cmps: dict[Operation, tuple[str, int, SSAValue, str]] = field(default_factory=dict)
    # bulk copies whose L1 / HBM address varies only with the block (batch mode): (op, operand
    # index) -> its plan; the copy gets each block's offset from the forms (views.block_offset)
    block_addrs: dict[tuple[Operation, int], AccessPlan] = field(default_factory=dict)
    # windowed branch body -> the per-lane values defined outside it that it uses (narrowed
    # to the window's lanes on the way in)
    window_inputs: dict[Block, list[SSAValue]] = field(default_factory=dict)
    # `fma(a, 1.0, c)` / `fma(1.0, b, c)` through a lane-affine dst: the addition computed
    # into the stored slice (store_ramp_op); op -> (the other factor, c)
    fma_adds: dict[Operation, tuple[SSAValue, SSAValue]] = field(default_factory=dict)
    # load results (and branch results) that may alias memory: a view, not a copy
    views: set[SSAValue] = field(default_factory=set)
    # the strategies (strategies/): op -> the decisions they made for it (the kernel's
    # func.func for kernel-wide ones); each run-time part checks only what depends on the
    # data (e.g. "all values equal" for a uniform fill). Empty: the general path
    decisions: dict[Operation, tuple[strategies.Decision, ...]] = field(default_factory=dict)
    # scf.for body -> its ops computed once, before the loop (pure, loop-invariant)
    hoisted: dict[Block, list[Operation]] = field(default_factory=dict)
    # grid mode: lane vectors of this many lanes (plan.vector_lanes: a kernel that makes many
    # passes over its lanes runs on cache-sized vectors); None: the executor's default
    vector_lanes: int | None = None

    def decision(self, op: Operation, kind: type) -> Any:
        """The decision of kind `kind` (a strategy's Decision class) made for `op`, or None."""
        return next((d for d in self.decisions.get(op, ()) if isinstance(d, kind)), None)

    def decides(self, kind: type) -> bool:
        """Did some op get a decision of this kind (a strategy's Decision class)?"""
        return any(isinstance(d, kind) for found in self.decisions.values() for d in found)


class KernelPlanner:
    """Builds the KernelPlan of one kernel variant. `name(v)` / `fresh(prefix)`: codegen's
    names for values and fresh variables (the plan names the bases of lane-affine values)."""

    def __init__(self, kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool,
                 fast: bool, name: Callable[[SSAValue], str], fresh: Callable[[str], str]):
        self.kernel = kernel
        self.mode = mode
        self.one_d = one_d
        self.instrumented = instrumented
        self.fast = fast
        self.name = name
        self.fresh = fresh
        self.an = KernelPlan()

    def build(self) -> KernelPlan:
        ops = list(self.kernel.body.block.ops)
        self.analyse(ops)
        if self.fast:  # else the empty plan: the general path, no code motion either
            for op in _walk(ops):
                if isinstance(op, scf.ForOp):
                    hoisted = self._loop_invariants(op.body.block)
                    if hoisted:
                        self.an.hoisted[op.body.block] = hoisted
            self._decide_emission(ops)
            if self.mode == GRID:
                self.an.vector_lanes = vector_lanes(
                    ops, self._varying_pass,
                    lambda op: any(_is_address(x.type) and x not in self.an.uniform
                                   for x in op.operands))
        return self.an

    def _varying_pass(self, op: Operation) -> bool:
        """Does the generated code make a pass over the lane vector for `op`? (a per-lane
        value computed, or stored; not the address arithmetic the plan leaves out or the
        ramps it computes without arrays)"""
        an = self.an
        if op in an.dead or offset_base(op) is not None or \
                isinstance(op, scf.YieldOp | func.ReturnOp):
            return False
        if op.results:
            return any(r not in an.uniform and r not in an.affine for r in op.results)
        return any(x not in an.uniform for x in op.operands)

    def analyse(self, ops: Iterable[Operation]) -> None:
        """Uniformity, lane-affine values (ramps, block-local ids, promoted forms), windowed
        branches, fused stores and row ops, then the planned accesses (_plan) and which
        affine values must also exist as arrays."""
        an = self.an
        an.uniform = _Uniform(varying_values(self.kernel,
                                             block_ids_uniform=self.mode in (BLOCK, WARP)))
        self.planner = Planner(lambda v: v in an.uniform, self.name,
                               self.mode in (GRID, BATCH))
        if not self.fast:
            return  # an empty plan: the general path
        promote = self.one_d
        for op in _walk(ops):
            if isinstance(op, scf.IfOp) and self._windowable(op):
                an.windowed.add(op)
            in_window = bool(an.windowed) and self.in_window(op)
            if promote and _promotable(op) and op.results[0] not in an.affine \
                    and op.results[0] not in an.uniform and not in_window:
                ramp = self.planner.ramp_base(op.results[0], self.mode)
                if ramp is not None:
                    an.promoted[op] = ramp
                    an.affine[op.results[0]] = self.fresh("rb")
                    if ramp[2]:
                        an.local.add(op.results[0])
                    continue
            which = launch_id(op)
            if which in ("global_id", "local_id") and self.one_d:
                if op.dim_index == 0 and (which == "global_id" or  # type: ignore[attr-defined]
                                          self.mode in (BLOCK, WARP)):
                    an.affine[op.results[0]] = self.fresh("rb")
                elif op.dim_index == 0 and self.mode == BATCH:  # type: ignore[attr-defined]
                    an.affine[op.results[0]] = self.fresh("rb")
                    an.local.add(op.results[0])
            elif isinstance(op, arith.AddiOp | arith.SubiOp) or offset_base(op) is not None:
                a, b = op.operands
                if in_window and not (a in an.local or b in an.local):
                    continue  # a window's lanes are not a ramp: only block-local ids stay affine
                if a in an.affine and b in an.uniform:
                    an.affine[op.results[0]] = self.fresh("rb")
                    if a in an.local:
                        an.local.add(op.results[0])
                elif b in an.affine and a in an.uniform and not isinstance(op, arith.SubiOp):
                    an.affine[op.results[0]] = self.fresh("rb")
                    if b in an.local:
                        an.local.add(op.results[0])
        if not self.instrumented:  # instruments observe every op's value: no fusion then
            for op in _walk(ops):
                if _lane_store(op) and op.operands[1] in an.affine and \
                        op.operands[1] not in an.local and not self.in_window(op):
                    owner = op.operands[0].owner
                    # only `a op b` right before the store, used by it alone, on plain values
                    if type(owner) in _STORE_UFUNCS and owner.next_op is op and \
                            op.operands[0].has_one_use() and \
                            not any(x in an.affine for x in owner.operands):
                        an.fused.add(owner)
                elif _lane_store(op) and op.operands[1] in an.local:
                    loads = self._row_operands(op)
                    if loads is not None:
                        an.row_ops[op] = loads
                        an.fused.update((op.operands[0].owner, *loads))
        self._ramp_cmps(ops)
        self._plan(ops)
        if not self.instrumented:
            for op in _walk(ops):
                if _lane_store(op) and op in an.planned:
                    loads = self._row_operands(op, an.planned)
                    if loads is not None:
                        an.plan_ops[op] = loads
                        an.fused.update((op.operands[0].owner, *loads))
        # which affine values must also exist as arrays?
        for op in _walk(ops):
            if op in an.dead:
                continue
            for index, operand in enumerate(op.operands):
                if op in an.planned and index == _ptr_index(op):
                    continue
                if operand not in an.affine:
                    continue
                if self._consumes_affine(op, index) and \
                        (operand in an.local or not self.in_window(op)):
                    continue
                an.needs_array.add(operand)

    def _ramp_cmps(self, ops: Iterable[Operation]) -> None:
        """Signed comparisons of a lane-affine value with a uniform one (inside a window, of
        block-local ids only: the window's lanes are not a ramp)."""
        an = self.an
        for op in _walk(ops):
            if not isinstance(op, arith.CmpiOp):
                continue
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            lhs, rhs = op.operands
            if pred not in _CMP_SIGNED:
                continue
            if lhs in an.affine and rhs in an.uniform:
                x, u, sym = lhs, rhs, _CMP[pred]
            elif rhs in an.affine and lhs in an.uniform:
                x, u, sym = rhs, lhs, _FLIP[_CMP[pred]]
            else:
                continue
            if x in an.local or not self.in_window(op):
                an.ramp_cmps[op] = (x, u, sym)
                self._tail_bound(x, u, sym)

    def _tail_bound(self, x: SSAValue, u: SSAValue, sym: str) -> None:
        """A test `x < u`, `x <= u` (or `x >= u`, `x > u`: the early return `if i >= n:
        return`) with x the global id (however written) and u a kernel scalar argument marks
        where the launch's lanes change sides (KernelPlan.tail_bounds)."""
        an = self.an
        if self.mode not in (GRID, BATCH) or not self.one_d or self.instrumented or \
                sym not in ("<", "<=", ">=", ">") or x in an.local:
            return
        owner = x.owner
        gid = isinstance(owner, Operation) and launch_id(owner) == "global_id" and \
            owner.dim_index == 0 or \
            owner in an.promoted and an.promoted[owner][:2] == ({}, "_ctx.first_lane")
        body = self.kernel.body.block
        if gid and isinstance(u, BlockArgument) and u.owner is body and \
                isinstance(u.type, IntegerType | IndexType):
            bound = (u.index, 1 if sym in ("<=", ">") else 0)
            if bound not in an.tail_bounds:
                an.tail_bounds.append(bound)

    def _plan(self, ops: Iterable[Operation]) -> None:
        """The access planner (plan.py): loads and stores whose address no structured path
        above takes but which is affine in the lane symbols become planned accesses; the pure
        arithmetic only they used is left out (kept in the instrumented variant, whose hooks
        report every value)."""
        an = self.an
        planner = self.planner
        self._cmp_leaves: set[SSAValue] = set()
        walked = list(_walk(ops))
        for op in walked:
            if _kernel_fn(op) not in ("load", "store", "fma") or has_tile_footprint(op) or \
                    op in an.row_ops:
                continue  # lane loads, stores and fmas only
            if _lane_store(op) and op.operands[0].owner in an.fused:
                continue
            ptr = op.operands[_ptr_index(op)]
            if ptr in an.affine:
                continue  # a lane-affine slice (load_ramp, load_rows)
            plan = planner.plan(ptr)
            if plan is not None:
                an.planned[op] = plan
        if self.mode == BATCH:
            for op in walked:
                if not op.has_trait(CopyFootprint):  # a bulk copy
                    continue
                for index in (0, 1):
                    plan = planner.block_plan(op.operands[index])
                    if plan is not None:
                        an.block_addrs[(op, index)] = plan
        for op in walked:
            if not isinstance(op, arith.CmpiOp) or op.results[0] in an.uniform:
                continue
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            lhs, rhs = op.operands
            if pred not in _CMP_SIGNED or lhs in an.affine or rhs in an.affine:
                continue  # the lane-affine compare (_cmp) takes those
            if rhs in an.uniform:
                x, u, sym = lhs, rhs, _CMP[pred]
            elif lhs in an.uniform:
                x, u, sym = rhs, lhs, _FLIP[_CMP[pred]]
            else:
                continue
            form = planner.form(x)
            width = _int_width(x.type)
            if form is not None and not form.uniform:
                an.form_cmps[op] = (form.source(), width, u, sym)
                for leaf in form.leaves():
                    if leaf in planner.leaf_values:
                        self._cmp_leaves.add(planner.leaf_values[leaf])
        if (an.planned or an.promoted or an.form_cmps or an.block_addrs) and \
                not self.instrumented:
            names = {n for p in an.planned.values() for n in p.leaves()}
            names.update(n for p in an.block_addrs.values() for n in p.leaves())
            names.update(leaf for rest, _, _ in an.promoted.values() for m in rest for leaf in m)
            leaves = {planner.leaf_values[n] for n in names if n in planner.leaf_values}
            leaves |= self._cmp_leaves
            leaves.update(u for _, _, u, _ in an.form_cmps.values())

            def virtual(user: Operation, index: int) -> bool:
                return user in an.planned and index == _ptr_index(user) or \
                    user in an.promoted or user in an.form_cmps or (user, index) in an.block_addrs
            an.dead = dead_ops(walked, virtual, leaves)

    def _row_operands(self, store: Operation, planned: Any = None) -> \
            tuple[Operation, Operation] | None:
        """For `store(p, load(q) op load(r))` with p, q, r block-local addresses (the tree
        reduction's `buf[tid] = buf[tid] + buf[tid + s]`), where each intermediate value has no
        other use and nothing between the first load and the store touches memory: the two
        loads, which then run at the store as one ufunc over rows (StructuredAccess.rows_op).
        With `planned` (the planned accesses): the same for loads that are planned accesses
        (PlannedAccess.plan_op, one ufunc over the three views)."""
        value = store.operands[0]  # a lane store: (value, address)
        owner = value.owner
        if type(owner) not in _STORE_UFUNCS or owner.next_op is not store or \
                not value.has_one_use():
            return None
        loads = []
        for v in owner.operands:
            load = v.owner
            if not (isinstance(load, Operation) and _kernel_fn(load) == "load" and
                    (load.operands[0] in self.an.local if planned is None else load in planned) and
                    v.has_one_use() and load.parent_block() is store.parent_block()):
                return None
            loads.append(load)
        first = min(loads, key=lambda o: o.parent_block().get_operation_index(o))
        op = first.next_op
        while op is not owner:
            if op is None or op.regions or op.name in DIVISIONS or \
                    not (op in loads or type(op) in _ARITH_BINARY or offset_base(op) is not None
                         or isinstance(op, arith.ConstantOp | arith.CmpiOp | arith.CmpfOp)):
                return None  # only the two loads and pure arithmetic that cannot fail
            op = op.next_op
        return loads[0], loads[1]

    def in_window(self, op: Operation) -> bool:
        """Is `op` inside a branch that runs on a window of lanes?"""
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if parent in self.an.windowed:
                return True
            parent = parent.parent_op()
        return False

    def _windowable(self, op: scf.IfOp) -> bool:
        """Can this branch run on just the lanes it keeps active (windows.WindowContext)? In batch
        mode, when its condition compares block-local ids or the warp number with a uniform
        bound (so the active lanes are a window of each block's lanes), its body has no
        block-level instruction, atomic, output or global id, and it yields plain values. A
        warp barrier may be in it: the window's lanes are checked warp by warp."""
        an = self.an
        if self.mode != BATCH or self.instrumented or not self.one_d:
            return False
        test = op.cond.owner
        if not isinstance(test, arith.CmpiOp):
            return False
        a, b = test.operands
        def banded(v: SSAValue) -> bool:
            # block-local ids, the warp number in the block, or any value the planner finds
            # affine in local ids / warp / lane only (`2 * s * tid`, `lane`): the same lanes
            # of every block then pass the test, the window of one block is every block's
            if v in an.local or isinstance(v.owner, Operation) and launch_id(v.owner) == "warp_id":
                return True
            form = self.planner.form(v) if self.fast else None
            return form is not None and not form.uniform and \
                all(sym in ("l0", "w", "n") for sym in form.coef_polys)
        if not ((banded(a) and b in an.uniform) or (banded(b) and a in an.uniform)):
            return False
        if any(_is_address(r.type) or isinstance(r.type, pto.TokenType) for r in op.results):
            return False
        return all(_follows_window(inner)
                   for inner in _walk([o for r in op.regions for b in r.blocks for o in b.ops]))

    def _window_inputs(self, block: Block) -> list[SSAValue]:
        """Per-lane values defined outside `block` (a windowed branch) that its ops use by
        name: they are narrowed to the window's lanes on the way in."""
        an = self.an
        inside: set[SSAValue] = set()
        ops = list(_walk(block.ops))
        for inner in ops:
            inside.update(inner.results)
            for region in inner.regions:
                for b in region.blocks:
                    inside.update(b.args)
        used: dict[SSAValue, None] = {}
        for inner in ops:
            if inner in an.dead:
                continue
            for index, v in enumerate(inner.operands):
                if v in inside or v in an.uniform:
                    continue
                if inner in an.planned and index == _ptr_index(inner) or \
                        inner in an.form_cmps or inner in an.promoted:
                    continue  # computed from ids and uniform values (plan.py)
                if v in an.local and v not in an.needs_array:
                    continue  # used through its uniform base only
                used[v] = None
        return list(used)

    def _consumes_affine(self, op: Operation, index: int) -> bool:
        an = self.an
        if isinstance(op, arith.AddiOp | arith.SubiOp) or offset_base(op) is not None:
            return op.results[0] in an.affine
        if _kernel_fn(op) in ("load", "store", "fma") and not has_tile_footprint(op) and \
                index == _ptr_index(op):  # the address of a lane load, store or fma
            return True
        if isinstance(op, arith.CmpiOp) and op.results[0] not in an.uniform:
            other = op.operands[1 - index]
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            return other in an.uniform and pred in _CMP_SIGNED
        return False

    def _loop_invariants(self, body: Block) -> list[Operation]:
        """Ops of a loop body (its own block, in order) that compute the same value in every
        iteration: pure arithmetic and comparisons, none of which can fail, whose operands all
        come from outside the loop or from other such ops. The frontend re-derives `x < n`
        and `row0 + ty` inside loops; each is a pass over the lanes per iteration."""
        if self.instrumented:  # instruments see every op where the program has it
            return []
        inside: set[SSAValue] = set(body.args)
        hoisted: list[Operation] = []
        for inner in list(body.ops)[:-1]:
            pure = (type(inner) in _ARITH_BINARY or isinstance(inner, arith.CmpiOp | arith.CmpfOp)
                    or isinstance(inner, arith.ConstantOp))
            if pure and inner not in self.an.fused and not inner.regions and \
                    not any(v in inside for v in inner.operands):
                hoisted.append(inner)
            else:
                inside.update(inner.results)
        return hoisted

    def _decide_emission(self, ops: Iterable[Operation]) -> None:
        """The remaining per-op choices: window inputs, fma additions into slices, which
        values may be views, integer atomic totals, and the strategies' decisions."""
        an = self.an
        for op in _walk(ops):
            if op in an.windowed:
                for region in op.regions:
                    for block in region.blocks:
                        an.window_inputs[block] = self._window_inputs(block)
            if _kernel_fn(op) == "fma" and op.operands[0] in an.affine and \
                    op.operands[0] not in an.local:
                _, a, b, c = op.operands  # fma(dst, a, b, c)
                if _is_const(b, 1.0):
                    an.fma_adds[op] = (a, c)
                elif _is_const(a, 1.0):
                    an.fma_adds[op] = (b, c)
            if _kernel_fn(op) == "load" or isinstance(op, scf.IfOp):
                for r in op.results:
                    if _view_safe(r):
                        an.views.add(r)
        an.decisions = strategies.decide(
            [self.kernel, *_walk(ops)],
            strategies.Facts(self.mode, self.one_d, self.instrumented, an.planned))


def plan_kernel(kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool,
                name: Callable[[SSAValue], str], fresh: Callable[[str], str]) -> KernelPlan:
    """The plan of `kernel` for one generated variant: empty when the fast paths are off
    (`PYPTO_FAST_PATHS=0`, read here once per variant; the executor keys variants by it)."""
    return KernelPlanner(kernel, mode, one_d, instrumented, FAST_PATHS.on, name, fresh).build()


_PROMOTABLE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp)


def _promotable(op: Operation) -> bool:
    """An integer op whose value the planner may recognise as `lane ramp + uniform`."""
    return isinstance(op, _PROMOTABLE) or launch_id(op) in ("global_id", "local_id")


def _kernel_fn(op: Operation) -> str | None:
    """Which `pto.<name>` of the kernel language `op` is ("load", "store", ...), or None: the
    planner's lane accesses are the kernel language's, not the npu dialect's."""
    fn = kernel_function(op)
    return fn.name if fn is not None else None


def _lane_store(op: Operation) -> bool:
    """`pto.store(ptr, value)` of one value per lane (operands: value, address), not the
    bulk tile store that shares its name."""
    return _kernel_fn(op) == "store" and not has_tile_footprint(op)


def _int_width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else 64


def _is_const(v: SSAValue, value: float) -> bool:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data == value
    return False


def _ptr_index(op: Operation) -> int:
    """Operand index of the address of a lane load (0), store (1) or fma (its dst, 0): the
    operand its one declared memory access goes through."""
    return declared_accesses(op)[0].operand


def _writes_memory(op: Operation) -> bool:
    return any(writes_memory(o) for o in _walk([op]))


def _view_safe(value: SSAValue) -> bool:
    """Can `value` (a load's result, or a branch's) alias memory (a slice view) instead of
    being a copy?

    Yes when every use of it in its block happens before any later instruction that may write
    memory, or in that very instruction as a plain operand (its value is read before it writes).
    """
    load = value.owner
    assert isinstance(load, Operation)
    block = load.parent_block()
    if block is None:
        return False
    pending = {use.operation for use in value.uses}
    for user in pending:
        # Yielded out of a loop body or a stage, the value lives on past its block (into the
        # next iteration, or as the region's result) where memory may have changed. Yielded
        # out of an scf.if it becomes the branch's result, which `merge` copies.
        if user.has_trait(IsTerminator) and not isinstance(user.parent_op(), scf.IfOp):
            return False
    op = load.next_op
    while op is not None and pending:
        contained = {o for o in _walk([op]) if o in pending}
        writes = _writes_memory(op)
        if writes and (op.regions or contained != pending or not contained):
            return False
        pending -= contained
        op = op.next_op
    return not pending


_WINDOW_FOREIGN = (scf.IfOp, scf.YieldOp, scf.ForOp, arith.SelectOp, arith.ConstantOp,
                   math.RsqrtOp, math.IPowIOp)


def _follows_window(op: Operation) -> bool:
    """May a windowed branch hold `op`? Ops that read ids, memory and values through the lane
    vector follow a window of it: arithmetic, structure, lane loads and stores (one access of
    one kind through its only address operand: not an atomic, not a staged npu access),
    pointer arithmetic, ids other than the global id, the warp barrier; not block
    collectives, atomics or output. Asked of the op's traits, so a new elementwise op
    qualifies by its declaration."""
    if isinstance(op, _WINDOW_FOREIGN) or type(op) in _ARITH_BINARY or \
            type(op) in _MATH_UNARY or op.name in INT_BINARY or op.name.startswith("arith.") \
            or elementwise_reference(op) is not None:
        return True
    ident = launch_id(op)
    if ident is not None:
        return ident != "global_id"
    if offset_base(op) is not None or sync_scope(op) == "warp":
        return True
    addresses = sum(_is_address(o.type) for o in op.operands)
    return not is_block_collective(op) and len(declared_accesses(op)) == 1 and addresses == 1


_walk = walk  # pre-order walk of ops and everything nested in them
