"""Emitters for the `npu` dialect: the interpreter runs firmware-level IR as it runs pto IR.

A part of `KernelCodegen` (`gen.npu`; the codegen owns naming, sites and the plan, and holds the
pto emitters these reuse: `gen.tiles`, `gen.regions`). Each npu op means what the pto
instruction it came from means, plus what the firmware makes visible:
- a lane access staged through an L1 slot also writes the lane's element of the slot (lane k of
  the block -> element k), so the slot's contents are observable (the debugger's `inspect_l1`
  after a LOAD); the value itself is the one loaded or stored, so results are bit-identical;
- `npu.set_flag` has no effect (copies complete at their wait in the interpreter); a
  `npu.wait_flag` is the `pto.wait` of its token;
- `npu.load_mma` is its copy, the wait for it and the MMA, in that order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, FloatAttr
from xdsl.ir import SSAValue

from pypto import dtypes

if TYPE_CHECKING:
    from pypto.backend.interpreter.codegen_regions import CodegenAPI
    from pypto.dialects import npu


def _is_const(v: SSAValue, value: float) -> bool:
    """Is `v` the float constant `value` (as KernelCodegen's own test for pto.fma)?"""
    owner = v.owner
    return (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr)
            and owner.value.value.data == value)


def stage(ctx: Any, slot: Any, value: Any, mask: Any, site: int) -> None:
    """Lane k of each block writes `value` to element k of `slot` (its staging slot).

    When the lane vector is whole blocks in order and nobody watches the slot (no race or
    initialisation tracking, no copy in flight or lazy load pending: tiles.py), every block's
    slot is one row of a (blocks, lanes) view and the write is one NumPy copy; otherwise it is
    an ordinary checked lane store.
    """
    lanes = ctx.block_lanes
    if (not slot.watched() and not ctx.inflight and slot.count == lanes
            and ctx.count == slot.blocks * lanes and ctx.first_lane % lanes == 0):
        rows = slot.grid()
        if np.ndim(value) and np.size(value) == ctx.count:
            value = np.reshape(value, rows.shape)
        if mask is None:
            rows[...] = value
        else:
            np.copyto(rows, value, where=np.reshape(mask, rows.shape), casting="unsafe")
        return
    bx, by, _ = ctx.block
    index = ctx.local_id(0)
    if by * ctx.block[2] > 1:
        index = index + bx * (ctx.local_id(1) + by * ctx.local_id(2))
    ctx.lanes.store(slot, index, value, mask, site)


class NpuEmitters:
    """`op_npu_*` emitters (looked up by op name, as the pto ones): a part of
    `codegen.KernelCodegen` (`gen.npu`)."""

    def __init__(self, gen: CodegenAPI) -> None:
        self.gen = gen  # the kernel's codegen, which holds this part

    def _stage(self, slot: SSAValue | None, value: str, s: int) -> None:
        if slot is not None:
            helper = self.gen.const(stage)
            self.gen.emit(f"{helper}(_ctx, {self.gen.name(slot)}_b, {value}, _m, {s})")

    def op_npu_load(self, op: npu.LoadOp) -> None:
        s = self.gen.site(op)
        p = op.ptr
        res = self.gen.name(op.results[0])
        self.gen.emit(f"{res} = {self.gen.load_expr(op, p, s)}")
        self._stage(op.slot, res, s)

    def op_npu_store(self, op: npu.StoreOp) -> None:
        s = self.gen.site(op)
        value = self.gen.name(op.value)
        self._stage(op.slot, value, s)
        self.gen.store_to(op, op.ptr, value, s)

    def op_npu_fma(self, op: npu.FmaOp) -> None:
        s = self.gen.site(op)
        a, b, c = op.a, op.b, op.c
        # the same expressions as pto.fma (see KernelCodegen.op_pto_fma), bit for bit
        if _is_const(b, 1.0):
            value = f"({self.gen.name(a)} + {self.gen.name(c)})"
        elif _is_const(a, 1.0):
            value = f"({self.gen.name(b)} + {self.gen.name(c)})"
        elif isinstance(a.type, AnyFloat):
            dt = self.gen.const(dtypes.np_dtype_of(a.type))
            value = f"_fma({self.gen.name(a)}, {self.gen.name(b)}, {self.gen.name(c)}, {dt})"
        else:
            value = f"({self.gen.name(a)} * {self.gen.name(b)} + {self.gen.name(c)})"
        if op.slot is not None:
            tmp = self.gen.fresh("fv")
            self.gen.emit(f"{tmp} = {value}")
            value = tmp
            self._stage(op.slot, value, s)
        self.gen.store_to(op, op.dst, value, s)

    def op_npu_copy_in(self, op: npu.CopyInOp) -> None:
        self.gen.tiles.copy_op(op, "async_load")

    def op_npu_copy_out(self, op: npu.CopyOutOp) -> None:
        self.gen.tiles.copy_op(op, "async_store")

    def op_npu_set_flag(self, op: npu.SetFlagOp) -> None:
        # nothing to do (the copy completes at its wait_flag), but it is a block-level
        # instruction like the copy it follows, seen by instruments as such
        self.gen.tiles.tile(None, "None", self.gen.site(op))

    def op_npu_wait_flag(self, op: npu.WaitFlagOp) -> None:
        self.gen.tiles.op_pto_wait(op)

    def op_npu_wait_flag_all(self, op: npu.WaitFlagAllOp) -> None:
        self.gen.tiles.op_pto_wait_all(op)

    def op_npu_pipe_barrier(self, op: npu.PipeBarrierOp) -> None:
        self.gen.regions.op_pto_barrier_block(op)

    def op_npu_warp_barrier(self, op: npu.WarpBarrierOp) -> None:
        self.gen.regions.op_pto_barrier(op)

    def op_npu_mma(self, op: npu.MmaOp) -> None:
        self.gen.tiles.op_pto_mma(op)

    def op_npu_load_mma(self, op: npu.LoadMmaOp) -> None:
        s = self.gen.site(op)
        args = ", ".join(self.gen.name(v) for v in (op.nbytes, op.rows, op.src_stride,
                                                    op.dst_stride))
        addr = self.gen.tiles.addr
        copy = (f"_ctx.memory.copy('async_load', {addr(op.loaded)}, {addr(op.src)}, {args}, "
                f"_m, {s})")
        m, n, k = op.shape
        mma = f"_ctx.tiles.mma({addr(op.c)}, {addr(op.a)}, {addr(op.b)}, {m}, {n}, {k}, _m, {s})"
        # one block-level instruction: the copy, the wait for it, the MMA, in that order
        self.gen.tiles.tile(None, f"(_ctx.memory.wait({copy}, _m, {s}), {mma})", s)
