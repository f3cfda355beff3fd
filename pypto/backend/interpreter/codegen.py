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

import re

from dataclasses import dataclass, field
from types import MethodType
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from pypto import dtypes, exact
from pypto.analysis.uniformity import walk
from pypto.backend.interpreter.codegen_loops import NAMESPACE as _LOOP_NAMESPACE
from pypto.backend.interpreter.codegen_loops import SimtLoopEmitters, _is_address
from pypto.backend.interpreter.codegen_npu import NpuEmitters
from pypto.backend.interpreter.codegen_regions import (  # noqa: F401 (re-exported)
    SYNC_BARRIER,
    SYNC_TILE,
    RegionEmitters,
    UnsupportedOp,
)
from pypto.backend.interpreter.codegen_tiles import TileEmitters
from pypto.backend.interpreter.codegen_warp import WarpEmitters
from pypto.backend.interpreter.instruments import OpTable
from pypto.diagnostics import call_sites
from pypto.diagnostics import op_location as location_of
from pypto.backend.interpreter import lane_ops, lanes, warp_ops, windows
from pypto.backend.interpreter.optables import (
    _ARITH_BINARY,
    _CMP,
    _MATH_UNARY,
)
from pypto.backend.interpreter import strategies
from pypto.backend.interpreter.caches import RunCache
from pypto.backend.interpreter.strategies import base
from pypto.backend.interpreter.strategies import tail1d
from pypto.backend.interpreter.planning import (  # the modes: also imported from here
    BATCH,
    BLOCK,
    GRID,
    WARP,
    KernelPlan,
    plan_kernel,
)
from pypto.backend.interpreter.lanes import Site
from pypto.dialects import npu, pto
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import atomic_update, elementwise_reference, tile_vector



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
    tail_bounds: tuple[tail1d.Decision, ...] = ()  # where active lanes end (tail1d.cut)
    plan: KernelPlan | None = None  # the plan the source was emitted from (planning.py)
    # grid mode: the lane vector length the plan chose (KernelPlan.vector_lanes), None: default
    vector_lanes: int | None = None


_ID_OPS: dict[type[Operation], str] = {
    pto.GetGlobalIdOp: "global_id", pto.GetLocalIdOp: "local_id",
    pto.GetBlockIdOp: "block_id", pto.GetBlockDimOp: "block_dim",
    pto.GetGridDimOp: "grid_dim",
}


class KernelCodegen:
    """Translate one `func.func` kernel into the source of `def run(_ctx, _args)`.

    It owns naming, sites, constants, the plan and the lines emitted, and the emitters of
    the ops it holds as parts (`regions`, `tiles`, `npu`, `loops`, `warps`; their `op_<name>`
    methods are looked up by op name, as its own are): see codegen_regions.CodegenAPI for what
    they use of it."""

    def __init__(self, kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool = False,
                 fast_paths: bool | None = None):
        self.kernel = kernel
        self.mode = mode
        self.instrumented = instrumented  # hooks around every op (see instruments.py)
        self.fast_paths = fast_paths  # None: the process's switch (fastpaths.FAST_PATHS)
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
        self.windows = 0  # depth of lane windows being emitted (window.Decision.emit_side)
        self.regions = RegionEmitters(self)
        self.tiles = TileEmitters(self)
        self.npu = NpuEmitters(self)
        self.loops = SimtLoopEmitters(self)
        self.warps = WarpEmitters(self)
        # `op_<name>` emitters by name: the parts', then this class's own
        self.handlers: dict[str, Any] = {
            name: getattr(part, name)
            for part in (self.regions, self.tiles, self.npu, self.loops, self.warps)
            for name in dir(type(part)) if name.startswith("op_")}

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
        self.sites.append(Site(op.name.removeprefix("pto."), location_of(op),
                               tuple(c.text() for c in call_sites(op))))
        return len(self.sites) - 1

    def const(self, value: Any) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    # emission ---------------------------------------------------------------------------------

    def generate(self) -> GeneratedKernel:
        block = self.kernel.body.block
        self.an = plan_kernel(self.kernel, self.mode, self.one_d, self.instrumented, self.name,
                              self.fresh, self.fast_paths)
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
        self.table.affine = self.an.affine
        self.table.local = self.an.local
        return GeneratedKernel(self.kernel.sym_name.data, self.mode, source, self.sites,
                               self.constants, self.table, self.instrumented,
                               decisions=strategies.by_kind(self.an.decisions),
                               tail_bounds=self.an.tail_bounds, plan=self.an,
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
        value = self.an.value(r)
        if value is not None and not value.array:
            pattern = "_ctx.local_id(0)" if value.local else "_ctx.ramp"
            return f"({pattern} + {value.base})"
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

    def decided(self, op: Operation, method: str) -> Any:
        """The first decision of the plan for `op` that emits `method` (strategies/base.py:
        `emit`, `load`, `store`, `compare`, `copy_address`, `emit_side`), or None."""
        for d in self.an.decisions.get(op, ()):
            if hasattr(d, method):
                return d
        return None

    def base(self, v: SSAValue) -> str | None:
        """The variable holding lane-affine `v`'s scalar base (the ramp kind's `Value`), or
        None; inside a lane window only block-local values are affine."""
        value = self.an.value(v)
        if value is None or self.windows and not value.local:
            return None
        return value.base

    def dispatch(self, op: Operation) -> None:
        found = self.an.decisions.get(op)
        if found:  # the plan's decisions (strategies/): one that emits the whole op wins
            if any(isinstance(d, base.NoCode) for d in found):
                return  # computed by the access after it, or by a planned access's forms
            d = self.decided(op, "emit")
            if d is not None:
                d.emit(self, op)
                return
        key = "op_" + op.name.replace(".", "_")
        handler = self.handlers.get(key) or getattr(self, key, None)
        if handler is not None:
            handler(op)
            return
        update = atomic_update(op)
        if update is not None:  # the atomics besides atomic_add (docs/language.md#atomics)
            self.tiles.atomic_rmw(op, update.kind)
            return
        if tile_vector(op) is not None:
            self.tiles.tile_vector_op(op)
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

    def op_id(self, op: Operation) -> None:
        assert isinstance(op, pto._DimIdOp)
        res = op.results[0]
        kind = _ID_OPS[type(op)]
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
        d = self.decided(op, "compare")  # on the ramp, rows or the box (strategies/)
        if d is not None:
            self.emit(f"{self.name(op.results[0])} = {d.compare(self, op)}")
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
            self.emit(f"{self.name(op.results[0])}_b = _same_buffer(_ctx, {a}_b, {b}_b, {c}, _m, "
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
            self.emit(f"{self.name(op.results[0])} = _int_div(_ctx, {self.const(fn)}, {a}, {b}, "
                      f"_m, {self.site(op)})")
        else:
            self.emit(f"{self.name(op.results[0])} = {self.const(fn)}({a}, {b})")

    def op_math_ipowi(self, op: math.IPowIOp) -> None:
        a, b = (self.name(x) for x in op.operands)
        s = self.site(op)
        self.emit(f"{self.name(op.results[0])} = _int_pow(_ctx, {a}, {b}, _m, {s})")

    def op_pto_addptr(self, op: pto.AddPtrOp) -> None:
        p, off = op.ptr, op.offset
        res = op.results[0]
        pn, on, rn = self.name(p), self.name(off), self.name(res)
        if self.reuse(op):
            return
        self.emit(f"{rn}_b = {pn}_b")
        self.emit(f"{rn} = _addptr({pn}, {on})")

    def op_arith_addi(self, op: arith.AddiOp) -> None:
        self._affine_arith(op, "+")

    def op_arith_subi(self, op: arith.SubiOp) -> None:
        self._affine_arith(op, "-")

    def _affine_arith(self, op: Operation, sym: str) -> None:
        res = op.results[0]
        a, b = op.operands
        if self.reuse(op):
            return
        self.emit(f"{self.name(res)} = ({self.name(a)} {sym} {self.name(b)})")

    def op_pto_load(self, op: pto.LoadOp) -> None:
        s = self.site(op)
        res = self.name(op.results[0])
        self.emit(f"{res} = {self.load_expr(op, op.ptr, s)}")

    def load_expr(self, op: Operation, p: SSAValue, s: int) -> str:
        """A lane load's value: as its access kind says (a ramp, rows, a planned view), else
        the general path's gather."""
        d = self.decided(op, "load")
        if d is not None:
            return d.load(self, op, s)  # type: ignore[no-any-return]
        return f"_ctx.lanes.load({self.name(p)}_b, {self.name(p)}, _m, {s})"

    def store_to(self, op: Operation, ptr: SSAValue, value_expr: str, s: int) -> None:
        """A lane store (or fma) of `value_expr`: as its access kind says, else the general
        path's scatter."""
        d = self.decided(op, "store")
        if d is not None:
            self.emit(d.store(self, op, value_expr, s))
            return
        self.emit(f"_ctx.lanes.store({self.name(ptr)}_b, {self.name(ptr)}, {value_expr}, _m, {s})")

    def op_pto_store(self, op: pto.StoreOp) -> None:
        self.store_to(op, op.ptr, self.name(op.value), self.site(op))

    def op_pto_fma(self, op: pto.FmaOp) -> None:
        s = self.site(op)
        a, b, c = op.a, op.b, op.c
        t = a.type
        # a * 1.0 is exact, so fma(a, 1.0, c) is a single correctly rounded add in the type itself
        # (for binary formats, rounding a+c through float64 first gives the same result).
        if _is_const(b, 1.0):
            value = f"({self.name(a)} + {self.name(c)})"
        elif _is_const(a, 1.0):
            value = f"({self.name(b)} + {self.name(c)})"
        elif isinstance(t, AnyFloat):
            dt = self.const(dtypes.np_dtype_of(t))
            value = f"_fma({self.name(a)}, {self.name(b)}, {self.name(c)}, {dt})"
        else:
            value = f"({self.name(a)} * {self.name(b)} + {self.name(c)})"
        self.store_to(op, op.dst, value, s)

    def op_math_rsqrt(self, op: math.RsqrtOp) -> None:
        x = self.name(op.operands[0])
        dt = self.const(dtypes.np_dtype_of(op.results[0].type))
        self.emit(f"{self.name(op.results[0])} = _cast(1.0 / _np.sqrt(_cast({x}, _F64)), {dt})")

    def op_arith_fptosi(self, op: arith.FPToSIOp) -> None:
        dt = self.const(dtypes.np_dtype_of(op.results[0].type))
        self.emit(f"{self.name(op.results[0])} = _float_to_int(_ctx, {self.name(op.operands[0])}, "
                  f"{dt}, _m, {self.site(op)})")


def _int_width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else 64


_STRATEGY_CALL = re.compile(r"\b(_s_[A-Za-z0-9_]+)\.([A-Za-z_][A-Za-z0-9_]*)\(")


def _bind_strategy_call(match: re.Match[str], namespace: dict[str, Any]) -> str:
    """`_s_MODULE.FUNCTION(` -> `_s_MODULE__FUNCTION(`, that global added to `namespace`."""
    module, function = match[1], match[2]
    name = f"{module}__{function}"
    if name not in namespace:
        namespace[name] = getattr(namespace[module], function)
    return f"{name}("


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


def generate(kernel: func.FuncOp, mode: str, one_d: bool, instrumented: bool = False,
             fast_paths: bool | None = None) -> GeneratedKernel:
    """Translate `kernel` and compile the source to a Python function (`.fn`); `fast_paths`:
    plan the fast paths or not (None: the process's `FAST_PATHS` switch)."""
    gen = KernelCodegen(kernel, mode, one_d, instrumented, fast_paths).generate()
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
    # lane instructions with failure modes, functions of the lane context (lane_ops.py)
    namespace.update({f"_{name}": getattr(lane_ops, name) for name in lane_ops.GENERATED})
    namespace.update(_LOOP_NAMESPACE)
    # every strategy module, for its emission's calls of its run-time part (`_s_ramp.load`)
    namespace.update({f"_s_{s.__name__.rsplit('.', 1)[1]}": s for s in strategies.REGISTRY})
    namespace.update({f"_m_{name}": fn for name, fn in exact.MATH.items()})
    namespace.update(gen.constants)
    label = f"{mode}, instrumented" if instrumented else mode
    # `_s_ramp.load_ramp(...)` called as one global, `_s_ramp__load_ramp(...)`: a small launch
    # makes a few such calls, and the module attribute's lookup was ~30 ns of each
    source = _STRATEGY_CALL.sub(lambda m: _bind_strategy_call(m, namespace), gen.source)
    code = compile(source, f"<pto kernel {gen.name} ({label})>", "exec")
    exec(code, namespace)
    gen.fn = namespace["run"]
    return gen
