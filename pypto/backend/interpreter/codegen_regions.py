"""Emitters of structure: barriers, returns, branches (masks, the merge of their results, a
windowed branch's side: strategies/window.py), `scf.for` (with the loop-invariant ops the plan
hoists: strategies/hoist.py) and the inlined regions of pipelines and stages. A part of
`codegen.KernelCodegen` (`gen.regions`), as the tile, npu and SIMT-loop emitters are; `CodegenAPI`
is what they use of it."""

from __future__ import annotations

from typing import Any, Protocol

from xdsl.dialects import func, scf
from xdsl.ir import Attribute, Operation, SSAValue

from pypto import dtypes
from pypto.backend.interpreter.codegen_loops import _is_address
from pypto.backend.interpreter.modes import WARP
from pypto.backend.interpreter.strategies import alias, hoist, merge_sides
from pypto.dialects import pto

SYNC_BARRIER = 0
SYNC_TILE = 1


class UnsupportedOp(Exception):
    """The interpreter has no lowering for an op (reported as a VerificationError upstream)."""


class CodegenAPI(Protocol):
    """What the emitter parts (RegionEmitters, TileEmitters, NpuEmitters, SimtLoopEmitters,
    WarpEmitters) use of the `codegen.KernelCodegen` that holds them (`gen`): its state, its
    core emission and the other parts (`gen.regions`, `gen.tiles`, `gen.npu`, `gen.loops`,
    `gen.warps`)."""

    an: Any
    mode: str
    one_d: bool
    instrumented: bool
    current_id: int
    indent: int
    cse: list[dict[tuple[Any, ...], str]]
    table: Any
    regions: RegionEmitters
    tiles: Any  # codegen_tiles.TileEmitters
    npu: Any  # codegen_npu.NpuEmitters
    loops: Any  # codegen_loops.SimtLoopEmitters
    warps: Any  # codegen_warp.WarpEmitters

    def emit(self, line: str) -> None: ...

    def name(self, v: SSAValue) -> str: ...

    def site(self, op: Any) -> int: ...

    def fresh(self, prefix: str = "t") -> str: ...

    def const(self, value: Any) -> str: ...

    def op(self, op: Operation) -> None: ...

    def decided(self, op: Operation, method: str) -> Any: ...

    def load_expr(self, op: Any, p: SSAValue, s: int) -> str: ...

    def store_to(self, op: Any, ptr: SSAValue, value_expr: str, s: int) -> None: ...


class RegionEmitters:
    """`op_*` emitters of barriers, branches, loops and regions (looked up by op name): a part
    of `codegen.KernelCodegen` (`gen.regions`)."""

    def __init__(self, gen: CodegenAPI) -> None:
        self.gen = gen  # the kernel's codegen, which holds this part

    def op_pto_barrier(self, op: pto.BarrierOp) -> None:
        self.gen.emit(f"_ctx.barrier_warp(_m, {self.gen.site(op)})")

    def op_pto_barrier_block(self, op: pto.BarrierBlockOp) -> None:
        s = self.gen.site(op)
        self.gen.emit(f"_barrier_block(_ctx, _m, {s})")
        if self.gen.mode == WARP:
            self.gen.emit(f"yield ({SYNC_BARRIER}, {s}, None)")

    def op_func_return(self, op: func.ReturnOp) -> None:
        self.gen.emit("return None")

    def op_scf_yield(self, op: scf.YieldOp) -> None:
        raise UnsupportedOp("scf.yield outside of scf.if")  # handled by op_scf_if

    def op_scf_if(self, op: scf.IfOp) -> None:
        cond = self.gen.name(op.cond)
        saved = self.gen.fresh("ms")
        mt, mf = self.gen.fresh("mt"), self.gen.fresh("mf")
        results = list(op.results)
        then_names = [self.gen.fresh("yt") for _ in results]
        else_names = [self.gen.fresh("yf") for _ in results]
        self.gen.emit(f"{saved} = _m")
        self.gen.emit(f"{mt} = _mask_and(_m, {cond})")
        if results or (op.false_region.blocks and len(op.false_region.block.ops) > 1):
            self.gen.emit(f"{mf} = _mask_andnot(_m, {cond})")
        for r, tn, fn in zip(results, then_names, else_names):
            zero = self.zero_of(r.type)
            self.gen.emit(f"{tn} = {fn} = {zero}")
            if _is_address(r.type):
                self.gen.emit(f"{tn}_b = {fn}_b = None")
        for region_block, mask, names in ((op.true_region.block, mt, then_names),
                                          (op.false_region.blocks[0] if op.false_region.blocks
                                           else None, mf, else_names)):
            if region_block is None:
                continue
            body = list(region_block.ops)
            if len(body) == 1 and not names:
                continue  # an empty branch: nothing to run
            window = self.gen.decided(op, "emit_side")  # on a lane window (strategies/window.py)
            if window is not None:
                window.emit_side(self.gen, op, region_block, mask, names)
                continue
            self.gen.emit(f"if {mask} is not False:")
            self.gen.indent += 1
            self.gen.emit(f"_m = {mask}")
            self.gen.cse.append({})
            for inner in body[:-1]:
                self.gen.op(inner)
            term = body[-1] if body else None
            if isinstance(term, scf.YieldOp):
                for value, n in zip(term.operands, names):
                    self.transfer(n, value)
            elif term is not None:
                self.gen.op(term)
            self.gen.cse.pop()
            self.gen.emit("pass")
            self.gen.indent -= 1
        self.gen.emit(f"_m = {saved}")
        for r, tn, fn in zip(results, then_names, else_names):
            if not r.uses and not self.gen.instrumented:
                continue  # nothing reads it: no merge (instruments see every value)
            rn = self.gen.name(r)
            if _is_address(r.type):
                self.gen.emit(f"{rn}_b = _same_buffer(_ctx, {tn}_b, {fn}_b, {cond}, {saved}, "
                              f"{self.gen.site(op)})")
                self.gen.emit(f"{rn} = _select({cond}, {tn}, {fn})")
            elif isinstance(r.type, pto.TokenType):
                self.gen.emit(f"{rn} = {tn} if {tn} is not None else {fn}")
            else:
                dt = self.gen.const(dtypes.np_dtype_of(r.type))
                if self.gen.an.decides(merge_sides.Decision):  # a side every lane took: no where()
                    views = self.gen.an.decision(op, alias.Decision)  # may it be a view?
                    view = views is not None and views.views[r.index]
                    self.gen.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt}, {mt}, {mf}, {view})")
                else:
                    self.gen.emit(f"{rn} = _merge({cond}, {tn}, {fn}, {dt})")

    def zero_of(self, t: Attribute) -> str:
        if _is_address(t):
            return "_I64_0"
        if isinstance(t, pto.TokenType):
            return "None"
        return self.gen.const(dtypes.np_dtype_of(t).type(0))

    def transfer(self, dst: str, src: SSAValue) -> None:
        """`dst = src` for a value of any type (addresses carry their buffer in `_b`)."""
        self.gen.emit(f"{dst} = {self.gen.name(src)}")
        if _is_address(src.type):
            self.gen.emit(f"{dst}_b = {self.gen.name(src)}_b")

    # loops and regions -----------------------------------------------------------------------

    def op_scf_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv, *iter_args = body.args
        for arg, init in zip(iter_args, op.iter_args):
            self.transfer(self.gen.name(arg), init)
        lb, ub, step = (self.gen.name(v) for v in (op.lb, op.ub, op.step))
        motion = self.gen.an.decision(op, hoist.Decision)  # the plan's loop-invariant ops
        hoisted = list(motion.ops) if motion is not None else []
        for inner in hoisted:  # computed once, before the loop
            self.gen.op(inner)
        counter = self.gen.fresh("k")
        itype = self.gen.const(dtypes.np_dtype_of(iv.type).type)
        s = self.gen.site(op)
        self.gen.emit(f"for {counter} in _loop_range(_ctx, {lb}, {ub}, {step}, {s}):")
        self.gen.indent += 1
        self.gen.emit(f"{self.gen.name(iv)} = {itype}({counter})")
        ops = list(body.ops)
        self.gen.cse.append({})
        for inner in ops[:-1]:
            if inner not in hoisted:
                self.gen.op(inner)
        self.gen.loops.yield_into(ops[-1], iter_args)
        self.gen.cse.pop()
        self.gen.emit("pass")
        self.gen.indent -= 1
        for arg, result in zip(iter_args, op.results):
            self.transfer(self.gen.name(result), arg)

    def _inline_region(self, op: Operation) -> None:
        block = op.regions[0].block
        ops = list(block.ops)
        for inner in ops[:-1]:
            self.gen.op(inner)
        term = ops[-1]
        for value, result in zip(term.operands, op.results):
            self.transfer(self.gen.name(result), value)

    def op_pto_pipeline(self, op: pto.PipelineOp) -> None:
        self._inline_region(op)  # stages run in program order (docs/language.md#pipelines)

    def op_pto_stage(self, op: pto.StageOp) -> None:
        self._inline_region(op)
