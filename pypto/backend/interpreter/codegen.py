"""Compile a kernel's IR once into Python source that runs on lane vectors.

Dispatching op by op through an interpreter loop costs microseconds per op per lane vector; instead
each kernel is translated to one Python function whose statements are NumPy operations on whole
lane vectors. Control flow on per-lane conditions becomes masks (`None` = all lanes active), so
there is never a Python loop over lanes.

Two static analyses make the common case fast, both the planner's (planning.py, whose plan this
module reads and never second-guesses):
- uniformity: values that are the same for every lane of the vector stay NumPy scalars;
- lane-affine offsets: a value known to equal `ramp + base` (lane k holds `base + k`, e.g. a global
  id in a 1-D launch) is kept as its scalar `base`, so a load or store through it becomes a
  contiguous slice when every lane is active.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MethodType
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from pypto import dtypes, exact
from pypto.analysis.uniformity import walk
from pypto.backend.interpreter.codegen_loops import NAMESPACE as _LOOP_NAMESPACE
from pypto.backend.interpreter.codegen_loops import SimtLoopEmitters, _is_address
from pypto.backend.interpreter.codegen_npu import NpuEmitters
from pypto.backend.interpreter.instruments import OpTable
from pypto.diagnostics import op_location as location_of
from pypto.backend.interpreter import lanes, warp_ops, windows
from pypto.backend.interpreter.optables import (
    _ARITH_BINARY,
    _CMP,
    _MATH_UNARY,
    _STORE_UFUNCS,
)
from pypto.backend.interpreter.affine import poly_expr
from pypto.backend.interpreter import strategies
from pypto.backend.interpreter.caches import RunCache
from pypto.backend.interpreter.strategies import atomics, merge_sides
from pypto.backend.interpreter.planning import (  # the modes: also imported from here
    BATCH,
    BLOCK,
    GRID,
    WARP,
    KernelPlan,
    _int_width,
    plan_kernel,
)
from pypto.backend.interpreter.lanes import Site
from pypto.dialects import npu, pto
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import elementwise_reference, tile_vector

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
    # the plan's strategy decisions by kind (strategies.by_kind), what each lane vector gets
    # as `ctx.decisions`; empty (fast paths off): the general path only (the oracle)
    decisions: dict[type, Any] = field(default_factory=dict)
    tail_bounds: tuple[tuple[int, int], ...] = ()  # where active lanes end (_split_at_tail)
    plan: KernelPlan | None = None  # the plan the source was emitted from (planning.py)
    # grid mode: the lane vector length the plan chose (KernelPlan.vector_lanes), None: default
    vector_lanes: int | None = None


_ID_OPS: dict[type[Operation], str] = {
    pto.GetGlobalIdOp: "global_id", pto.GetLocalIdOp: "local_id",
    pto.GetBlockIdOp: "block_id", pto.GetBlockDimOp: "block_dim",
    pto.GetGridDimOp: "grid_dim",
}


class KernelCodegen(NpuEmitters, SimtLoopEmitters):
    """Translate one `func.func` kernel into the source of `def run(_ctx, _args)`."""

    def __init__(self, kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool = False):
        self.kernel = kernel
        self.mode = mode
        self.instrumented = instrumented  # hooks around every op (see instruments.py)
        self.table = OpTable.of(kernel)
        self.current_id = -1
        self.one_d = one_d  # the launch is 1-D in grid and block: ids along x are ramps
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.sites: list[Site] = []
        self.constants: dict[str, Any] = {}
        self.counter = 0
        # the plan of this variant (planning.py), made in generate(): codegen emits what it
        # says and decides nothing; an empty plan is the general path
        self.an = KernelPlan()
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

    # emission ---------------------------------------------------------------------------------

    def generate(self) -> GeneratedKernel:
        block = self.kernel.body.block
        self.an = plan_kernel(self.kernel, self.mode, self.one_d, self.instrumented, self.name,
                              self.fresh)
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
        return GeneratedKernel(self.kernel.sym_name.data, self.mode, source, self.sites,
                               self.constants, self.table, self.instrumented,
                               decisions=strategies.by_kind(self.an.decisions),
                               tail_bounds=tuple(self.an.tail_bounds), plan=self.an,
                               vector_lanes=self.an.vector_lanes)

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
        if tile_vector(op) is not None:
            self.tile_vector_op(op)
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
        if op in an.ramp_cmps:
            # (ramp + base) < u  <=>  ramp < u - base: no array for the affine side is needed
            # (the bound clamped to int32: the ramp is int32, so no int64 copy of it is made);
            # block-local ids compare the same in every block: a cached mask (local_cmp); on
            # the ramp, a test that passes on every lane or on none skips the lanes (_ramp_cmp)
            x, u, sym = an.ramp_cmps[op]
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
            view = "True" if op.results[0] in self.an.views else "False"
            self.emit(f"{res} = _ctx.load_plan({self.name(plan.root)}_b, {plan.source()}, _m, "
                      f"{s}, {view})")
        elif p in self.an.local:
            self.emit(f"{res} = _ctx.load_rows({self.name(p)}_b, {self.an.affine[p]}, _m, {s})")
        elif p in self.an.affine:
            view = "True" if op.results[0] in self.an.views else "False"
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

    def plan_op(self, store: pto.StoreOp) -> None:
        """`store(p, load(q) op load(r))` through three planned views (KernelPlan.plan_ops)."""
        a, b = self.an.plan_ops[store]
        ufunc = _STORE_UFUNCS[type(store.value.owner)]
        block = store.parent_block()
        assert block is not None
        a_first = block.get_operation_index(a) < block.get_operation_index(b)
        pd, pa, pb = (self.an.planned[x] for x in (store, a, b))
        self.emit(f"_ctx.plan_op({self.name(pd.root)}_b, {pd.source()}, {ufunc}, "
                  f"{self.name(pa.root)}_b, {pa.source()}, {self.name(pb.root)}_b, "
                  f"{pb.source()}, _m, {self.site(a)}, {self.site(b)}, {self.site(store)}, "
                  f"{a_first})")

    def op_pto_store(self, op: pto.StoreOp) -> None:
        if op in self.an.row_ops:
            self.row_op(op)
            return
        if op in self.an.plan_ops:
            self.plan_op(op)
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
        # a * 1.0 is exact, so fma(a, 1.0, c) is a single correctly rounded add in the type itself
        # (for binary formats, rounding a+c through float64 first gives the same result).
        if op in self.an.fma_adds:  # planned: the addition computed into the slice
            x, y = self.an.fma_adds[op]
            self.emit(f"_ctx.store_ramp_op({self.name(op.dst)}_b, {self.an.affine[op.dst]}, "
                      f"_np.add, {self.name(x)}, {self.name(y)}, _m, {s})")
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

    # warp shuffles and votes (warp_ops.py) ------------------------------------------------------

    def _shuffle(self, op: Operation, mode: str) -> None:
        value, lane = (self.name(x) for x in op.operands)
        array = op.results[0] not in self.an.uniform
        self.emit(f"{self.name(op.results[0])} = _warp_shuffle(_ctx, {mode!r}, {value}, {lane}, "
                  f"_m, {self.site(op)}, {array})")

    def op_pto_shfl(self, op: Operation) -> None:
        self._shuffle(op, "idx")

    def op_pto_shfl_up(self, op: Operation) -> None:
        self._shuffle(op, "up")

    def op_pto_shfl_down(self, op: Operation) -> None:
        self._shuffle(op, "down")

    def op_pto_shfl_xor(self, op: Operation) -> None:
        self._shuffle(op, "xor")

    def _vote(self, op: Operation, kind: str) -> None:
        self.emit(f"{self.name(op.results[0])} = _warp_vote(_ctx, {kind!r}, "
                  f"{self.name(op.operands[0])}, _m, {self.site(op)})")

    def op_pto_ballot(self, op: Operation) -> None:
        self._vote(op, "ballot")

    def op_pto_vote_any(self, op: Operation) -> None:
        self._vote(op, "any")

    def op_pto_vote_all(self, op: Operation) -> None:
        self._vote(op, "all")

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
            if not r.uses and not self.instrumented:
                continue  # nothing reads it: no merge (instruments see every value)
            rn = self.name(r)
            if _is_address(r.type):
                self.emit(f"{rn}_b = _ctx.same_buffer({tn}_b, {fn}_b, {cond}, {saved}, "
                          f"{self.site(op)})")
                self.emit(f"{rn} = _select({cond}, {tn}, {fn})")
            elif isinstance(r.type, pto.TokenType):
                self.emit(f"{rn} = {tn} if {tn} is not None else {fn}")
            else:
                dt = self.const(dtypes.np_dtype_of(r.type))
                if self.an.decides(merge_sides.Decision):  # a side every lane took: no where()
                    self.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt}, {mt}, {mf}, "
                              f"{r in self.an.views})")
                else:
                    self.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt})")

    def windowed_branch(self, block: Block, mask: str, names: list[str]) -> None:
        """A branch of a windowed `scf.if`: its body becomes a local function of the lane
        vector, the mask and the per-lane values it uses, called on the window of lanes the
        mask keeps (`_window`: narrowed values in, widened yields out) or, when the window is
        not narrow enough, on the whole vector."""
        fn, win, res = self.fresh("_wb"), self.fresh("w"), self.fresh("r")
        inputs = [self.name(v) for v in self.an.window_inputs[block]]
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
        hoisted = self.an.hoisted.get(body, [])  # the plan's loop-invariant ops
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

    def _inline_region(self, op: Operation) -> None:
        block = op.regions[0].block
        ops = list(block.ops)
        for inner in ops[:-1]:
            self.op(inner)
        term = ops[-1]
        for value, result in zip(term.operands, op.results):
            self.transfer(self.name(result), value)

    def op_pto_pipeline(self, op: pto.PipelineOp) -> None:
        self._inline_region(op)  # stages run in program order (docs/language.md#pipelines)

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

    def tile_vector_op(self, op: Operation) -> None:
        """A tile vector instruction (`TileVector` trait): `_ctx.tile_vector` with each
        address operand's tile geometry from the trait (tile_ops.py runs it)."""
        trait = tile_vector(op)
        assert trait is not None
        tiles = trait.tiles(op, lambda v: None)
        geometry = tuple((t.rows, t.row_len, t.stride) for _, t in sorted(tiles.items())
                         if t is not None)
        addrs = ", ".join(f"({self._addr(op.operands[i])})" for i in sorted(tiles))
        scalars = [self.name(op.operands[i]) for i, role in enumerate(trait.roles)
                   if role == "value"]
        props = {k: v.data for k, v in op.properties.items() if isinstance(v, StringAttr)}
        s = self.site(op)
        name = op.name.removeprefix("pto.")
        self.tile(None, f"_ctx.tile_vector({name!r}, {geometry!r}, ({addrs},), "
                        f"{scalars[0] if scalars else None}, {props!r}, _m, {s})", s)

    def op_pto_atomic_add(self, op: pto.AtomicAddOp) -> None:
        extra = atomics.call_arguments(self.an.decision(op, atomics.Decision))  # strategies/
        self.emit(f"{self.name(op.result)} = _ctx.atomic_add({self._addr(op.ptr)}, "
                  f"{self.name(op.value)}, _m, {self.site(op)}{extra})")

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


def _int_width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else 64


def _wrap32(x: int) -> np.int32:
    if -(2**31) <= x < 2**31:  # (the common case: nothing to wrap)
        return _INT32(x)
    return np.int32((x + 2**31) % 2**32 - 2**31)


_INT32 = np.int32


def _wrap64(x: int) -> np.int64:
    return np.int64((x + 2**63) % 2**64 - 2**63)


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
        "_ramp_cmp": MethodType(lanes.ramp_compare, RunCache()),  # Executable.variant binds its own
        "_F64": np.dtype(np.float64),
        "_wrap32": _wrap32,
        "_wrap64": _wrap64,
        "_warp_shuffle": warp_ops.shuffle,
        "_warp_vote": warp_ops.vote,
    }
    namespace.update(_LOOP_NAMESPACE)
    namespace.update({f"_m_{name}": fn for name, fn in exact.MATH.items()})
    namespace.update(gen.constants)
    label = f"{mode}, instrumented" if instrumented else mode
    code = compile(gen.source, f"<pto kernel {gen.name} ({label})>", "exec")
    exec(code, namespace)
    gen.fn = namespace["run"]
    return gen
