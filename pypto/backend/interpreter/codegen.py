"""Compile a kernel's IR once into Python source that runs on lane vectors.

Dispatching op by op through an interpreter loop costs microseconds per op per lane vector; instead
each kernel is translated to one Python function whose statements are NumPy operations on whole
lane vectors. Control flow on per-lane conditions becomes masks (`None` = all lanes active), so
there is never a Python loop over lanes.

Two static analyses make the common case fast:
- uniformity: values that are the same for every lane of the vector stay NumPy scalars;
- lane-affine offsets: a value known to equal `ramp + base` (lane k holds `base + k`, e.g. a global
  id in a 1-D launch) is kept as its scalar `base`, so a load or store through it becomes a
  contiguous slice when every lane is active.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from pypto import dtypes, exact
from pypto.analysis.uniformity import varying_values, walk
from pypto.backend.interpreter.codegen_loops import NAMESPACE as _LOOP_NAMESPACE
from pypto.backend.interpreter.codegen_loops import SimtLoopEmitters, _is_address
from pypto.backend.interpreter.codegen_npu import NpuEmitters
from pypto.backend.interpreter.instruments import OpTable
from pypto.diagnostics import op_location as location_of
from pypto.backend.interpreter import lanes, windows
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.plan import AccessPlan, Planner, dead_ops, poly_expr, vector_lanes
from pypto.backend.interpreter.lanes import Site
from pypto.dialects import npu, pto
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import (
    declared_accesses,
    elementwise_reference,
    is_block_collective,
    launch_id,
    offset_base,
    sync_scope,
    writes_memory,
)

GRID = "grid"
"""Mode: one lane vector holds every lane of the launch (no L1, no barriers)."""
BLOCK = "block"
"""Mode: one lane vector per block, all warps in lockstep."""
WARP = "warp"
"""Mode: one lane vector per warp; the kernel is a generator that yields at block-level sync
points (barrier_block, tile instructions) so a scheduler can interleave warps."""

BATCH = "batch"
"""Mode: one lane vector holds several whole blocks that run in lockstep, each with its own
copy of every L1 buffer (kernels whose block-level instructions are barriers, fills and
allocations in control flow uniform across the whole vector)."""

SYNC_BARRIER = 0
SYNC_TILE = 1


class UnsupportedOp(Exception):
    """The interpreter has no lowering for an op (reported as a VerificationError upstream)."""


@dataclass
class GeneratedKernel:
    name: str
    mode: str
    source: str
    sites: list[Site]
    constants: dict[str, Any]
    op_table: OpTable
    instrumented: bool = False
    fn: Any = None
    fast: bool = True  # planned (fast paths on); False: the general path only (the oracle)
    # grid mode: the lane vector length the planner chose (plan.vector_lanes), None: default
    vector_lanes: int | None = None


_ARITH_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "({a} + {b})",
    arith.SubiOp: "({a} - {b})",
    arith.MuliOp: "({a} * {b})",
    arith.AddfOp: "({a} + {b})",
    arith.SubfOp: "({a} - {b})",
    arith.MulfOp: "({a} * {b})",
    arith.DivfOp: "({a} / {b})",
    arith.AndIOp: "({a} & {b})",
    arith.OrIOp: "({a} | {b})",
    arith.XOrIOp: "({a} ^ {b})",
    arith.MinimumfOp: "_fmin({a}, {b})",
    arith.MaximumfOp: "_fmax({a}, {b})",
    arith.MinSIOp: "_np.minimum({a}, {b})",
    arith.MaxSIOp: "_np.maximum({a}, {b})",
    arith.ShRSIOp: "_np.right_shift({a}, {b})",
    arith.ShLIOp: "_np.left_shift({a}, {b})",
    math.PowFOp: "_m_power({a}, {b})",
    pto.FmodOp: "_np.fmod({a}, {b})",
    math.CopySignOp: "_np.copysign({a}, {b})",
    math.Atan2Op: "_m_arctan2({a}, {b})",
    arith.MinnumfOp: "_np.fmin({a}, {b})",  # the non-NaN operand (IEEE minNum)
    arith.MaxnumfOp: "_np.fmax({a}, {b})",
}

_CMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "ult": "<",
        "ule": "<=", "ugt": ">", "uge": ">=", "oeq": "==", "ogt": ">", "oge": ">=", "olt": "<",
        "ole": "<=", "une": "!="}

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
"""`u op x` as `x flipped-op u`."""

_CMP_SIGNED = {"eq", "ne", "slt", "sle", "sgt", "sge"}

_MATH_UNARY: dict[type[Operation], str] = {  # _m_*: through float64, rounded once (exact.py)
    math.ExpOp: "_m_exp", math.LogOp: "_m_log", math.SqrtOp: "_np.sqrt",
    math.TanhOp: "_m_tanh", math.FloorOp: "_np.floor", math.AbsFOp: "_np.abs",
    math.AbsIOp: "_np.abs", math.CeilOp: "_np.ceil", math.SinOp: "_m_sin",
    math.CosOp: "_m_cos", math.Exp2Op: "_m_exp2", math.Log2Op: "_m_log2",
    math.TanOp: "_m_tan", math.SinhOp: "_m_sinh", math.CoshOp: "_m_cosh",
    math.AsinOp: "_m_arcsin", math.AcosOp: "_m_arccos", math.AtanOp: "_m_arctan",
    math.AsinhOp: "_m_arcsinh", math.AcoshOp: "_m_arccosh", math.AtanhOp: "_m_arctanh",
    math.ExpM1Op: "_m_expm1", math.Log10Op: "_m_log10", math.Log1pOp: "_m_log1p",
    math.CbrtOp: "_m_cbrt", math.TruncOp: "_np.trunc", math.RoundEvenOp: "_np.rint",
}

_ID_OPS: dict[type[Operation], str] = {
    pto.GetGlobalIdOp: "global_id", pto.GetLocalIdOp: "local_id",
    pto.GetBlockIdOp: "block_id", pto.GetBlockDimOp: "block_dim",
    pto.GetGridDimOp: "grid_dim",
}


class _Uniform:
    """`v in uniform`: v holds one value for the whole lane vector (a scalar at run time)."""

    def __init__(self, varying: set[SSAValue]):
        self.varying = varying

    def __contains__(self, v: object) -> bool:
        return v not in self.varying


@dataclass
class _Analysis:
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
    # comparisons `form OP uniform` evaluated on the vector's box (views.form_cmp):
    # op -> (the form's source, its width, the uniform operand, the predicate as x OP u)
    form_cmps: dict[Operation, tuple[str, int, SSAValue, str]] = field(default_factory=dict)
    # bulk copies whose L1 / HBM address varies only with the block (batch mode): (op, operand
    # index) -> its plan; the copy gets each block's offset from the forms (views.block_offset)
    block_addrs: dict[tuple[Operation, int], AccessPlan] = field(default_factory=dict)


class KernelCodegen(NpuEmitters, SimtLoopEmitters):
    """Translate one `func.func` kernel into the source of `def run(_ctx, _args)`."""

    def __init__(self, kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool = False):
        self.kernel = kernel
        self.mode = mode
        self.instrumented = instrumented  # hooks around every op (see instruments.py)
        self.table = OpTable.of(kernel)
        self.current_id = -1
        self.one_d = one_d  # the launch is 1-D in grid and block: ids along x are ramps
        # the planner plans (PYPTO_FAST_PATHS, read once per generated variant); an empty plan
        # is the general path: no slices, rows, windows, views or fused stores are emitted
        self.fast = FAST_PATHS.on
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.sites: list[Site] = []
        self.constants: dict[str, Any] = {}
        self.counter = 0
        self.an = _Analysis()
        # pure expressions already computed, per enclosing region (innermost last): the frontend
        # re-derives `buf + tid` at every use, and each copy costs a pass over the lanes
        self.cse: list[dict[tuple[Any, ...], str]] = [{}]

    # ----------------------------------------------------------------------------------------

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def name(self, v: SSAValue) -> str:
        n = self.names.get(v)
        if n is None:
            n = self.fresh("v")
            self.names[v] = n
        return n

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def site(self, op: Operation) -> int:
        self.sites.append(Site(op.name.removeprefix("pto."), location_of(op)))
        return len(self.sites) - 1

    def const(self, value: Any) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    # analysis ---------------------------------------------------------------------------------

    def analyse(self, ops: Iterable[Operation]) -> None:
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
            if promote and isinstance(op, _PROMOTABLE) and op.results[0] not in an.affine \
                    and op.results[0] not in an.uniform and not in_window:
                ramp = self.planner.ramp_base(op.results[0], self.mode)
                if ramp is not None:
                    an.promoted[op] = ramp
                    an.affine[op.results[0]] = self.fresh("rb")
                    if ramp[2]:
                        an.local.add(op.results[0])
                    continue
            if isinstance(op, pto.GetGlobalIdOp | pto.GetLocalIdOp) and self.one_d:
                if op.dim_index == 0 and (isinstance(op, pto.GetGlobalIdOp) or
                                          self.mode in (BLOCK, WARP)):
                    an.affine[op.results[0]] = self.fresh("rb")
                elif op.dim_index == 0 and self.mode == BATCH:
                    an.affine[op.results[0]] = self.fresh("rb")
                    an.local.add(op.results[0])
            elif isinstance(op, arith.AddiOp | arith.SubiOp | pto.AddPtrOp):
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
                if isinstance(op, pto.StoreOp) and op.ptr in an.affine and \
                        op.ptr not in an.local and not self.in_window(op):
                    owner = op.value.owner
                    # only `a op b` right before the store, used by it alone, on plain values
                    if type(owner) in _STORE_UFUNCS and owner.next_op is op and \
                            op.value.has_one_use() and \
                            not any(x in an.affine for x in owner.operands):
                        an.fused.add(owner)
                elif isinstance(op, pto.StoreOp) and op.ptr in an.local:
                    loads = self._row_operands(op)
                    if loads is not None:
                        an.row_ops[op] = loads
                        an.fused.update((op.value.owner, *loads))
        self._plan(ops)
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
            if not isinstance(op, pto.LoadOp | pto.StoreOp | pto.FmaOp) or op in an.row_ops:
                continue
            if isinstance(op, pto.StoreOp) and op.value.owner in an.fused:
                continue
            ptr = op.operands[_ptr_index(op)]
            if ptr in an.affine:
                continue  # a lane-affine slice (load_ramp, load_rows)
            plan = planner.plan(ptr)
            if plan is not None:
                an.planned[op] = plan
        if self.mode == BATCH:
            for op in walked:
                if not isinstance(op, pto.BulkCopyOp):
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

    def _row_operands(self, store: pto.StoreOp) -> tuple[Operation, Operation] | None:
        """For `store(p, load(q) op load(r))` with p, q, r block-local addresses (the tree
        reduction's `buf[tid] = buf[tid] + buf[tid + s]`), where each intermediate value has no
        other use and nothing between the first load and the store touches memory: the two
        loads, which then run at the store as one ufunc over rows (StructuredAccess.rows_op)."""
        owner = store.value.owner
        if type(owner) not in _STORE_UFUNCS or owner.next_op is not store or \
                not store.value.has_one_use():
            return None
        loads = []
        for v in owner.operands:
            load = v.owner
            if not (isinstance(load, pto.LoadOp) and load.ptr in self.an.local and
                    v.has_one_use() and load.parent_block() is store.parent_block()):
                return None
            loads.append(load)
        first = min(loads, key=lambda o: o.parent_block().get_operation_index(o))
        op = first.next_op
        while op is not owner:
            if op is None or op.regions or op.name in DIVISIONS or \
                    not (op in loads or type(op) in _ARITH_BINARY or isinstance(op, pto.AddPtrOp)
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
            if v in an.local or isinstance(v.owner, pto.GetWarpIdOp):
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
        if isinstance(op, arith.AddiOp | arith.SubiOp | pto.AddPtrOp):
            return op.results[0] in an.affine
        if isinstance(op, pto.LoadOp) and index == 0:
            return True
        if isinstance(op, pto.StoreOp) and index == 1:
            return True
        if isinstance(op, pto.FmaOp) and index == 0:
            return True
        if isinstance(op, arith.CmpiOp) and op.results[0] not in an.uniform:
            other = op.operands[1 - index]
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            return other in an.uniform and pred in _CMP_SIGNED
        return False

    # emission ---------------------------------------------------------------------------------

    def generate(self) -> GeneratedKernel:
        block = self.kernel.body.block
        self.analyse(block.ops)
        header = ["def run(_ctx, _args):"]
        self.emit("_m = None")
        if self.instrumented:
            self.emit("_ins = _ctx.ins")
        for index, arg in enumerate(block.args):
            n = self.name(arg)
            if _is_address(arg.type):
                self.emit(f"{n}_b = _args[{index}]")
                self.emit(f"{n} = _I64_0")
            else:
                self.emit(f"{n} = _args[{index}]")
        self.block_ops(block)
        if not isinstance(block.last_op, func.ReturnOp):
            self.emit("return None")
        source = "\n".join(header + self.lines) + "\n"
        self.table.names = dict(self.names)
        self.table.affine = dict(self.an.affine)
        self.table.local = set(self.an.local)
        lanes = None
        if self.fast and self.mode == GRID:
            lanes = vector_lanes(block.ops, self._varying_pass)
        return GeneratedKernel(self.kernel.sym_name.data, self.mode, source, self.sites,
                               self.constants, self.table, self.instrumented, fast=self.fast,
                               vector_lanes=lanes)

    def _varying_pass(self, op: Operation) -> bool:
        """Does the generated code make a pass over the lane vector for `op`? (a per-lane
        value computed, or stored; not the address arithmetic the plan leaves out or the
        ramps it computes without arrays)"""
        an = self.an
        if op in an.dead or isinstance(op, pto.AddPtrOp | scf.YieldOp | func.ReturnOp):
            return False
        if op.results:
            return any(r not in an.uniform and r not in an.affine for r in op.results)
        return any(x not in an.uniform for x in op.operands)

    def block_ops(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if not self.instrumented:
            self.dispatch(op)
            return
        op_id = self.table.id_of(op)
        info = self.table[op_id]
        # In warp mode a tile instruction runs once per block inside the scheduler: `tile()`
        # hooks it there instead.
        hooked = info.hooked and not (self.mode == WARP and info.collective)
        if hooked:
            self.emit(f"_ins.before({op_id}, _ctx, _m)")
        saved, self.current_id = self.current_id, op_id
        self.dispatch(op)
        self.current_id = saved
        if hooked and not isinstance(op, func.ReturnOp):
            self.emit(f"_ins.after({op_id}, _ctx, _m, {self.hook_value(op)})")

    def hook_value(self, op: Operation) -> str:
        """What the `after` hook reports: the first result (pto.wait: its token)."""
        if isinstance(op, pto.WaitOp | npu.WaitFlagOp):
            return self.name(op.token)
        if not op.results:
            return "None"
        r = op.results[0]
        if r in self.an.affine and r not in self.an.needs_array:
            return f"({self.ramp_of(r)} + {self.an.affine[r]})"
        return self.name(r)

    def reuse(self, op: Operation, extra: Any = None) -> bool:
        """Common subexpressions of pure ops within a region and the regions it encloses: if
        the same op on the same operands was already emitted where it is visible, alias it."""
        if self.instrumented:
            return False
        key = (op.name, extra, tuple(self.name(x) for x in op.operands))
        res = op.results[0]
        for scope in reversed(self.cse):
            old = scope.get(key)
            if old is not None:
                self.emit(f"{self.name(res)} = {old}")
                if _is_address(res.type):
                    self.emit(f"{self.name(res)}_b = {old}_b")
                return True
        self.cse[-1][key] = self.name(res)
        return False

    def dispatch(self, op: Operation) -> None:
        if op in self.an.fused or op in self.an.dead:
            return  # computed by the store that follows (store_ramp_op) / by a planned access
        if op in self.an.promoted:
            rest, offset, _ = self.an.promoted[op]
            width = _int_width(op.results[0].type)
            self.define_affine(op.results[0], f"_wrap{width}({poly_expr(rest)} + {offset})")
            return
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is not None:
            handler(op)
            return
        if type(op) in _ARITH_BINARY:
            if self.reuse(op):
                return
            a, b = (self.name(x) for x in op.operands)
            self.emit(f"{self.name(op.results[0])} = {_ARITH_BINARY[type(op)].format(a=a, b=b)}")
            return
        if op.name in INT_BINARY:
            self.int_binary(op, INT_BINARY[op.name])
            return
        if type(op) in _MATH_UNARY:
            a = self.name(op.operands[0])
            self.emit(f"{self.name(op.results[0])} = {_MATH_UNARY[type(op)]}({a})")
            return
        reference = elementwise_reference(op)
        if reference is not None:  # table-driven: the op's exact reference, lane by lane
            args = ", ".join(self.name(x) for x in op.operands)
            self.emit(f"{self.name(op.results[0])} = _m_{reference}({args})")
            return
        if type(op) in _ID_OPS:
            self.op_id(op)
            return
        raise UnsupportedOp(f"the interpreter cannot execute '{op.name}' "
                            f"(at {location_of(op)})")

    def ramp_of(self, v: SSAValue) -> str:
        """The lane pattern an affine value adds its base to: the vector's ramp, or in batch
        mode for block-local values each block's local ids."""
        return "_ctx.local_id(0)" if v in self.an.local else "_ctx.ramp"

    def define_affine(self, v: SSAValue, base_expr: str) -> None:
        rb = self.an.affine[v]
        self.emit(f"{rb} = {base_expr}")
        if v in self.an.needs_array:
            self.emit(f"{self.name(v)} = {self.ramp_of(v)} + {rb}")

    def op_id(self, op: Operation) -> None:
        assert isinstance(op, pto._DimIdOp)
        res = op.results[0]
        kind = _ID_OPS[type(op)]
        if res in self.an.affine:
            if res in self.an.local:  # the local ids themselves: the pattern, base 0
                self.define_affine(res, "_np.int32(0)")
                return
            base = "_ctx.first_lane" if isinstance(op, pto.GetGlobalIdOp) else "_ctx.local_base"
            self.define_affine(res, f"_np.int32({base})")
            return
        self.emit(f"{self.name(res)} = _ctx.{kind}({op.dim_index})")

    def op_pto_get_warp_id(self, op: pto.GetWarpIdOp) -> None:
        self.emit(f"{self.name(op.results[0])} = _ctx.warp_id()")

    def op_pto_get_lane_id(self, op: pto.GetLaneIdOp) -> None:
        self.emit(f"{self.name(op.results[0])} = _ctx.lane_id()")

    def op_arith_constant(self, op: arith.ConstantOp) -> None:
        attr = op.value
        t = op.results[0].type
        npd = dtypes.np_dtype_of(t)
        if isinstance(attr, IntegerAttr):
            raw = attr.value.data
            value = npd.type(bool(raw)) if npd == np.bool_ else npd.type(raw)
        elif isinstance(attr, FloatAttr):
            value = npd.type(attr.value.data)
        else:
            raise UnsupportedOp(f"unsupported constant {attr} at {location_of(op)}")
        self.emit(f"{self.name(op.results[0])} = {self.const(value)}")

    def op_arith_cmpi(self, op: arith.CmpiOp) -> None:
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        self._cmp(op, pred)

    def op_arith_cmpf(self, op: arith.CmpfOp) -> None:
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        self._cmp(op, pred)

    def _cmp(self, op: Operation, pred: str) -> None:
        if pred not in _CMP:
            raise UnsupportedOp(f"comparison predicate '{pred}' at {location_of(op)}")
        lhs, rhs = op.operands
        an = self.an
        if op in an.form_cmps:
            src, width, u, sym = an.form_cmps[op]
            self.emit(f"{self.name(op.results[0])} = _ctx.form_cmp({sym!r}, ({src}, {width}), "
                      f"{self.name(u)})")
            return
        if pred in _CMP_SIGNED and (lhs in an.affine and rhs in an.uniform or
                                    rhs in an.affine and lhs in an.uniform):
            # (ramp + base) < u  <=>  ramp < u - base: no array for the affine side is needed
            # (the bound clamped to int32: the ramp is int32, so no int64 copy of it is made);
            # block-local ids compare the same in every block: a cached mask (local_cmp); on
            # the ramp, a test that passes on every lane or on none skips the lanes (_ramp_cmp)
            x, u, sym = (lhs, rhs, _CMP[pred]) if lhs in an.affine else \
                (rhs, lhs, _FLIP[_CMP[pred]])
            if x in an.local:
                expr = (f"_ctx.local_cmp({sym!r}, "
                        f"_bound32(_np.int64({self.name(u)}) - {an.affine[x]}))")
            else:
                expr = f"_ramp_cmp(_ctx.ramp, {sym!r}, {self.name(u)}, {an.affine[x]})"
            self.emit(f"{self.name(op.results[0])} = {expr}")
            return
        if self.reuse(op, pred):
            return
        a, b = (self.name(x) for x in op.operands)
        expr = f"({a} {_CMP[pred]} {b})"
        if op.results[0] in self.an.uniform:
            expr = f"_np.bool_{expr}"
        self.emit(f"{self.name(op.results[0])} = {expr}")

    def op_arith_select(self, op: arith.SelectOp) -> None:
        c, a, b = (self.name(x) for x in op.operands)
        if _is_address(op.results[0].type):  # a pointer carries its buffer in `_b` too
            self.emit(f"{self.name(op.results[0])}_b = _ctx.same_buffer({a}_b, {b}_b, {c}, _m, "
                      f"{self.site(op)})")
        self.emit(f"{self.name(op.results[0])} = _select({c}, {a}, {b})")

    def _cast(self, op: Operation) -> None:
        t = op.results[0].type
        dt = self.const(dtypes.np_dtype_of(t))
        a = self.name(op.operands[0])
        self.emit(f"{self.name(op.results[0])} = _cast({a}, {dt})")

    op_arith_extsi = _cast
    op_arith_extf = _cast
    op_arith_truncf = _cast
    op_arith_trunci = _cast
    op_arith_sitofp = _cast
    op_arith_extui = _cast
    op_arith_uitofp = _cast

    def op_arith_negf(self, op: arith.NegfOp) -> None:
        self.emit(f"{self.name(op.results[0])} = -{self.name(op.operands[0])}")

    def int_binary(self, op: Operation, fn: Any) -> None:
        """An integer op of `pypto.dialects.arith_semantics` (divisions check for zero)."""
        a, b = (self.name(x) for x in op.operands)
        divisor = op.operands[1].owner
        if op.name in DIVISIONS and not (isinstance(divisor, arith.ConstantOp) and
                                         isinstance(divisor.value, IntegerAttr) and
                                         divisor.value.value.data != 0):
            self.emit(f"{self.name(op.results[0])} = _ctx.int_div({self.const(fn)}, {a}, {b}, "
                      f"_m, {self.site(op)})")
        else:
            self.emit(f"{self.name(op.results[0])} = {self.const(fn)}({a}, {b})")

    def op_math_ipowi(self, op: math.IPowIOp) -> None:
        a, b = (self.name(x) for x in op.operands)
        s = self.site(op)
        self.emit(f"{self.name(op.results[0])} = _ctx.int_pow({a}, {b}, _m, {s})")

    def op_pto_addptr(self, op: pto.AddPtrOp) -> None:
        p, off = op.ptr, op.offset
        res = op.results[0]
        pn, on, rn = self.name(p), self.name(off), self.name(res)
        if res not in self.an.affine and self.reuse(op):
            return
        self.emit(f"{rn}_b = {pn}_b")
        if res in self.an.affine:
            # ramp + base: one side is affine, the other uniform
            if p in self.an.affine:
                self.define_affine(res, f"{self.an.affine[p]} + {on}")
            else:
                self.define_affine(res, f"{pn} + {self.an.affine[off]}")
            return
        self.emit(f"{rn} = _addptr({pn}, {on})")

    def op_arith_addi(self, op: arith.AddiOp) -> None:
        self._affine_arith(op, "+")

    def op_arith_subi(self, op: arith.SubiOp) -> None:
        self._affine_arith(op, "-")

    def _affine_arith(self, op: Operation, sym: str) -> None:
        res = op.results[0]
        a, b = op.operands
        if res in self.an.affine:
            if a in self.an.affine:
                self.define_affine(res, f"{self.an.affine[a]} {sym} {self.name(b)}")
            else:
                self.define_affine(res, f"{self.name(a)} {sym} {self.an.affine[b]}")
            return
        if self.reuse(op):
            return
        self.emit(f"{self.name(res)} = ({self.name(a)} {sym} {self.name(b)})")

    def op_pto_load(self, op: pto.LoadOp) -> None:
        s = self.site(op)
        p = op.ptr
        res = self.name(op.results[0])
        if op in self.an.planned:
            plan = self.an.planned[op]
            view = "True" if _view_safe(op.results[0]) else "False"
            self.emit(f"{res} = _ctx.load_plan({self.name(plan.root)}_b, {plan.source()}, _m, "
                      f"{s}, {view})")
        elif p in self.an.local:
            self.emit(f"{res} = _ctx.load_rows({self.name(p)}_b, {self.an.affine[p]}, _m, {s})")
        elif p in self.an.affine:
            view = "True" if _view_safe(op.results[0]) else "False"
            self.emit(f"{res} = _ctx.load_ramp({self.name(p)}_b, {self.an.affine[p]}, _m, {s}, "
                      f"{view})")
        else:
            self.emit(f"{res} = _ctx.load({self.name(p)}_b, {self.name(p)}, _m, {s})")

    def _store(self, ptr: SSAValue, value_expr: str, s: int,
               value: SSAValue | None = None) -> None:
        if value is not None and value.owner in self.an.fused:
            ufunc = _STORE_UFUNCS[type(value.owner)]
            a, b = value.owner.operands
            self.emit(f"_ctx.store_ramp_op({self.name(ptr)}_b, {self.an.affine[ptr]}, {ufunc}, "
                      f"{self.name(a)}, {self.name(b)}, _m, {s})")
            return
        if ptr in self.an.local:
            self.emit(f"_ctx.store_rows({self.name(ptr)}_b, {self.an.affine[ptr]}, {value_expr}, "
                      f"_m, {s})")
        elif ptr in self.an.affine:
            self.emit(f"_ctx.store_ramp({self.name(ptr)}_b, {self.an.affine[ptr]}, {value_expr}, "
                      f"_m, {s})")
        else:
            self.emit(f"_ctx.store({self.name(ptr)}_b, {self.name(ptr)}, {value_expr}, _m, {s})")

    def row_op(self, store: pto.StoreOp) -> None:
        """`store(p, load(q) op load(r))` on rows (see _row_operands)."""
        a, b = self.an.row_ops[store]
        ufunc = _STORE_UFUNCS[type(store.value.owner)]
        sa, sb = self.site(a), self.site(b)
        af = self.an.affine
        block = store.parent_block()
        assert block is not None
        a_first = block.get_operation_index(a) < block.get_operation_index(b)
        self.emit(f"_ctx.rows_op({self.name(store.ptr)}_b, {af[store.ptr]}, {ufunc}, "
                  f"{self.name(a.ptr)}_b, {af[a.ptr]}, {self.name(b.ptr)}_b, {af[b.ptr]}, _m, "
                  f"{sa}, {sb}, {self.site(store)}, {a_first})")

    def op_pto_store(self, op: pto.StoreOp) -> None:
        if op in self.an.row_ops:
            self.row_op(op)
            return
        if op in self.an.planned:
            plan = self.an.planned[op]
            self.emit(f"_ctx.store_plan({self.name(plan.root)}_b, {plan.source()}, "
                      f"{self.name(op.value)}, _m, {self.site(op)})")
            return
        self._store(op.ptr, self.name(op.value), self.site(op), op.value)

    def op_pto_fma(self, op: pto.FmaOp) -> None:
        s = self.site(op)
        a, b, c = op.a, op.b, op.c
        t = a.type
        dst_affine = op.dst in self.an.affine and op.dst not in self.an.local
        # a * 1.0 is exact, so fma(a, 1.0, c) is a single correctly rounded add in the type itself
        # (for binary formats, rounding a+c through float64 first gives the same result).
        if _is_const(b, 1.0) and dst_affine:
            self.emit(f"_ctx.store_ramp_op({self.name(op.dst)}_b, {self.an.affine[op.dst]}, "
                      f"_np.add, {self.name(a)}, {self.name(c)}, _m, {s})")
            return
        if _is_const(a, 1.0) and dst_affine:
            self.emit(f"_ctx.store_ramp_op({self.name(op.dst)}_b, {self.an.affine[op.dst]}, "
                      f"_np.add, {self.name(b)}, {self.name(c)}, _m, {s})")
            return
        if _is_const(b, 1.0):
            value = f"({self.name(a)} + {self.name(c)})"
        elif _is_const(a, 1.0):
            value = f"({self.name(b)} + {self.name(c)})"
        elif isinstance(t, AnyFloat):
            dt = self.const(dtypes.np_dtype_of(t))
            value = f"_fma({self.name(a)}, {self.name(b)}, {self.name(c)}, {dt})"
        else:
            value = f"({self.name(a)} * {self.name(b)} + {self.name(c)})"
        if op in self.an.planned:
            plan = self.an.planned[op]
            self.emit(f"_ctx.store_plan({self.name(plan.root)}_b, {plan.source()}, {value}, _m, "
                      f"{s})")
            return
        self._store(op.dst, value, s)

    def op_pto_barrier(self, op: pto.BarrierOp) -> None:
        self.emit(f"_ctx.barrier_warp(_m, {self.site(op)})")

    def op_pto_barrier_block(self, op: pto.BarrierBlockOp) -> None:
        s = self.site(op)
        self.emit(f"_ctx.barrier_block(_m, {s})")
        if self.mode == WARP:
            self.emit(f"yield ({SYNC_BARRIER}, {s}, None)")

    def op_func_return(self, op: func.ReturnOp) -> None:
        self.emit("return None")

    def op_scf_yield(self, op: scf.YieldOp) -> None:
        raise UnsupportedOp("scf.yield outside of scf.if")  # handled by op_scf_if

    def op_scf_if(self, op: scf.IfOp) -> None:
        cond = self.name(op.cond)
        saved = self.fresh("ms")
        mt, mf = self.fresh("mt"), self.fresh("mf")
        results = list(op.results)
        then_names = [self.fresh("yt") for _ in results]
        else_names = [self.fresh("yf") for _ in results]
        self.emit(f"{saved} = _m")
        self.emit(f"{mt} = _mask_and(_m, {cond})")
        if results or (op.false_region.blocks and len(op.false_region.block.ops) > 1):
            self.emit(f"{mf} = _mask_andnot(_m, {cond})")
        for r, tn, fn in zip(results, then_names, else_names):
            zero = self._zero_of(r.type)
            self.emit(f"{tn} = {fn} = {zero}")
            if _is_address(r.type):
                self.emit(f"{tn}_b = {fn}_b = None")
        for region_block, mask, names in ((op.true_region.block, mt, then_names),
                                          (op.false_region.blocks[0] if op.false_region.blocks
                                           else None, mf, else_names)):
            if region_block is None:
                continue
            body = list(region_block.ops)
            if len(body) == 1 and not names:
                continue  # an empty branch: nothing to run
            if op in self.an.windowed:
                self.windowed_branch(region_block, mask, names)
                continue
            self.emit(f"if {mask} is not False:")
            self.indent += 1
            self.emit(f"_m = {mask}")
            self.cse.append({})
            for inner in body[:-1]:
                self.op(inner)
            term = body[-1] if body else None
            if isinstance(term, scf.YieldOp):
                for value, n in zip(term.operands, names):
                    self.transfer(n, value)
            elif term is not None:
                self.op(term)
            self.cse.pop()
            self.emit("pass")
            self.indent -= 1
        self.emit(f"_m = {saved}")
        for r, tn, fn in zip(results, then_names, else_names):
            rn = self.name(r)
            if _is_address(r.type):
                self.emit(f"{rn}_b = _ctx.same_buffer({tn}_b, {fn}_b, {cond}, {saved}, "
                          f"{self.site(op)})")
                self.emit(f"{rn} = _select({cond}, {tn}, {fn})")
            elif isinstance(r.type, pto.TokenType):
                self.emit(f"{rn} = {tn} if {tn} is not None else {fn}")
            else:
                dt = self.const(dtypes.np_dtype_of(r.type))
                if self.fast:  # a side every lane took: its value, not a where()
                    self.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt}, {mt}, {mf}, "
                              f"{_view_safe(r)})")
                else:
                    self.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt})")

    def windowed_branch(self, block: Block, mask: str, names: list[str]) -> None:
        """A branch of a windowed `scf.if`: its body becomes a local function of the lane
        vector, the mask and the per-lane values it uses, called on the window of lanes the
        mask keeps (`_window`: narrowed values in, widened yields out) or, when the window is
        not narrow enough, on the whole vector."""
        fn, win, res = self.fresh("_wb"), self.fresh("w"), self.fresh("r")
        inputs = [self.name(v) for v in self._window_inputs(block)]
        ops = list(block.ops)
        self.emit(f"if {mask} is not False:")
        self.indent += 1
        self.emit(f"def {fn}(_ctx, _m{''.join(', ' + n for n in inputs)}):")
        self.indent += 1
        saved_cse, self.cse = self.cse, [{}]  # outer values are not visible narrowed
        saved_affine = self.an.affine  # outside the window, only block-local ids stay affine
        self.an.affine = {v: rb for v, rb in saved_affine.items() if v in self.an.local}
        for inner in ops[:-1]:
            self.op(inner)
        self.an.affine, self.cse = saved_affine, saved_cse
        term = ops[-1]
        yields = [self.name(v) for v in term.operands] if isinstance(term, scf.YieldOp) else []
        self.emit(f"return ({''.join(y + ', ' for y in yields)})")
        self.indent -= 1
        self.emit(f"{win} = _window(_ctx, {mask})")
        self.emit(f"if {win} is None:")
        self.emit(f"    {res} = {fn}(_ctx, {mask}{''.join(', ' + n for n in inputs)})")
        self.emit("else:")
        narrowed = "".join(f", {win}[0].narrow({n})" for n in inputs)
        self.emit(f"    {res} = [{win}[0].widen(x) for x in {fn}({win}[0], {win}[1]{narrowed})]")
        for i, n in enumerate(names):
            self.emit(f"{n} = {res}[{i}]")
        self.indent -= 1

    def _zero_of(self, t: Attribute) -> str:
        if _is_address(t):
            return "_I64_0"
        if isinstance(t, pto.TokenType):
            return "None"
        return self.const(dtypes.np_dtype_of(t).type(0))

    def transfer(self, dst: str, src: SSAValue) -> None:
        """`dst = src` for a value of any type (addresses carry their buffer in `_b`)."""
        self.emit(f"{dst} = {self.name(src)}")
        if _is_address(src.type):
            self.emit(f"{dst}_b = {self.name(src)}_b")

    # loops and regions -----------------------------------------------------------------------

    def op_scf_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv, *iter_args = body.args
        for arg, init in zip(iter_args, op.iter_args):
            self.transfer(self.name(arg), init)
        lb, ub, step = (self.name(v) for v in (op.lb, op.ub, op.step))
        hoisted = self._loop_invariants(body)
        for inner in hoisted:  # computed once, before the loop
            self.op(inner)
        counter = self.fresh("k")
        itype = self.const(dtypes.np_dtype_of(iv.type).type)
        s = self.site(op)
        self.emit(f"for {counter} in _ctx.loop_range({lb}, {ub}, {step}, {s}):")
        self.indent += 1
        self.emit(f"{self.name(iv)} = {itype}({counter})")
        ops = list(body.ops)
        self.cse.append({})
        for inner in ops[:-1]:
            if inner not in hoisted:
                self.op(inner)
        self.yield_into(ops[-1], iter_args)
        self.cse.pop()
        self.emit("pass")
        self.indent -= 1
        for arg, result in zip(iter_args, op.results):
            self.transfer(self.name(result), arg)

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

    def _inline_region(self, op: Operation) -> None:
        block = op.regions[0].block
        ops = list(block.ops)
        for inner in ops[:-1]:
            self.op(inner)
        term = ops[-1]
        for value, result in zip(term.operands, op.results):
            self.transfer(self.name(result), value)

    def op_pto_pipeline(self, op: pto.PipelineOp) -> None:
        self._inline_region(op)  # stages run in program order (SPEC §2)

    def op_pto_stage(self, op: pto.StageOp) -> None:
        self._inline_region(op)

    # L1 and tile instructions -------------------------------------------------------------------

    def op_pto_alloc_local(self, op: pto.AllocLocalOp) -> None:
        n = self.name(op.result)
        s = self.site(op)
        # keyed by op id: the static L1 layout (l1.py) places each alloc_local
        self.tile(f"{n}_b", f"_ctx.alloc_local({self.table.id_of(op)}, _m, {s})", s)
        self.emit(f"{n} = _I64_0")

    def tile(self, target: str | None, call: str, s: int) -> None:
        """A block-level instruction: executed once per block.

        In warp mode every warp stops at it; the scheduler runs `call` once when all warps have
        arrived and sends its result back to each warp.
        """
        prefix = f"{target} = " if target else ""
        if self.mode != WARP or call.startswith("_ctx.alloc_local("):
            self.emit(prefix + call)  # alloc_local is a static declaration, not a sync point
            return
        self.emit(f"_ctx.tile_entry(_m, {s})")
        if self.instrumented:
            call = f"_ins.tile({self.current_id}, _ctx, _m, lambda: {call})"
        self.emit(f"{prefix}(yield ({SYNC_TILE}, {s}, lambda: {call}))")

    def _addr(self, v: SSAValue) -> str:
        return f"{self.name(v)}_b, {self.name(v)}"

    def op_pto_async_load(self, op: pto.AsyncLoadOp) -> None:
        self._copy(op, "async_load")

    def op_pto_async_store(self, op: pto.AsyncStoreOp) -> None:
        self._copy(op, "async_store")

    def op_pto_tile_store(self, op: pto.TileStoreOp) -> None:
        self._copy(op, "tile_store")

    def _copy(self, op: Operation, kind: str) -> None:
        dst, src, nbytes, rows, ss, ds = op.operands
        args = ", ".join(self.name(v) for v in (nbytes, rows, ss, ds))
        target = self.name(op.results[0]) if op.results else None
        s = self.site(op)
        addrs = []
        for index, v in ((0, dst), (1, src)):
            plan = self.an.block_addrs.get((op, index))
            if plan is None:
                addrs.append(self._addr(v))
            else:  # each block's offset from the forms (plan.py block_plan)
                addrs.append(f"{self.name(plan.root)}_b, _ctx.block_offset({plan.source()})")
        self.tile(target, f"_ctx.copy({kind!r}, {addrs[0]}, {addrs[1]}, {args}, _m, {s})", s)

    def op_pto_wait(self, op: pto.WaitOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.wait({self.name(op.token)}, _m, {s})", s)

    def op_pto_wait_all(self, op: pto.WaitAllOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.wait_all(_m, {s})", s)

    def op_pto_fill(self, op: pto.FillOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.fill({self._addr(op.dst)}, {self.name(op.value)}, "
                        f"{self.name(op.count)}, _m, {s})", s)

    def op_pto_mma(self, op: pto.MmaOp) -> None:
        m, n, k = op.shape
        s = self.site(op)
        self.tile(None, f"_ctx.mma({self._addr(op.c)}, {self._addr(op.a)}, {self._addr(op.b)}, "
                        f"{m}, {n}, {k}, _m, {s})", s)

    def op_pto_atomic_add(self, op: pto.AtomicAddOp) -> None:
        # `old` never read (nor observed by an instrument): the runtime may skip computing it
        unused = op.result.first_use is None and not self.instrumented
        self.emit(f"{self.name(op.result)} = _ctx.atomic_add({self._addr(op.ptr)}, "
                  f"{self.name(op.value)}, _m, {self.site(op)}{', False' if unused else ''})")

    def op_pto_printf(self, op: pto.PrintfOp) -> None:
        values = ", ".join(self.name(v) for v in op.values)
        self.emit(f"_ctx.printf({op.format.data!r}, ({values}{',' if op.values else ''}), _m, "
                  f"{self.site(op)})")

    def op_math_rsqrt(self, op: math.RsqrtOp) -> None:
        x = self.name(op.operands[0])
        dt = self.const(dtypes.np_dtype_of(op.results[0].type))
        self.emit(f"{self.name(op.results[0])} = _cast(1.0 / _np.sqrt(_cast({x}, _F64)), {dt})")

    def op_arith_fptosi(self, op: arith.FPToSIOp) -> None:
        dt = self.const(dtypes.np_dtype_of(op.results[0].type))
        self.emit(f"{self.name(op.results[0])} = _ctx.float_to_int({self.name(op.operands[0])}, "
                  f"{dt}, _m, {self.site(op)})")


_PROMOTABLE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp, pto.GetGlobalIdOp,
               pto.GetLocalIdOp)
"""Integer ops whose value the planner may recognise as `lane ramp + uniform`."""


def _int_width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else 64


def _wrap32(x: int) -> np.int32:
    return np.int32((x + 2**31) % 2**32 - 2**31)


def _wrap64(x: int) -> np.int64:
    return np.int64((x + 2**63) % 2**64 - 2**63)


def _ptr_index(op: Operation) -> int:
    """Operand index of the address of a load (0), store (1) or fma (its dst, 0)."""
    return 1 if isinstance(op, pto.StoreOp) else 0


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

_STORE_UFUNCS: dict[type[Operation], str] = {
    arith.AddfOp: "_np.add", arith.SubfOp: "_np.subtract", arith.MulfOp: "_np.multiply",
    arith.DivfOp: "_np.divide", arith.AddiOp: "_np.add", arith.SubiOp: "_np.subtract",
    arith.MuliOp: "_np.multiply",
}




def _is_const(v: SSAValue, value: float) -> bool:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data == value
    return False


_walk = walk  # pre-order walk of ops and everything nested in them


def generate(kernel: func.FuncOp, mode: str, one_d: bool,
             instrumented: bool = False) -> GeneratedKernel:
    """Translate `kernel` and compile the source to a Python function (`.fn`)."""
    gen = KernelCodegen(kernel, mode, one_d, instrumented).generate()
    namespace: dict[str, Any] = {
        "_np": np,
        "_I64_0": np.int64(0),
        "_select": lanes.select,
        "_merge": lanes.merge,
        "_cast": exact.cast,
        "_mask_and": lanes.mask_and,
        "_mask_andnot": lanes.mask_andnot,
        "_fma": exact.fma,
        "_fmin": exact.minimum,
        "_fmax": exact.maximum,
        "_bound32": lanes.bound32,
        "_addptr": lanes.addptr,
        "_window": windows.window,
        "_ramp_cmp": lanes.ramp_compare,
        "_F64": np.dtype(np.float64),
        "_wrap32": _wrap32,
        "_wrap64": _wrap64,
    }
    namespace.update(_LOOP_NAMESPACE)
    namespace.update({f"_m_{name}": fn for name, fn in exact.MATH.items()})
    namespace.update(gen.constants)
    label = f"{mode}, instrumented" if instrumented else mode
    code = compile(gen.source, f"<pto kernel {gen.name} ({label})>", "exec")
    exec(code, namespace)
    gen.fn = namespace["run"]
    return gen
