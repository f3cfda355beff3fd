"""Emitters of block-level instructions: L1 declarations, bulk copies (with the per-block
addresses the plan decides: strategies/planned_view.py `BlockAddress`), waits, fills, mma,
tile vector instructions (their geometry from the `TileVector` trait), atomics (the `atomics`
kind's arguments) and printf. In warp mode each block-level instruction is a sync point the
scheduler runs once per block (`tile`). A part of `codegen.KernelCodegen` (`gen.tiles`)."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from pypto.backend.interpreter.codegen_regions import SYNC_TILE, CodegenAPI
from pypto.backend.interpreter.modes import WARP
from pypto.backend.interpreter.strategies import atomics
from pypto.dialects import pto
from pypto.dialects.traits import tile_vector


class TileEmitters:
    """`op_*` emitters of L1 and tile instructions (looked up by op name): a part of
    `codegen.KernelCodegen` (`gen.tiles`)."""

    def __init__(self, gen: CodegenAPI) -> None:
        self.gen = gen  # the kernel's codegen, which holds this part

    def op_pto_alloc_local(self, op: pto.AllocLocalOp) -> None:
        n = self.gen.name(op.result)
        s = self.gen.site(op)
        # keyed by op id: the static L1 layout (l1.py) places each alloc_local
        self.tile(f"{n}_b", f"_ctx.memory.alloc_local({self.gen.table.id_of(op)}, _m, {s})", s)
        self.gen.emit(f"{n} = _I64_0")

    def tile(self, target: str | None, call: str, s: int) -> None:
        """A block-level instruction: executed once per block.

        In warp mode every warp stops at it; the scheduler runs `call` once when all warps have
        arrived and sends its result back to each warp.
        """
        prefix = f"{target} = " if target else ""
        if self.gen.mode != WARP or call.startswith("_ctx.memory.alloc_local("):
            self.gen.emit(prefix + call)  # alloc_local is a static declaration, not a sync point
            return
        self.gen.emit(f"_tile_entry(_ctx, _m, {s})")
        if self.gen.instrumented:
            call = f"_ins.tile({self.gen.current_id}, _ctx, _m, lambda: {call})"
        self.gen.emit(f"{prefix}(yield ({SYNC_TILE}, {s}, lambda: {call}))")

    def addr(self, v: SSAValue) -> str:
        return f"{self.gen.name(v)}_b, {self.gen.name(v)}"

    def op_pto_async_load(self, op: pto.AsyncLoadOp) -> None:
        self.copy_op(op, "async_load")

    def op_pto_async_store(self, op: pto.AsyncStoreOp) -> None:
        self.copy_op(op, "async_store")

    def op_pto_tile_store(self, op: pto.TileStoreOp) -> None:
        self.copy_op(op, "tile_store")

    def copy_op(self, op: Operation, kind: str) -> None:
        dst, src, nbytes, rows, ss, ds = op.operands
        args = ", ".join(self.gen.name(v) for v in (nbytes, rows, ss, ds))
        target = self.gen.name(op.results[0]) if op.results else None
        s = self.gen.site(op)
        addrs = []
        per_block = self.gen.decided(op, "copy_address")  # each block's offset from the forms
        for index, v in ((0, dst), (1, src)):
            addr = per_block.copy_address(self.gen, op, index) if per_block is not None else None
            addrs.append(addr if addr is not None else self.addr(v))
        self.tile(target, f"_ctx.memory.copy({kind!r}, {addrs[0]}, {addrs[1]}, {args}, _m, {s})", s)

    def op_pto_wait(self, op: pto.WaitOp) -> None:
        s = self.gen.site(op)
        self.tile(None, f"_ctx.memory.wait({self.gen.name(op.token)}, _m, {s})", s)

    def op_pto_wait_all(self, op: pto.WaitAllOp) -> None:
        s = self.gen.site(op)
        self.tile(None, f"_ctx.memory.wait_all(_m, {s})", s)

    def op_pto_fill(self, op: pto.FillOp) -> None:
        s = self.gen.site(op)
        self.tile(None, f"_ctx.tiles.fill({self.addr(op.dst)}, {self.gen.name(op.value)}, "
                        f"{self.gen.name(op.count)}, _m, {s})", s)

    def op_pto_mma(self, op: pto.MmaOp) -> None:
        m, n, k = op.shape
        s = self.gen.site(op)
        self.tile(None, f"_ctx.tiles.mma({self.addr(op.c)}, {self.addr(op.a)}, {self.addr(op.b)}, "
                        f"{m}, {n}, {k}, _m, {s})", s)

    def tile_vector_op(self, op: Operation) -> None:
        """A tile vector instruction (`TileVector` trait): `_ctx.tile_vector` with each
        address operand's tile geometry from the trait (tile_ops.py runs it)."""
        trait = tile_vector(op)
        assert trait is not None
        tiles = trait.tiles(op, lambda v: None)
        geometry = tuple((t.rows, t.row_len, t.stride) for _, t in sorted(tiles.items())
                         if t is not None)
        addrs = ", ".join(f"({self.addr(op.operands[i])})" for i in sorted(tiles))
        scalars = [self.gen.name(op.operands[i]) for i, role in enumerate(trait.roles)
                   if role == "value"]
        props = {k: v.data for k, v in op.properties.items() if isinstance(v, StringAttr)}
        s = self.gen.site(op)
        name = op.name.removeprefix("pto.")
        self.tile(None, f"_ctx.tiles.tile_vector({name!r}, {geometry!r}, ({addrs},), "
                        f"{scalars[0] if scalars else None}, {props!r}, _m, {s})", s)

    def op_pto_atomic_add(self, op: pto.AtomicAddOp) -> None:
        extra = atomics.call_arguments(self.gen.an.decision(op, atomics.Decision))  # strategies/
        self.gen.emit(f"{self.gen.name(op.result)} = _ctx.lanes.atomic_add({self.addr(op.ptr)}, "
                      f"{self.gen.name(op.value)}, _m, {self.gen.site(op)}{extra})")

    def atomic_rmw(self, op: Operation, kind: str) -> None:
        """`pto.atomic_<kind>`: its operands are the address, [the compared value,] the value."""
        ptr, *rest = op.operands
        compare = self.gen.name(rest[0]) if len(rest) == 2 else None
        gen = self.gen
        gen.emit(f"{gen.name(op.results[0])} = _ctx.lanes.atomic_rmw({kind!r}, {self.addr(ptr)}, "
                 f"{gen.name(rest[-1])}, {compare}, _m, {gen.site(op)})")

    def op_pto_printf(self, op: pto.PrintfOp) -> None:
        values = ", ".join(self.gen.name(v) for v in op.values)
        tail = "," if op.values else ""
        self.gen.emit(f"_printf(_ctx, {op.format.data!r}, ({values}{tail}), _m, "
                      f"{self.gen.site(op)})")
